// The benchmark's knobs, read from the environment and checked, and where its
// files go.
//
//   BENCH_CALLS=2000        measured calls per case, implementation and level
//   BENCH_ROUNDS=4          the calls of a level are sent in this many turns, the
//                           implementations taking turns, so background load hits all alike
//   BENCH_WARMUP=200        unmeasured calls before each level
//   BENCH_LEVELS=1,16,64    concurrency levels
//   BENCH_CASES=a,b         only these cases (widget-seed, widget-cutover, database-aws,
//                           database-aws-v2 (needs ../shared/crds), database-aws-live (needs moto),
//                           database-cluster)
//   BENCH_IMPLS=ours,bundle,ours-http2,ours-grpc-js,floor,http2-floor,go-floor,py-floor,peer  (bundle: ours from
//                           dist/bundle; ours-http2, ours-grpc-js: ours on node:http2, on grpc-js (ours is on its
//                           default transport, HTTP/2 framed by itself); add `ours-tls`: ours over mutual TLS;
//                           `candidate`: ours with the preload bench/candidate.ts)
//   BENCH_LOADGEN=ghz       who sends the measured calls: ghz (Go), or `node` (the grpc-js client
//                           in this process, which caps throughput from 16 in flight)
//   BENCH_SIZES=10,100,1000 request sizes (KB) of the size sweep; "none" skips it
//   BENCH_OURS_NODE_FLAGS="--max-semi-space-size=8"  Node flags for function-platform instead of the
//                           ones its Dockerfile ENTRYPOINT gives (experiments; "none" for none)
//   BENCH_CANDIDATE_NODE_FLAGS="…"  Node flags for the candidate (default: function-platform's)
//   BENCH_CANDIDATE_BUILD=DIR  the candidate is another build: DIR/dist/main.js (a worktree of
//                           another commit, built), without the preload: before/after in one run
//   BENCH_COLD_STARTS=5     extra starts per implementation, only to measure cold start
//   BENCH_CHECK_EVERY=50    decode and check every Nth answer
//   BENCH_PROFILE=1         run function-platform under --cpu-prof, print its profile;
//                           results go to .cache/bench/ instead of bench/results/
//   BENCH_OUT=DIR           where latest.json and latency.svg go, relative to the
//                           repository root (default bench/results)
//   BENCH_QUICK=1           the smoke run CI makes (test/bench): every implementation and case,
//                           a handful of calls at 1 and 4 in flight, every answer checked, one
//                           size, no extra cold starts, results in .cache/bench/quick; the
//                           knobs above still win when set
import { join, resolve } from 'node:path';
import { binDir, repoRoot } from '../dev/infra/paths.js';
import { IMPL_IDS, type ImplId } from './servers.js';

export interface Config {
  calls: number;
  warmup: number;
  rounds: number;
  levels: number[];
  cases: string[];
  impls: ImplId[];
  /** 0 when profiling: starts would swamp the profile. */
  coldStarts: number;
  checkEvery: number;
  profile: boolean;
  loadgen: 'ghz' | 'node';
  /** The size sweep's request sizes, KB. */
  sizesKb: number[];
  /** BENCH_OURS_NODE_FLAGS; undefined: the Dockerfile's. */
  ourNodeFlags?: string[];
  /** BENCH_CANDIDATE_NODE_FLAGS; undefined: function-platform's. */
  candidateNodeFlags?: string[];
  /** BENCH_CANDIDATE_BUILD: a checkout whose dist/main.js is the candidate. */
  candidateBuild?: string;
}

export interface Paths {
  root: string;
  /** latest.json and latency.svg. */
  outDir: string;
  /** One log file per server started. */
  logDir: string;
  /** --cpu-prof's output, when profiling. */
  profileDir?: string;
  peerBinary: string;
}

export function readConfig(environment: NodeJS.ProcessEnv = process.env): { config: Config; paths: Paths } {
  const env = (name: string, fallback: string): string => {
    const v = environment[name];
    return v === undefined || v === '' ? fallback : v;
  };
  const intEnv = (name: string, fallback: number) => {
    const n = Number(env(name, String(fallback)));
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${environment[name]}`);
    return n;
  };
  const listEnv = (name: string, fallback: string) =>
    env(name, fallback)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  // Unset or empty: undefined; "none": no flags.
  const flagsEnv = (name: string): string[] | undefined => {
    const v = environment[name];
    return v === undefined || v === '' ? undefined : v === 'none' ? [] : v.split(' ').filter(Boolean);
  };

  // The smoke run's defaults: the same code paths, a handful of calls.
  const quick = env('BENCH_QUICK', '') !== '' && env('BENCH_QUICK', '') !== '0';
  const levels = listEnv('BENCH_LEVELS', quick ? '1,4' : '1,16,64').map(Number);
  if (levels.length === 0 || !levels.every((l) => Number.isInteger(l) && l > 0)) {
    throw new Error(`BENCH_LEVELS must be whole numbers above 0, got ${environment['BENCH_LEVELS']}`);
  }
  const impls = listEnv(
    'BENCH_IMPLS',
    quick ? IMPL_IDS.join(',') : 'ours,bundle,ours-http2,ours-grpc-js,floor,http2-floor,go-floor,py-floor,peer',
  );
  const loadgen = env('BENCH_LOADGEN', 'ghz');
  if (loadgen !== 'ghz' && loadgen !== 'node') throw new Error(`BENCH_LOADGEN must be ghz or node, got ${loadgen}`);
  const sizes = env('BENCH_SIZES', quick ? '10' : '10,100,1000');
  const sizesKb = sizes === 'none' ? [] : sizes.split(',').map((s) => Number(s.trim()));
  if (!sizesKb.every((n) => Number.isInteger(n) && n > 0))
    throw new Error(`BENCH_SIZES must be whole numbers of KB above 0 (or none), got ${sizes}`);
  const unknown = impls.filter((i) => !(IMPL_IDS as readonly string[]).includes(i));
  if (unknown.length > 0)
    throw new Error(`BENCH_IMPLS: no implementation ${unknown.join(', ')} (there are ${IMPL_IDS.join(', ')})`);

  const profile = env('BENCH_PROFILE', '') !== '' && env('BENCH_PROFILE', '') !== '0';
  const coldStarts = intEnv('BENCH_COLD_STARTS', quick ? 0 : 5);
  const ourNodeFlags = flagsEnv('BENCH_OURS_NODE_FLAGS');
  const candidateNodeFlags = flagsEnv('BENCH_CANDIDATE_NODE_FLAGS');
  const candidateBuild = env('BENCH_CANDIDATE_BUILD', '') || undefined;
  const config: Config = {
    calls: intEnv('BENCH_CALLS', quick ? 24 : 2000),
    warmup: intEnv('BENCH_WARMUP', quick ? 4 : 200),
    rounds: Math.max(1, intEnv('BENCH_ROUNDS', quick ? 2 : 4)),
    levels,
    cases: listEnv(
      'BENCH_CASES',
      'widget-seed,widget-cutover,database-aws,database-aws-v2,database-aws-live,database-cluster',
    ),
    impls: impls as ImplId[],
    coldStarts: profile ? 0 : coldStarts,
    checkEvery: Math.max(1, intEnv('BENCH_CHECK_EVERY', quick ? 1 : 50)),
    profile,
    loadgen,
    sizesKb: profile ? [] : sizesKb,
    ...(ourNodeFlags === undefined ? {} : { ourNodeFlags }),
    ...(candidateNodeFlags === undefined ? {} : { candidateNodeFlags }),
    ...(candidateBuild === undefined ? {} : { candidateBuild: resolve(candidateBuild) }),
  };

  const root = repoRoot;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = profile
    ? join(root, '.cache', 'bench', stamp)
    : join(root, env('BENCH_OUT', quick ? join('.cache', 'bench', 'quick') : join('bench', 'results')));
  const paths: Paths = {
    root,
    outDir,
    logDir: join(root, '.cache', 'bench', 'logs'),
    ...(profile ? { profileDir: join(outDir, 'profiles') } : {}),
    peerBinary: join(binDir, 'function-patch-and-transform'),
  };
  return { config, paths };
}
