// What the benchmark prints and writes: the header, the figures per case, the
// AWS path's cost, the ratios, the cold-start table, latest.json, latency.svg
// and, when profiling, the profile summaries.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, freemem, loadavg, release, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { latencyChart, type Panel } from './chart.js';
import { ghzStartupCpuMs } from './ghz.js';
import type { Config, Paths } from './config.js';
import { f, median, say, table, x } from './format.js';
import { type ImplCaseResult, levelOf, resultOf, type Setup } from './orchestrate.js';
import { formatSummary, readProfiles, summarize } from './profile.js';
import type { ImplId } from './servers.js';
import type { SizePoint } from './sizes.js';
import type { Target } from './targets.js';

const COLORS: Record<ImplId, string> = {
  ours: '#2563eb',
  bundle: '#1e3a8a',
  'ours-tls': '#0891b2',
  'ours-http2': '#3b82f6',
  'ours-grpc-js': '#60a5fa',
  candidate: '#9333ea',
  floor: '#9ca3af',
  'http2-floor': '#6b7280',
  'go-floor': '#f59e0b',
  'py-floor': '#dc2626',
  peer: '#16a34a',
};

export type Machine = ReturnType<typeof machine>;

export function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown';
  let go: string | undefined;
  try {
    go = execFileSync('go', ['version'], { encoding: 'utf8' }).trim();
  } catch {
    go = undefined;
  }
  return {
    nproc: availableParallelism(),
    cpuModel: model,
    memoryGB: Number((totalmem() / 1e9).toFixed(1)),
    freeMemoryGB: Number((freemem() / 1e9).toFixed(1)),
    kernel: release(),
    node: process.version,
    go,
    loadAverageAtStart: loadavg().map((l) => Number(l.toFixed(2))),
  };
}

/** Which code was measured: the commit, and whether src/ had uncommitted changes. */
function provenance(root: string): { commit?: string; srcChanged?: boolean } {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const changed = execFileSync('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'package-lock.json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return { commit, srcChanged: changed !== '' };
  } catch {
    return {};
  }
}

export function printHeader(started: number, m: Machine, setup: Setup, config: Config, paths: Paths): void {
  const { impls, order, peer, ourNodeFlags, ourNodeOptions, ourEnv, candidateNodeFlags, candidateBuild } = setup;
  const malloc = Object.entries(ourEnv)
    .map(([k, v]) => `, ${k}=${v}`)
    .join('');
  say(`function-platform benchmark, ${new Date(started).toISOString()}`);
  say(
    `machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGB} GB memory, Linux ${m.kernel}, Node ${m.node}; load average ${m.loadAverageAtStart.join(' ')}`,
  );
  say(
    `implementations: ${order.map((i) => impls[i].label + (i === 'peer' ? ` ${peer.version}` : '')).join(', ')}; ` +
      `${config.calls} measured calls per level after ${config.warmup} warm-up calls; concurrency ${config.levels.join(', ')}`,
  );
  say(
    `function-platform runs as its image starts it: node ${[...ourNodeFlags, 'dist/main.js'].join(' ')}${ourNodeOptions ? ` with NODE_OPTIONS=${ourNodeOptions}` : ''}${malloc}` +
      (config.ourNodeFlags
        ? ' (flags from BENCH_OURS_NODE_FLAGS; malloc settings from the Dockerfile)'
        : ' (flags from the Dockerfile ENTRYPOINT)'),
  );
  if (order.includes('candidate')) {
    say(
      candidateBuild
        ? `candidate: another build, node ${[...(candidateNodeFlags ?? ourNodeFlags), `${candidateBuild}/dist/main.js`].join(' ')} (BENCH_CANDIDATE_BUILD)`
        : `candidate: function-platform with bench/candidate.ts (node ${[...(candidateNodeFlags ?? ourNodeFlags), '--import', 'dist/bench/candidate.js', 'dist/main.js'].join(' ')})`,
    );
  }
  say(
    setup.loadgen === 'ghz'
      ? `load generator: ghz ${setup.anchors.ghzVersion} (one process per measured turn, one connection) sends the measured calls; a grpc-js client warms up, times cold starts and checks answers`
      : 'load generator: the grpc-js client in this process (BENCH_LOADGEN=node): it caps throughput from 16 in flight',
  );
  if (paths.profileDir)
    say(`profiling function-platform with --cpu-prof into ${relative(paths.root, paths.profileDir)}`);
  say();
}

export function printFigures(setup: Setup, results: ImplCaseResult[]): void {
  say();
  say('Figures per case (latency in ms; CPU is the server process, all threads; RSS is the peak during the level)');
  for (const c of setup.cases) {
    say();
    say(`${c.id}: ${c.title}`);
    const rows: string[][] = [];
    for (const id of setup.order) {
      const r = resultOf(results, c.id, id);
      if (!r) continue;
      for (const l of r.levels) {
        rows.push([
          r.label,
          String(l.concurrency),
          f(l.throughput, 0),
          f(l.latencyMs.p50),
          f(l.latencyMs.p90),
          f(l.latencyMs.p99),
          f(l.latencyMs.max),
          f(l.cpuMsPerCall, 3),
          f(l.clientCpuMsPerCall, 3),
          f(l.peakRssMb, 1),
          l.concurrency === r.levels[0]!.concurrency ? f(r.coldStartMs, 0) : '',
        ]);
      }
    }
    say(
      table(
        [
          'implementation',
          'conc',
          'calls/s',
          'p50',
          'p90',
          'p99',
          'max',
          'cpu ms/call',
          'client ms/call',
          'peak RSS MB',
          'cold start ms',
        ],
        rows,
      ),
    );
  }
}

/**
 * Whether the load generator had room: its CPU per call (ghz's start-up left
 * out), what one core of it could send at that cost, and the most it used.
 */
export function printLoadgenHeadroom(setup: Setup, results: ImplCaseResult[]): void {
  const levels = results.flatMap((r) => r.levels.map((l) => ({ r, l })));
  if (levels.length === 0) return;
  const busiest = levels.reduce((a, b) => (b.l.throughput > a.l.throughput ? b : a));
  const perCall =
    levels.reduce((a, b) => a + b.l.clientCpuMsPerCall * b.l.calls, 0) / levels.reduce((a, b) => a + b.l.calls, 0);
  say();
  say(
    `Load generator headroom (${setup.loadgen === 'ghz' ? `ghz ${setup.anchors.ghzVersion}, start-up ${f(ghzStartupCpuMs() ?? NaN, 0)} ms CPU per turn left out` : 'grpc-js client in this process'}): ` +
      `${f(perCall, 3)} ms CPU per call on average, i.e. one core sends about ${f(1000 / perCall, 0)} calls/s; ` +
      `the fastest level measured (${busiest.r.label}, ${busiest.r.case}, ${busiest.l.concurrency} in flight) ran ${f(busiest.l.throughput, 0)} calls/s ` +
      `with the generator at ${f(busiest.l.clientCores)} cores and the server at ${f(busiest.l.serverCores)} (${availableParallelism()} CPUs)`,
  );
}

/**
 * What the transport costs a call: the no-op floors (the SDK's server on
 * grpc-js, the same no-op on node:http2), and function-platform on each of its
 * transports, per case and level.
 */
export function printTransport(setup: Setup, results: ImplCaseResult[]): void {
  const tables: Array<[string, Array<[string, ImplId]>]> = [
    [
      'Transport floors: the same no-op served by grpc-js and by node:http2 (server CPU per call)',
      [
        ['grpc-js µs', 'floor'],
        ['node:http2 µs', 'http2-floor'],
      ],
    ],
    [
      'function-platform on each transport: grpc-js, node:http2, and its default, HTTP/2 framed by itself (server CPU per call)',
      [
        ['grpc-js µs', 'ours-grpc-js'],
        ['node:http2 µs', 'ours-http2'],
        ['own framing µs', 'ours'],
      ],
    ],
  ];
  for (const [title, columns] of tables) {
    const rows: string[][] = [];
    for (const c of setup.cases) {
      const [first, ...rest] = columns.map(([, id]) => resultOf(results, c.id, id));
      for (const l of first?.levels ?? []) {
        const others = rest.map((r) => levelOf(r, l.concurrency));
        if (others.some((o) => !o)) continue;
        const last = others.at(-1) ?? l;
        rows.push([
          c.id,
          String(l.concurrency),
          ...[l, ...others].map((o) => f(o!.cpuMsPerCall * 1000, 0)),
          f(l.cpuMsPerCall / last.cpuMsPerCall),
        ]);
      }
    }
    if (rows.length === 0) continue;
    say();
    say(title);
    say(table(['case', 'conc', ...columns.map(([label]) => label), 'first ÷ last'], rows));
  }
}

/** What the AWS path costs a call once its answers are cached: database-aws-live minus database-aws. */
export function printAwsPath(results: ImplCaseResult[]): void {
  const live = resultOf(results, 'database-aws-live', 'ours');
  const offline = resultOf(results, 'database-aws', 'ours');
  if (!live || !offline) return;
  say();
  say('The AWS path with a warm cache (database-aws-live minus database-aws, function-platform)');
  for (const l of live.levels) {
    const o = levelOf(offline, l.concurrency);
    if (!o) continue;
    say(
      `  c=${l.concurrency}: p50 ${f(l.latencyMs.p50 - o.latencyMs.p50)} ms, p99 ${f(l.latencyMs.p99 - o.latencyMs.p99)} ms, server CPU ${f(l.cpuMsPerCall - o.cpuMsPerCall, 3)} ms/call`,
    );
  }
}

export interface Ratio {
  impl: ImplId;
  case: string;
  concurrency: number;
  cpuPerCallVsFloor: number;
  cpuPerCallVsGoFloor: number;
  cpuPerCallVsPyFloor: number;
  p99VsGoFloor: number;
  p50VsFloor: number;
  throughputVsFloor: number;
  throughputVsPeer: number;
  cpuPerCallVsPeer: number;
  p99VsPeer: number;
}

/** The subjects' figures over the floor's and the peer's, per case and level (NaN where a reference did not run). */
export function ratios(subjects: readonly ImplId[], setup: Setup, config: Config, results: ImplCaseResult[]): Ratio[] {
  const out: Ratio[] = [];
  for (const subject of subjects) {
    for (const c of setup.cases) {
      for (const level of config.levels) {
        const ours = levelOf(resultOf(results, c.id, subject), level);
        const floor = levelOf(resultOf(results, c.id, 'floor'), level);
        const p = levelOf(resultOf(results, c.id, 'peer'), level);
        const go = levelOf(resultOf(results, c.id, 'go-floor'), level);
        const py = levelOf(resultOf(results, c.id, 'py-floor'), level);
        if (!ours) continue;
        out.push({
          impl: subject,
          case: c.id,
          concurrency: level,
          cpuPerCallVsFloor: floor ? ours.cpuMsPerCall / floor.cpuMsPerCall : NaN,
          cpuPerCallVsGoFloor: go ? ours.cpuMsPerCall / go.cpuMsPerCall : NaN,
          cpuPerCallVsPyFloor: py ? ours.cpuMsPerCall / py.cpuMsPerCall : NaN,
          p99VsGoFloor: go ? ours.latencyMs.p99 / go.latencyMs.p99 : NaN,
          p50VsFloor: floor ? ours.latencyMs.p50 / floor.latencyMs.p50 : NaN,
          throughputVsFloor: floor ? ours.throughput / floor.throughput : NaN,
          throughputVsPeer: p ? ours.throughput / p.throughput : NaN,
          cpuPerCallVsPeer: p ? ours.cpuMsPerCall / p.cpuMsPerCall : NaN,
          p99VsPeer: p ? ours.latencyMs.p99 / p.latencyMs.p99 : NaN,
        });
      }
    }
  }
  return out;
}

export function printRatios(rs: Ratio[], setup: Setup): void {
  say();
  say('Ratios (implementation ÷ reference; throughput: higher is better, CPU and latency: lower is better)');
  const rows = rs.map((r) => [
    setup.impls[r.impl].label,
    r.case,
    String(r.concurrency),
    x(r.cpuPerCallVsFloor),
    x(r.cpuPerCallVsGoFloor),
    x(r.cpuPerCallVsPyFloor),
    x(r.p99VsGoFloor),
    x(r.p50VsFloor),
    x(r.throughputVsFloor),
    x(r.throughputVsPeer),
    x(r.cpuPerCallVsPeer),
    x(r.p99VsPeer),
  ]);
  say(
    table(
      [
        'implementation',
        'case',
        'conc',
        'cpu/call ÷ Node floor',
        'cpu/call ÷ Go floor',
        'cpu/call ÷ Py floor',
        'p99 ÷ Go floor',
        'p50 ÷ Node floor',
        'calls/s ÷ Node floor',
        'calls/s ÷ P&T',
        'cpu/call ÷ P&T',
        'p99 ÷ P&T',
      ],
      rows,
      2,
    ),
  );
}

export function printColdStarts(setup: Setup, coldStarts: Record<string, number[]>): void {
  say();
  say('Cold start, ms (process start to first successful answer)');
  say(
    table(
      ['implementation', 'starts', 'median', 'min', 'max'],
      setup.order.map((id) => {
        const xs = coldStarts[id] ?? [];
        return [
          setup.impls[id].label,
          String(xs.length),
          f(median(xs), 0),
          f(Math.min(...xs), 0),
          f(Math.max(...xs), 0),
        ];
      }),
    ),
  );
}

/** latest.json and latency.svg in the output directory. */
export function writeFiles(
  run: { started: number; machine: Machine; setup: Setup; config: Config; paths: Paths },
  coldStarts: Record<string, number[]>,
  results: ImplCaseResult[],
  rs: Ratio[],
  targets: Target[],
  sizes: SizePoint[],
): void {
  const { started, machine: m, setup, config, paths } = run;
  const { impls, order, peer, cases, ourNodeFlags, ourNodeOptions, ourEnv, candidateNodeFlags } = setup;
  const finished = Date.now();
  const json = {
    date: new Date(started).toISOString(),
    durationSeconds: Math.round((finished - started) / 1000),
    code: provenance(paths.root),
    machine: { ...m, loadAverageAtEnd: loadavg().map((l) => Number(l.toFixed(2))) },
    config: {
      calls: config.calls,
      warmup: config.warmup,
      rounds: config.rounds,
      levels: config.levels,
      cases: config.cases,
      impls: order,
      coldStarts: config.coldStarts,
      checkEvery: config.checkEvery,
      profile: config.profile,
      ourNodeFlags,
      ourNodeOptions,
      ourEnv,
      candidateNodeFlags: candidateNodeFlags ?? ourNodeFlags,
      ...(setup.candidateBuild ? { candidateBuild: setup.candidateBuild } : {}),
    },
    implementations: Object.fromEntries(
      order.map((id) => [
        id,
        {
          label: impls[id].label,
          ...(id === 'peer'
            ? { module: 'github.com/crossplane-contrib/function-patch-and-transform', version: peer.version }
            : {}),
        },
      ]),
    ),
    peerSkipped: peer.skipped,
    cases: cases.map((c) => ({
      id: c.id,
      title: c.title,
      requestBytes: c.bytes.length,
      peerRequestBytes: c.peer?.bytes.length,
      composes: c.expectKeys,
      ready: c.expectReady,
    })),
    coldStartMs: Object.fromEntries(
      order.map((id) => [
        id,
        {
          samples: (coldStarts[id] ?? []).map((s) => Number(s.toFixed(1))),
          median: Number(median(coldStarts[id] ?? []).toFixed(1)),
        },
      ]),
    ),
    results,
    ratios: rs,
    sizes,
    targets,
  };
  writeFileSync(join(paths.outDir, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);

  const panels: Panel[] = cases.map((c) => ({
    title: c.title,
    series: order
      .filter((id) => resultOf(results, c.id, id))
      .map((id) => ({
        label: impls[id].label,
        color: COLORS[id],
        points: resultOf(results, c.id, id)!.levels.map((l) => ({
          concurrency: l.concurrency,
          p50: l.latencyMs.p50,
          p99: l.latencyMs.p99,
        })),
      })),
  }));
  const svg = latencyChart({
    title: 'RunFunction latency by concurrency (gRPC on loopback)',
    subtitle: `${json.date.slice(0, 10)} · ${m.nproc}× ${m.cpuModel}, ${m.memoryGB} GB · Node ${m.node} · ${config.calls} calls per point`,
    panels,
    levels: config.levels,
  });
  writeFileSync(join(paths.outDir, 'latency.svg'), svg);
  say();
  say(
    `wrote ${relative(paths.root, join(paths.outDir, 'latest.json'))} and ${relative(paths.root, join(paths.outDir, 'latency.svg'))} in ${json.durationSeconds}s; load average ${m.loadAverageAtStart.join(' ')} at the start, ${json.machine.loadAverageAtEnd.join(' ')} at the end`,
  );
}

/** One summary per profiled process (named by the case it served), then all together. */
export function printProfiles(paths: Paths, profiledPids: Map<number, string>): void {
  const { profileDir } = paths;
  if (!profileDir) return;
  const files = readdirSync(profileDir).filter((file) => file.endsWith('.cpuprofile'));
  say();
  say(
    `CPU profiles of function-platform (${files.length} processes, one per case; ${relative(paths.root, profileDir)}):`,
  );
  for (const file of files) {
    const pid = Number(/\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(file)?.[1]);
    say();
    say(
      formatSummary(
        summarize(readProfiles(join(profileDir, file)), 10),
        `${profiledPids.get(pid) ?? 'unknown case'} (${file})`,
      ),
    );
  }
  say();
  say(formatSummary(summarize(readProfiles(profileDir), 10), 'all cases together: the top ten functions by self time'));
}
