// The measured load, sent by ghz (a gRPC load generator in Go, built by
// scripts/install-bench-anchors.sh): one process per measured turn, one HTTP/2
// connection as Crossplane keeps, the request sent as the bytes the SDK's
// codec wrote. ghz reads the service from bench/ghz-proto, where request and
// answer are opaque: it passes the request's bytes through untouched (checked
// once per run by checkGhzBytes) and does not decode answers, so it costs a
// fraction of what the servers do per call, on threads of its own (the report
// shows its CPU per call beside the server's).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { repoRoot } from '../dev/infra/paths.js';
import type { Chunk } from './load.js';
import { childrenCpuMs, cpuMs, peakRssMb, resetPeakRss } from './proc.js';

export interface GhzTarget {
  ghz: string;
  /** Which RunFunction the server serves. */
  proto: 'v1' | 'v1beta1';
  address: string;
  pid: number;
  request: Buffer;
  /** Where request files go. */
  workDir: string;
}

interface GhzReport {
  count: number;
  /** Nanoseconds. */
  total: number;
  statusCodeDistribution?: Record<string, number>;
  errorDistribution?: Record<string, number> | null;
  details?: Array<{ latency: number; status: string; error: string }>;
}

/** The request as a file ghz sends (-B), named by its content. */
function requestFile(request: Buffer, workDir: string): string {
  mkdirSync(workDir, { recursive: true });
  const file = join(workDir, `${createHash('sha256').update(request).digest('hex').slice(0, 16)}.bin`);
  writeFileSync(file, request);
  return file;
}

const ghzArgs = (
  ghz: string,
  proto: 'v1' | 'v1beta1',
  file: string,
  n: number,
  concurrency: number,
  address: string,
) => [
  ghz,
  '--insecure',
  '--proto',
  join(repoRoot, 'bench', 'ghz-proto', proto, 'run_function.proto'),
  '--call',
  `apiextensions.fn.proto.${proto}.FunctionRunnerService/RunFunction`,
  '-B',
  file,
  '-n',
  String(n),
  '-c',
  String(concurrency),
  '--connections',
  '1',
  '--max-recv-message-size',
  '16MB',
  '--timeout',
  '30s',
  '-O',
  'json',
  address,
];

/**
 * That ghz sends the request file's bytes exactly: one call to a grpc-js
 * server here that keeps what arrives. Throws when they differ.
 */
export async function checkGhzBytes(ghz: string, request: Buffer, workDir: string): Promise<void> {
  const raw = (b: Buffer) => b;
  const got: Buffer[] = [];
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
  const path = '/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction';
  server.addService(
    {
      runFunction: {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: raw,
        requestDeserialize: raw,
        responseSerialize: raw,
        responseDeserialize: raw,
      },
    },
    {
      runFunction: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        got.push(call.request);
        cb(null, Buffer.alloc(0));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  try {
    await runGhz(ghzArgs(ghz, 'v1', requestFile(request, workDir), 1, 1, `127.0.0.1:${port}`));
  } finally {
    server.forceShutdown();
  }
  if (got.length !== 1 || !got[0]!.equals(request))
    throw new Error(`ghz sent ${got[0]?.length ?? 'no'} bytes that differ from the ${request.length}-byte request`);
}

function runGhz(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    p.stdout.on('data', (b: Buffer) => out.push(b));
    p.stderr.on('data', (b: Buffer) => err.push(b));
    p.once('error', reject);
    p.once('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`ghz exited ${code}: ${Buffer.concat(err).toString('utf8').slice(0, 500)}`));
    });
  });
}

let startupCpuMs: number | undefined;
/** The CPU a ghz run costs before and after its calls (start-up, proto parsing): measured once, ms. */
export const ghzStartupCpuMs = () => startupCpuMs;

/** ghz's fixed cost: the median of three one-call runs, so a turn's client CPU per call is its calls' own. */
async function calibrate(args: string[]): Promise<number> {
  const one = args.map((a, i) => (args[i - 1] === '-n' || args[i - 1] === '-c' ? '1' : a));
  const xs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const c0 = childrenCpuMs();
    await runGhz(one);
    xs.push(childrenCpuMs() - c0);
  }
  return xs.sort((a, b) => a - b)[1]!;
}

/** One measured turn of `n` calls at `concurrency`, latencies (ms) into `latencies` from `offset`. */
export async function measureGhz(
  t: GhzTarget,
  concurrency: number,
  n: number,
  latencies: Float64Array,
  offset: number,
): Promise<Chunk> {
  const args = ghzArgs(t.ghz, t.proto, requestFile(t.request, t.workDir), n, concurrency, t.address);
  startupCpuMs ??= await calibrate(args);
  const reset = resetPeakRss(t.pid);
  const cpu0 = cpuMs(t.pid);
  const client0 = childrenCpuMs();
  const t0 = performance.now();
  const report = JSON.parse(await runGhz(args)) as GhzReport;
  const wall = (performance.now() - t0) / 1000;
  const serverCpuMs = cpuMs(t.pid) - cpu0;
  const clientCpuMs = Math.max(0, childrenCpuMs() - client0 - startupCpuMs);
  const ok = report.statusCodeDistribution?.['OK'] ?? 0;
  if (ok !== n) {
    const errors = Object.entries(report.errorDistribution ?? {}).map(([e, k]) => `${k}× ${e}`);
    throw new Error(`ghz: ${ok} of ${n} calls OK at concurrency ${concurrency}: ${errors.join('; ').slice(0, 500)}`);
  }
  const details = report.details ?? [];
  for (let i = 0; i < n; i++) latencies[offset + i] = (details[i]?.latency ?? NaN) / 1e6;
  return {
    // ghz's own clock for the calls (its start-up and proto parsing are not calls); the process's wall time bounds it.
    seconds: Math.min(wall, report.total / 1e9),
    serverCpuMs,
    clientCpuMs,
    peakRssMb: peakRssMb(t.pid),
    peakRssSinceStart: !reset,
    checked: 0,
  };
}
