// The measured load, sent by ghz (a gRPC load generator in Go, built by
// scripts/install-bench-anchors.sh): one process per measured turn, one HTTP/2
// connection as Crossplane keeps, the request sent as the bytes the SDK's
// codec wrote. Being multi-threaded Go, it costs a fraction of the grpc-js
// client per call, so the servers' throughput is theirs, not the client's
// (the report shows its CPU per call beside the server's).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Chunk } from './load.js';
import { childrenCpuMs, cpuMs, peakRssMb, resetPeakRss } from './proc.js';

export interface GhzTarget {
  ghz: string;
  /** .cache/bench-proto, and which RunFunction it serves. */
  protoDir: string;
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
function requestFile(t: GhzTarget): string {
  mkdirSync(t.workDir, { recursive: true });
  const file = join(t.workDir, `${createHash('sha256').update(t.request).digest('hex').slice(0, 16)}.bin`);
  writeFileSync(file, t.request);
  return file;
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
  const pkg = `apiextensions.fn.proto.${t.proto}`;
  const args = [
    t.ghz,
    '--insecure',
    '--proto',
    join(t.protoDir, t.proto, 'run_function.proto'),
    '--call',
    `${pkg}.FunctionRunnerService/RunFunction`,
    '-B',
    requestFile(t),
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
    t.address,
  ];
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
