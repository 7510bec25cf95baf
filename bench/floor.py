"""The benchmark's Python floor: a no-op function on crossplane-function-sdk-python.

It answers every call with the desired state it was given (response.to),
served by the SDK's own runtime.serve, so what it costs is what the Python
SDK, grpcio and protobuf cost by themselves. Installed into
.cache/python-fn-venv by scripts/install-bench-anchors.sh.

    python bench/floor.py [--insecure | --tls-server-certs-dir DIR] [--address HOST:PORT]
"""

import argparse

from crossplane.function import response, runtime
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1


class NoOp(grpcv1.FunctionRunnerServiceServicer):
    async def RunFunction(self, req, _context):  # noqa: N802 (the gRPC method's name)
        return response.to(req)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--address", default="0.0.0.0:9443")
    p.add_argument("--insecure", action="store_true")
    p.add_argument("--tls-server-certs-dir", default=None)
    a = p.parse_args()
    runtime.serve(
        NoOp(),
        a.address,
        creds=runtime.load_credentials(a.tls_server_certs_dir) if a.tls_server_certs_dir else None,
        insecure=a.insecure,
        options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)],
    )


if __name__ == "__main__":
    main()
