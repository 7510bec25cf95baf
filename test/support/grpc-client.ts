// A RunFunction client over the wire, as Crossplane dials a function.
import * as grpc from '@grpc/grpc-js';
import {
  FunctionRunnerServiceService,
  type RunFunctionRequest,
  type RunFunctionResponse,
} from '@crossplane-org/function-sdk-typescript';

const Client = grpc.makeGenericClientConstructor(FunctionRunnerServiceService, 'FunctionRunnerService');

export interface FunctionClient {
  run(req: RunFunctionRequest, timeoutMs?: number): Promise<RunFunctionResponse>;
  close(): void;
}

export function dial(
  target: string,
  creds: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): FunctionClient {
  const client = new Client(target, creds) as unknown as grpc.Client & {
    runFunction(
      req: RunFunctionRequest,
      meta: grpc.Metadata,
      opts: grpc.CallOptions,
      cb: (err: grpc.ServiceError | null, rsp: RunFunctionResponse) => void,
    ): void;
  };
  return {
    run(req, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        client.runFunction(req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, rsp) =>
          err ? reject(err) : resolve(rsp),
        );
      });
    },
    close: () => client.close(),
  };
}
