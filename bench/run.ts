#!/usr/bin/env node
// npm run bench: function-platform against the SDK's floor and a Go peer,
// over real gRPC on loopback. See bench/README.md for what is measured and how.
//
// Knobs (environment):
//   BENCH_CALLS=2000        measured calls per case, implementation and level
//   BENCH_ROUNDS=4          the calls of a level are sent in this many turns, the
//                           implementations taking turns, so background load hits all alike
//   BENCH_WARMUP=200        unmeasured calls before each level
//   BENCH_LEVELS=1,16,64    concurrency levels
//   BENCH_CASES=a,b         only these cases (widget-seed, widget-cutover, database-aws, database-cluster)
//   BENCH_IMPLS=ours,floor,peer  (add `ours-tls`: ours over mutual TLS; `candidate`: ours with an experimental preload, bench/candidate.ts)
//   BENCH_OURS_NODE_FLAGS="--max-semi-space-size=8"  Node flags for function-platform instead of the
//                           ones its Dockerfile ENTRYPOINT gives (experiments; "none" for none)
//   BENCH_CANDIDATE_NODE_FLAGS="…"  Node flags for the candidate (default: function-platform's)
//   BENCH_COLD_STARTS=5     extra starts per implementation, only to measure cold start
//   BENCH_CHECK_EVERY=50    decode and check every Nth answer
//   BENCH_PROFILE=1         run function-platform under --cpu-prof, print its profile;
//                           results go to .cache/bench/ instead of bench/results/
//   BENCH_OUT=DIR           where latest.json and latency.svg go (default bench/results)
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { availableParallelism, freemem, loadavg, release, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateDBInstanceCommand, RDSClient } from '@aws-sdk/client-rds';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { makeCerts } from '../dev/infra/pki.js';
import { type Moto, motoBinary, startMoto } from '../test/support/moto.js';
import { buildCases, type Case, checkAnswer } from './cases.js';
import { latencyChart, type Panel } from './chart.js';
import { type Chunk, type LevelResult, measure, summarizeLevel, type Target as LoadTarget, warm } from './load.js';
import { formatSummary, readProfiles, summarize } from './profile.js';
import { type BenchTls, type ImplId, imageNodeFlags, impls as allImpls, type Running, start } from './servers.js';

/** A CA, the server's certificates and a client's, made with openssl for the mutual-TLS run. */
function benchCertificates(): BenchTls {
  const c = makeCerts();
  return { serverDir: c.serverDir, ca: c.ca, clientKey: c.clientKey, clientCert: c.clientCert };
}

const root = fileURLToPath(new URL('../../', import.meta.url));

function env(name: string, fallback: string): string {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : v;
}
const intEnv = (name: string, fallback: number) => {
  const n = Number(env(name, String(fallback)));
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${process.env[name]}`);
  return n;
};
const listEnv = (name: string, fallback: string) =>
  env(name, fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const config = {
  calls: intEnv('BENCH_CALLS', 2000),
  warmup: intEnv('BENCH_WARMUP', 200),
  rounds: Math.max(1, intEnv('BENCH_ROUNDS', 4)),
  levels: listEnv('BENCH_LEVELS', '1,16,64').map(Number),
  cases: listEnv('BENCH_CASES', 'widget-seed,widget-cutover,database-aws,database-aws-live,database-cluster'),
  impls: listEnv('BENCH_IMPLS', 'ours,floor,peer') as ImplId[],
  coldStarts: intEnv('BENCH_COLD_STARTS', 5),  // (0 when profiling: starts would swamp the profile)
  checkEvery: Math.max(1, intEnv('BENCH_CHECK_EVERY', 50)),
  profile: env('BENCH_PROFILE', '') !== '' && env('BENCH_PROFILE', '') !== '0',
  ourNodeFlags: undefined as string[] | undefined,
};
{
  const given = process.env['BENCH_OURS_NODE_FLAGS'];
  if (given !== undefined && given !== '') config.ourNodeFlags = given === 'none' ? [] : given.split(' ').filter(Boolean);
}
if (config.profile) config.coldStarts = 0;
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const outDir = config.profile ? join(root, '.cache', 'bench', stamp) : join(root, env('BENCH_OUT', join('bench', 'results')));
const logDir = join(root, '.cache', 'bench', 'logs');
const profileDir = config.profile ? join(outDir, 'profiles') : undefined;
const peerBinary = join(root, '.cache', 'bin', 'function-patch-and-transform');

const COLORS: Record<ImplId, string> = { ours: '#2563eb', 'ours-tls': '#0891b2', candidate: '#9333ea', floor: '#9ca3af', peer: '#16a34a' };
const say = (s = '') => process.stdout.write(`${s}\n`);

/** Which code was measured: the commit, and whether src/ had uncommitted changes. */
function provenance(): { commit?: string; srcChanged?: boolean } {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const changed = execFileSync('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'package-lock.json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit, srcChanged: changed !== '' };
  } catch {
    return {};
  }
}

function machine() {
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

/** Builds the Go peer when it is missing and Go is there; undefined (and why) otherwise. */
function ensurePeer(): { version?: string; skipped?: string } {
  if (!existsSync(peerBinary)) {
    const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
    if (!hasGo) return { skipped: 'Go is not installed, so scripts/install-peer.sh cannot build function-patch-and-transform' };
    say('The Go peer is not built yet: running scripts/install-peer.sh (a few minutes, once).');
    const r = spawnSync(join(root, 'scripts', 'install-peer.sh'), { stdio: 'inherit' });
    if (r.status !== 0 || !existsSync(peerBinary)) return { skipped: 'scripts/install-peer.sh failed' };
  }
  const version = existsSync(`${peerBinary}.version`) ? readFileSync(`${peerBinary}.version`, 'utf8').trim() : 'unknown';
  return { version };
}

interface ImplCaseResult {
  case: string;
  impl: ImplId;
  label: string;
  coldStartMs: number;
  levels: LevelResult[];
}

function requestFor(c: Case, impl: ImplId): { bytes: Buffer; check: (raw: Buffer) => string | undefined } {
  if (impl === 'peer') {
    const p = c.peer!;
    return { bytes: p.bytes, check: (raw) => checkAnswer(raw, p.expectKeys, p.expectReady) };
  }
  if (impl === 'floor') return { bytes: c.bytes, check: (raw) => checkAnswer(raw, [], undefined) };
  // ours and the candidate answer the same.
  return { bytes: c.bytes, check: (raw) => checkAnswer(raw, c.expectKeys, c.expectReady, c.expectAws) };
}

const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const pad = (s: string, n: number, right = false) => (right ? s.padStart(n) : s.padEnd(n));

function table(headers: string[], rows: string[][], rightFrom = 1): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i]!, i >= rightFrom)).join('  ');
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** moto with the instance and bucket of examples/database/aws.yaml, as the provider would have made them. */
async function startAwsForBench(): Promise<Moto> {
  const moto = await startMoto();
  const credentials = { accessKeyId: 'AKIABENCHMARK0000000', secretAccessKey: 'benchmark-secret-key-not-real' };
  const rds = new RDSClient({ region: 'eu-west-1', endpoint: moto.endpoint, credentials });
  const s3 = new S3Client({ region: 'eu-west-1', endpoint: moto.endpoint, credentials, forcePathStyle: true });
  await rds.send(
    new CreateDBInstanceCommand({ DBInstanceIdentifier: 'team-a-orders-db', Engine: 'postgres', EngineVersion: '17.2', DBInstanceClass: 'db.t4g.small', AllocatedStorage: 20, MasterUsername: 'app', MasterUserPassword: 'benchmark-only-0' }),
  );
  await s3.send(new CreateBucketCommand({ Bucket: 'orders-db-backups-75c1a60b89', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
  await s3.send(new PutObjectCommand({ Bucket: 'orders-db-backups-75c1a60b89', Key: 'orders.dump', Body: 'x' }));
  rds.destroy();
  s3.destroy();
  return moto;
}

async function main(): Promise<void> {
  const started = Date.now();
  mkdirSync(outDir, { recursive: true });
  mkdirSync(logDir, { recursive: true });
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  for (const file of [join(root, 'dist', 'main.js'), join(root, 'dist', 'bench', 'floor.js')]) {
    if (!existsSync(file)) throw new Error(`${relative(root, file)} is missing: run npm run build first (npm run bench does)`);
  }

  const wanted = new Set<ImplId>(config.profile ? config.impls.filter((i) => i === 'ours' || i === 'candidate') : config.impls);
  let peer: { version?: string; skipped?: string } = { skipped: 'not asked for (BENCH_IMPLS)' };
  if (wanted.has('peer')) {
    peer = ensurePeer();
    if (peer.skipped) {
      say(`WARNING: the Go peer is skipped: ${peer.skipped}. Its ratios and targets are reported as n/a.`);
      wanted.delete('peer');
    }
  }
  const image = imageNodeFlags(root);
  const ourNodeFlags = config.ourNodeFlags ?? image.flags;
  const ourNodeOptions = config.ourNodeFlags ? undefined : image.nodeOptions;
  const candidateFlags = process.env['BENCH_CANDIDATE_NODE_FLAGS'];
  const candidateNodeFlags = candidateFlags === undefined || candidateFlags === '' ? undefined : candidateFlags === 'none' ? [] : candidateFlags.split(' ').filter(Boolean);
  const impls = allImpls(root, {
    profileDir,
    peerBinary,
    ourNodeFlags,
    ...(ourNodeOptions === undefined ? {} : { ourNodeOptions }),
    ...(candidateNodeFlags === undefined ? {} : { candidateNodeFlags }),
    ...(wanted.has('ours-tls') ? { tls: benchCertificates() } : {}),
  });
  const order: ImplId[] = (['ours', 'ours-tls', 'candidate', 'floor', 'peer'] as const).filter((i) => wanted.has(i));
  // moto, when installed, stands in for AWS in the live-AWS case.
  const aws = config.cases.includes('database-aws-live') && motoBinary() ? await startAwsForBench() : undefined;
  const cases = buildCases(root, aws ? { awsEndpoint: aws.endpoint } : {}).filter((c) => config.cases.includes(c.id));
  if (cases.length === 0) throw new Error(`BENCH_CASES matches no case: ${config.cases.join(', ')}`);
  const m = machine();

  say(`function-platform benchmark, ${new Date(started).toISOString()}`);
  say(`machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGB} GB memory, Linux ${m.kernel}, Node ${m.node}; load average ${m.loadAverageAtStart.join(' ')}`);
  say(
    `implementations: ${order.map((i) => impls[i].label + (i === 'peer' ? ` ${peer.version}` : '')).join(', ')}; ` +
      `${config.calls} measured calls per level after ${config.warmup} warm-up calls; concurrency ${config.levels.join(', ')}`,
  );
  say(
    `function-platform runs as its image starts it: node ${[...ourNodeFlags, 'dist/main.js'].join(' ')}${ourNodeOptions ? ` with NODE_OPTIONS=${ourNodeOptions}` : ''}` +
      (config.ourNodeFlags ? ' (flags from BENCH_OURS_NODE_FLAGS)' : ' (flags from the Dockerfile ENTRYPOINT)'),
  );
  if (order.includes('candidate')) {
    say(`candidate: function-platform with bench/candidate.ts (node ${[...(candidateNodeFlags ?? ourNodeFlags), '--import', 'dist/bench/candidate.js', 'dist/main.js'].join(' ')})`);
  }
  if (config.profile) say(`profiling function-platform with --cpu-prof into ${relative(root, profileDir!)}`);
  say();

  // Cold start: fresh processes answering the seed Widget, implementations interleaved.
  const seed = buildCases(root).find((c) => c.id === 'widget-seed')!;
  const coldStarts: Record<string, number[]> = {};
  if (config.coldStarts > 0) {
    process.stdout.write(`cold start: ${config.coldStarts} starts per implementation `);
    for (let i = 0; i < config.coldStarts; i++) {
      for (const id of order) {
        const { bytes, check } = requestFor(seed, id);
        const r = await start(impls[id], logDir, bytes, check);
        (coldStarts[id] ??= []).push(r.coldStartMs);
        await r.stop();
        process.stdout.write('.');
      }
    }
    say(' done');
  }

  const results: ImplCaseResult[] = [];
  const profiledPids = new Map<number, string>();
  for (const c of cases) {
    const ids = order.filter((id) => id !== 'peer' || c.peer);
    say(`${c.id}: ${c.title} (${c.bytes.length} bytes on the wire${c.peer && ids.includes('peer') ? `, ${c.peer.bytes.length} for the peer` : ''})`);
    const running = new Map<ImplId, Running>();
    try {
      for (const id of ids) {
        const { bytes, check } = requestFor(c, id);
        const r = await start(impls[id], logDir, bytes, check);
        running.set(id, r);
        if (id === 'ours' || id === 'candidate') profiledPids.set(r.pid, `${c.id}, ${id}`);
        (coldStarts[id] ??= []).push(r.coldStartMs);
        results.push({ case: c.id, impl: id, label: impls[id].label, coldStartMs: r.coldStartMs, levels: [] });
      }
      for (const [li, level] of config.levels.entries()) {
        // Each level: warm every implementation, then measured turns. Who goes
        // first rotates, so none always runs right after another's load.
        const targets = new Map<ImplId, LoadTarget>(
          ids.map((id) => {
            const { bytes, check } = requestFor(c, id);
            return [id, { client: running.get(id)!.client, pid: running.get(id)!.pid, request: bytes, check }];
          }),
        );
        const chunks = new Map<ImplId, Chunk[]>(ids.map((id) => [id, []]));
        const latencies = new Map<ImplId, Float64Array>(ids.map((id) => [id, new Float64Array(config.calls)]));
        for (const id of ids) await warm(targets.get(id)!, level, config.warmup, config.checkEvery);
        const per = Math.ceil(config.calls / config.rounds);
        for (let round = 0, done = 0; done < config.calls; round++, done += per) {
          const n = Math.min(per, config.calls - done);
          for (let k = 0; k < ids.length; k++) {
            const id = ids[(k + li + round) % ids.length]!;
            chunks.get(id)!.push(await measure(targets.get(id)!, level, n, config.checkEvery, latencies.get(id)!, done));
          }
        }
        for (const id of ids) {
          const res = summarizeLevel(level, chunks.get(id)!, latencies.get(id)!);
          results.find((x) => x.case === c.id && x.impl === id)!.levels.push(res);
          say(
            `  ${pad(impls[id].label, 34)} c=${pad(String(level), 3)} ${pad(f(res.throughput, 0), 6, true)} calls/s  p50 ${f(res.latencyMs.p50)}  p99 ${f(res.latencyMs.p99)} ms  cpu ${f(res.cpuMsPerCall, 3)} ms/call  rss ${f(res.peakRssMb, 1)} MB  cores: server ${f(res.serverCores)}, client ${f(res.clientCores)}`,
          );
        }
      }
    } finally {
      for (const r of running.values()) await r.stop();
    }
  }

  // ---- report ----
  const get = (caseId: string, impl: ImplId) => results.find((r) => r.case === caseId && r.impl === impl);
  const lvl = (r: ImplCaseResult | undefined, c: number) => r?.levels.find((l) => l.concurrency === c);
  const cpuPerCall = (r: ImplCaseResult | undefined) => (r ? r.levels.reduce((a, l) => a + l.cpuMsPerCall * l.calls, 0) / r.levels.reduce((a, l) => a + l.calls, 0) : NaN);

  say();
  say('Figures per case (latency in ms; CPU is the server process, all threads; RSS is the peak during the level)');
  for (const c of cases) {
    say();
    say(`${c.id}: ${c.title}`);
    const rows: string[][] = [];
    for (const id of order) {
      const r = get(c.id, id);
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
    say(table(['implementation', 'conc', 'calls/s', 'p50', 'p90', 'p99', 'max', 'cpu ms/call', 'client ms/call', 'peak RSS MB', 'cold start ms'], rows));
  }

  // What the AWS path costs a call once its answers are cached (issue: live AWS facts).
  const live = get('database-aws-live', 'ours');
  const offline = get('database-aws', 'ours');
  if (live && offline) {
    say();
    say('The AWS path with a warm cache (database-aws-live minus database-aws, function-platform)');
    for (const l of live.levels) {
      const o = lvl(offline, l.concurrency);
      if (!o) continue;
      say(`  c=${l.concurrency}: p50 ${f(l.latencyMs.p50 - o.latencyMs.p50)} ms, p99 ${f(l.latencyMs.p99 - o.latencyMs.p99)} ms, server CPU ${f(l.cpuMsPerCall - o.cpuMsPerCall, 3)} ms/call`);
    }
  }
  await aws?.stop();

  // Ratios and targets for function-platform, and for the candidate when it ran.
  const subjects = (['ours', 'candidate'] as const).filter((id) => order.includes(id));
  say();
  say('Ratios (implementation ÷ reference; throughput: higher is better, CPU and latency: lower is better)');
  const ratioRows: string[][] = [];
  const ratios: Array<{
    impl: ImplId;
    case: string;
    concurrency: number;
    cpuPerCallVsFloor: number;
    p50VsFloor: number;
    throughputVsFloor: number;
    throughputVsPeer: number;
    cpuPerCallVsPeer: number;
    p99VsPeer: number;
  }> = [];
  const x = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '–');
  for (const subject of subjects) {
    for (const c of cases) {
      for (const level of config.levels) {
        const ours = lvl(get(c.id, subject), level);
        const floor = lvl(get(c.id, 'floor'), level);
        const p = lvl(get(c.id, 'peer'), level);
        if (!ours) continue;
        const row = {
          impl: subject,
          case: c.id,
          concurrency: level,
          cpuPerCallVsFloor: floor ? ours.cpuMsPerCall / floor.cpuMsPerCall : NaN,
          p50VsFloor: floor ? ours.latencyMs.p50 / floor.latencyMs.p50 : NaN,
          throughputVsFloor: floor ? ours.throughput / floor.throughput : NaN,
          throughputVsPeer: p ? ours.throughput / p.throughput : NaN,
          cpuPerCallVsPeer: p ? ours.cpuMsPerCall / p.cpuMsPerCall : NaN,
          p99VsPeer: p ? ours.latencyMs.p99 / p.latencyMs.p99 : NaN,
        };
        ratios.push(row);
        ratioRows.push([
          impls[subject].label,
          c.id,
          String(level),
          x(row.cpuPerCallVsFloor),
          x(row.p50VsFloor),
          x(row.throughputVsFloor),
          x(row.throughputVsPeer),
          x(row.cpuPerCallVsPeer),
          x(row.p99VsPeer),
        ]);
      }
    }
  }
  say(table(['implementation', 'case', 'conc', 'cpu/call ÷ floor', 'p50 ÷ floor', 'calls/s ÷ floor', 'calls/s ÷ P&T', 'cpu/call ÷ P&T', 'p99 ÷ P&T'], ratioRows, 2));

  // ---- targets ----
  interface Target {
    id: string;
    impl: ImplId;
    text: string;
    value: number;
    limit: number;
    atMost: boolean;
    unit: string;
    detail: string;
    status: 'PASS' | 'MISS' | 'n/a';
  }
  const targets: Target[] = [];
  const judge = (t: Omit<Target, 'status'>): Target => ({ ...t, status: !Number.isFinite(t.value) ? 'n/a' : (t.atMost ? t.value <= t.limit : t.value >= t.limit) ? 'PASS' : 'MISS' });
  for (const subject of subjects) {
    {
      let worst = { value: NaN, at: 'no Widget case ran against the peer' };
      for (const r of ratios) {
        if (r.impl !== subject || !r.case.startsWith('widget') || !Number.isFinite(r.throughputVsPeer)) continue;
        if (!(r.throughputVsPeer >= worst.value)) worst = { value: r.throughputVsPeer, at: `lowest: ${r.case} at ${r.concurrency} concurrent` };
      }
      targets.push(
        judge({
          id: 'widget-throughput-vs-peer',
          impl: subject,
          text: 'Widget throughput ≥ 1.0× function-patch-and-transform (every Widget case and level)',
          value: worst.value,
          limit: 1.0,
          atMost: false,
          unit: '×',
          detail: worst.at,
        }),
      );
    }
    {
      const ours = cpuPerCall(get('widget-seed', subject));
      const floor = cpuPerCall(get('widget-seed', 'floor'));
      const p50 = (lvl(get('widget-seed', subject), 1)?.latencyMs.p50 ?? NaN) / (lvl(get('widget-seed', 'floor'), 1)?.latencyMs.p50 ?? NaN);
      targets.push(
        judge({
          id: 'seed-overhead-vs-floor',
          impl: subject,
          text: 'seed Widget per-call overhead (server CPU per call, all levels) ≤ 1.3× the SDK floor',
          value: ours / floor,
          limit: 1.3,
          atMost: true,
          unit: '×',
          detail: `${f(ours, 3)} vs ${f(floor, 3)} ms/call; p50 at 1 concurrent ${f(p50)}× the floor's`,
        }),
      );
    }
    {
      const l = lvl(get('database-aws', subject), 16);
      const fl = lvl(get('database-aws', 'floor'), 16);
      targets.push(
        judge({
          id: 'aws-p99-at-16',
          impl: subject,
          text: 'Database on AWS p99 at 16 concurrent ≤ 5 ms',
          value: l?.latencyMs.p99 ?? NaN,
          limit: 5,
          atMost: true,
          unit: ' ms',
          detail: l ? `p50 ${f(l.latencyMs.p50)} ms${fl ? `; the floor's p99 ${f(fl.latencyMs.p99)} ms` : ''}` : 'not run',
        }),
      );
    }
    {
      const xs = coldStarts[subject] ?? [];
      targets.push(
        judge({
          id: 'cold-start',
          impl: subject,
          text: 'cold start ≤ 300 ms (median of every start)',
          value: median(xs),
          limit: 300,
          atMost: true,
          unit: ' ms',
          detail: `${xs.length} starts, max ${f(Math.max(...xs), 0)} ms; the floor's median ${f(median(coldStarts['floor'] ?? []), 0)} ms`,
        }),
      );
    }
    {
      const peaks = results.filter((r) => r.impl === subject).flatMap((r) => r.levels.filter((l) => l.concurrency === 64).map((l) => ({ mb: l.peakRssMb, at: r.case })));
      const worst = peaks.reduce((a, b) => (!(a.mb >= b.mb) ? b : a), { mb: NaN, at: 'no 64-concurrency run' });
      const floorPeak = Math.max(...results.filter((r) => r.impl === 'floor').flatMap((r) => r.levels.filter((l) => l.concurrency === 64).map((l) => l.peakRssMb)));
      targets.push(
        judge({
          id: 'peak-rss-at-64',
          impl: subject,
          text: 'peak RSS ≤ 120 MB under 64 concurrent calls (every case)',
          value: worst.mb,
          limit: 120,
          atMost: true,
          unit: ' MB',
          detail: `highest: ${worst.at}; the floor's ${f(floorPeak, 1)} MB`,
        }),
      );
    }
  }
  say();
  say('Targets');
  for (const t of targets) {
    say(`  ${pad(t.status, 4)}  ${subjects.length > 1 ? `${pad(impls[t.impl].label, 34)} ` : ''}${pad(t.text, 86)} ${f(t.value, t.unit === '×' ? 2 : 1)}${t.unit} (limit ${t.limit}${t.unit}; ${t.detail})`);
  }

  say();
  say('Cold start, ms (process start to first successful answer)');
  say(
    table(
      ['implementation', 'starts', 'median', 'min', 'max'],
      order.map((id) => {
        const xs = coldStarts[id] ?? [];
        return [impls[id].label, String(xs.length), f(median(xs), 0), f(Math.min(...xs), 0), f(Math.max(...xs), 0)];
      }),
    ),
  );

  // ---- files ----
  const finished = Date.now();
  const json = {
    date: new Date(started).toISOString(),
    durationSeconds: Math.round((finished - started) / 1000),
    code: provenance(),
    machine: { ...m, loadAverageAtEnd: loadavg().map((l) => Number(l.toFixed(2))) },
    config: { ...config, impls: order, ourNodeFlags, ourNodeOptions, candidateNodeFlags: candidateNodeFlags ?? ourNodeFlags },
    implementations: Object.fromEntries(
      order.map((id) => [id, { label: impls[id].label, ...(id === 'peer' ? { module: 'github.com/crossplane-contrib/function-patch-and-transform', version: peer.version } : {}) }]),
    ),
    peerSkipped: peer.skipped,
    cases: cases.map((c) => ({ id: c.id, title: c.title, requestBytes: c.bytes.length, peerRequestBytes: c.peer?.bytes.length, composes: c.expectKeys, ready: c.expectReady })),
    coldStartMs: Object.fromEntries(order.map((id) => [id, { samples: (coldStarts[id] ?? []).map((x) => Number(x.toFixed(1))), median: Number(median(coldStarts[id] ?? []).toFixed(1)) }])),
    results,
    ratios,
    targets,
  };
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);

  const panels: Panel[] = cases.map((c) => ({
    title: c.title,
    series: order
      .filter((id) => get(c.id, id))
      .map((id) => ({
        label: impls[id].label,
        color: COLORS[id],
        points: get(c.id, id)!.levels.map((l) => ({ concurrency: l.concurrency, p50: l.latencyMs.p50, p99: l.latencyMs.p99 })),
      })),
  }));
  const svg = latencyChart({
    title: 'RunFunction latency by concurrency (gRPC on loopback)',
    subtitle: `${json.date.slice(0, 10)} · ${m.nproc}× ${m.cpuModel}, ${m.memoryGB} GB · Node ${m.node} · ${config.calls} calls per point`,
    panels,
    levels: config.levels,
  });
  writeFileSync(join(outDir, 'latency.svg'), svg);
  say();
  say(`wrote ${relative(root, join(outDir, 'latest.json'))} and ${relative(root, join(outDir, 'latency.svg'))} in ${json.durationSeconds}s`);

  if (profileDir) {
    const files = readdirSync(profileDir).filter((x) => x.endsWith('.cpuprofile'));
    say();
    say(`CPU profiles of function-platform (${files.length} processes, one per case; ${relative(root, profileDir)}):`);
    for (const file of files) {
      const pid = Number(/\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(file)?.[1]);
      say();
      say(formatSummary(summarize(readProfiles(join(profileDir, file)), 15), `${profiledPids.get(pid) ?? 'unknown case'} (${file})`));
    }
    say();
    say(formatSummary(summarize(readProfiles(profileDir), 40), 'all cases together'));
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
