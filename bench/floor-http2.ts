#!/usr/bin/env node
// The transport floor: the same no-op as floor.ts (the SDK's codec, its `to(req)`
// answer), served straight on node:http2 with gRPC's framing instead of grpc-js.
// Beside floor.ts it shows what grpc-js itself costs per call (issue 31: about
// 55 µs of server CPU per call was measured before this was in the bench).
//
// It speaks only what the bench needs: unary RunFunction (v1 and v1beta1, same
// messages), uncompressed, plaintext. Anything else is answered with a gRPC
// status, never a hang: an unknown method UNIMPLEMENTED, a compressed or
// malformed message INTERNAL.
//
//   node dist/bench/floor-http2.js --insecure --address 127.0.0.1:9443
import { createServer, constants, type ServerHttp2Stream } from 'node:http2';
import { RunFunctionRequest, RunFunctionResponse, to } from '@crossplane-org/function-sdk-typescript';

const METHODS = new Set([
  '/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction',
  '/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction',
]);
const GRPC = { OK: '0', INTERNAL: '13', UNIMPLEMENTED: '12' } as const;

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** A call that ends with a status and no message (gRPC's "trailers-only" answer). */
function refuse(stream: ServerHttp2Stream, code: string, message: string): void {
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': code, 'grpc-message': encodeURI(message) },
    { endStream: true },
  );
}

/** One length-prefixed message: a flag byte (0: not compressed), four bytes of length, the bytes. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

function answer(stream: ServerHttp2Stream, body: Buffer): void {
  if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
    refuse(stream, GRPC.INTERNAL, 'expected one uncompressed message');
    return;
  }
  let rsp: Uint8Array;
  try {
    rsp = RunFunctionResponse.encode(to(RunFunctionRequest.decode(body.subarray(5)))).finish();
  } catch (e) {
    refuse(stream, GRPC.INTERNAL, `cannot decode the request: ${(e as Error).message}`);
    return;
  }
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': GRPC.OK }));
  stream.end(frame(rsp));
}

const address = argValue('--address') ?? '0.0.0.0:9443';
if (!process.argv.includes('--insecure')) {
  process.stderr.write('floor-http2 serves plaintext only: pass --insecure\n');
  process.exit(2);
}
const at = address.lastIndexOf(':');
const server = createServer({ maxSessionMemory: 64 });
server.on('stream', (stream, headers) => {
  if (headers[constants.HTTP2_HEADER_METHOD] !== 'POST' || !METHODS.has(String(headers[':path']))) {
    refuse(stream, GRPC.UNIMPLEMENTED, `unknown method ${String(headers[':path'])}`);
    return;
  }
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => answer(stream, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
  stream.on('error', () => stream.destroy());
});
server.listen(Number(address.slice(at + 1)), address.slice(0, at), () => {
  process.stdout.write(`floor-http2 listening on ${address}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
