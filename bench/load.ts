// The load generator: a grpc-js client built from the SDK's
// FunctionRunnerServiceService, sending pre-encoded requests.
//
// The bytes on the wire are exactly what the SDK's own client sends (the
// request is encoded once with the SDK's RunFunctionRequest codec); only the
// per-call re-encoding and full decoding are skipped, so that on a 2-core
// machine the client in this process takes as little CPU from the server as
// it can. Answers are decoded and checked on a sample of calls.
import * as grpc from '@grpc/grpc-js';
import { FunctionRunnerServiceService } from '@crossplane-org/function-sdk-typescript';
import { performance } from 'node:perf_hooks';
import { cpuMs, peakRssMb, resetPeakRss } from './proc.js';

export interface Client {
  call(request: Buffer, timeoutMs?: number): Promise<Buffer>;
  close(): void;
}

const raw = (b: Buffer): Buffer => b;

/** A channel to one server; `path` is the RunFunction method it serves. */
export function dial(target: string, path: string, credentials = grpc.credentials.createInsecure()): Client {
  const method = { ...FunctionRunnerServiceService.runFunction, path, requestSerialize: raw, responseDeserialize: raw };
  const Ctor = grpc.makeGenericClientConstructor({ runFunction: method }, 'FunctionRunnerService');
  const client = new Ctor(target, credentials, {
    'grpc.max_receive_message_length': 16 * 1024 * 1024,
  }) as unknown as grpc.Client & {
    runFunction(
      req: Buffer,
      meta: grpc.Metadata,
      opts: grpc.CallOptions,
      cb: (err: grpc.ServiceError | null, rsp: Buffer) => void,
    ): void;
  };
  return {
    call(request, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        client.runFunction(request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, rsp) =>
          err ? reject(err) : resolve(rsp),
        );
      });
    },
    close: () => client.close(),
  };
}

export interface LevelResult {
  concurrency: number;
  /** Measured calls, and the wall time they took (summed over the rounds). */
  calls: number;
  seconds: number;
  throughput: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Server CPU (all threads, user + system) per call, ms. */
  cpuMsPerCall: number;
  /** This process's CPU (the load generator) per call, ms. */
  clientCpuMsPerCall: number;
  /** Cores busy on average during the level: the server's, and this process's. */
  serverCores: number;
  clientCores: number;
  /** The server's peak RSS during this level (MiB); cumulative since start when the kernel refuses a reset. */
  peakRssMb: number;
  peakRssSinceStart: boolean;
  /** How many answers were decoded and checked. */
  checked: number;
}

/** The q-quantile of sorted values (nearest rank). */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export interface Target {
  client: Client;
  pid: number;
  request: Buffer;
  /** Decodes and checks an answer; a message when it is wrong. */
  check: (raw: Buffer) => string | undefined;
}

/**
 * Sends `n` calls keeping `concurrency` in flight; latencies (ms) go to
 * `latencies` from `offset` on when given. Every `checkEvery`-th answer is
 * decoded and checked; a wrong answer or a failed call throws.
 */
async function drive(
  t: Target,
  concurrency: number,
  n: number,
  checkEvery: number,
  latencies?: Float64Array,
  offset = 0,
): Promise<number> {
  let next = 0;
  let checked = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const start = performance.now();
      const rsp = await t.client.call(t.request);
      if (latencies) latencies[offset + i] = performance.now() - start;
      if (i % checkEvery === 0) {
        checked++;
        const problem = t.check(rsp);
        if (problem) throw new Error(`call ${i} at concurrency ${concurrency}: ${problem}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return checked;
}

/** Unmeasured calls, so the server's code is optimised and its heap sized before measuring. */
export async function warm(t: Target, concurrency: number, n: number, checkEvery: number): Promise<void> {
  await drive(t, concurrency, n, checkEvery);
}

/** One measured stretch of calls: its wall time, the CPU both sides used, and the server's peak RSS. */
export interface Chunk {
  seconds: number;
  serverCpuMs: number;
  clientCpuMs: number;
  peakRssMb: number;
  peakRssSinceStart: boolean;
  checked: number;
}

export async function measure(
  t: Target,
  concurrency: number,
  n: number,
  checkEvery: number,
  latencies: Float64Array,
  offset: number,
): Promise<Chunk> {
  const reset = resetPeakRss(t.pid);
  const cpu0 = cpuMs(t.pid);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  const checked = await drive(t, concurrency, n, checkEvery, latencies, offset);
  const seconds = (performance.now() - t0) / 1000;
  const clientUsage = process.cpuUsage(client0);
  return {
    seconds,
    serverCpuMs: cpuMs(t.pid) - cpu0,
    clientCpuMs: (clientUsage.user + clientUsage.system) / 1000,
    peakRssMb: peakRssMb(t.pid),
    peakRssSinceStart: !reset,
    checked,
  };
}

/** A level's figures from its chunks (run in turns with the other implementations) and all their latencies. */
export function summarizeLevel(concurrency: number, chunks: Chunk[], latencies: Float64Array): LevelResult {
  const calls = latencies.length;
  const seconds = chunks.reduce((a, c) => a + c.seconds, 0);
  const serverCpuMs = chunks.reduce((a, c) => a + c.serverCpuMs, 0);
  const clientCpuMs = chunks.reduce((a, c) => a + c.clientCpuMs, 0);
  const sorted = Float64Array.from(latencies).sort();
  const mean = sorted.reduce((a, b) => a + b, 0) / calls;
  return {
    concurrency,
    calls,
    seconds,
    throughput: calls / seconds,
    latencyMs: {
      mean,
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      max: sorted[calls - 1]!,
    },
    cpuMsPerCall: serverCpuMs / calls,
    clientCpuMsPerCall: clientCpuMs / calls,
    serverCores: serverCpuMs / 1000 / seconds,
    clientCores: clientCpuMs / 1000 / seconds,
    peakRssMb: Math.max(...chunks.map((c) => c.peakRssMb)),
    peakRssSinceStart: chunks.some((c) => c.peakRssSinceStart),
    checked: chunks.reduce((a, c) => a + c.checked, 0),
  };
}
