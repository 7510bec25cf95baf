// Clients for reliability tests: RunFunction with the SDK's own encoding (and
// receive limits a test chooses), the same call with raw bytes on the wire
// (for requests no well-behaved client could encode), and a bounded pool to
// keep many calls in flight at once.
import * as grpc from '@grpc/grpc-js';
import {
  FunctionRunnerServiceService,
  RunFunctionRequest,
  RunFunctionResponse,
} from '@crossplane-org/function-sdk-typescript';
import type { FunctionProcess } from './function-process.js';

const METHOD = FunctionRunnerServiceService.runFunction.path;

/** What a call came back with: a response, or the gRPC status it failed with. */
export type Outcome = { ok: true; rsp: RunFunctionResponse } | { ok: false; code: grpc.status; details: string };

export interface WireClient {
  /** RunFunction, encoded by the SDK as Crossplane's Go client would encode the same message. */
  run(req: RunFunctionRequest, timeoutMs?: number): Promise<Outcome>;
  /** RunFunction with these exact bytes as the request message. */
  runRaw(bytes: Uint8Array, timeoutMs?: number): Promise<Outcome>;
  close(): void;
}

export interface DialOptions {
  credentials?: grpc.ChannelCredentials;
  /** The client's own receive bound; large answers need more than grpc-js's 4 MiB default. */
  maxReceiveBytes?: number;
}

/** One channel (one HTTP/2 connection) to the function. */
export function dialWire(target: string, opts: DialOptions = {}): WireClient {
  const client = new grpc.Client(target, opts.credentials ?? grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': opts.maxReceiveBytes ?? 64 * 1024 * 1024,
    'grpc.max_send_message_length': -1,
  });
  const call = <T>(payload: T, serialize: (v: T) => Buffer, timeoutMs: number) =>
    new Promise<Outcome>((resolve) => {
      client.makeUnaryRequest(
        METHOD,
        serialize,
        (b: Buffer) => RunFunctionResponse.decode(b),
        payload,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, rsp) => resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, rsp: rsp! }),
      );
    });
  return {
    run: (req, timeoutMs = 60_000) => call(req, (r) => Buffer.from(RunFunctionRequest.encode(r).finish()), timeoutMs),
    runRaw: (bytes, timeoutMs = 60_000) => call(bytes, (b) => Buffer.from(b), timeoutMs),
    close: () => client.close(),
  };
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results in input order. */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Everything the process writes to stderr from now on (the start-up helper merges both streams). */
export function watchStderr(fn: FunctionProcess): () => string {
  let text = '';
  fn.child.stderr!.on('data', (chunk: string | Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

/** Is the process still running (no exit, no signal)? */
export function alive(fn: FunctionProcess): boolean {
  return fn.child.exitCode === null && fn.child.signalCode === null;
}
