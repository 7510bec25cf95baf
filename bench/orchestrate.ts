// Runs the benchmark: what to start, cold starts, then each case level by
// level, the implementations taking turns.
import { existsSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { makeCerts } from '../dev/infra/pki.js';
import { type Moto, motoBinary, startAws } from './aws.js';
import { buildCases, type Case, checkAnswer } from './cases.js';
import type { Config, Paths } from './config.js';
import { f, pad, say } from './format.js';
import { checkGhzBytes, measureGhz } from './ghz.js';
import { type Chunk, type LevelResult, measure, summarizeLevel, type Target, warm } from './load.js';
import {
  type Anchors,
  ensureAnchors,
  ensurePeer,
  IMPL_IDS,
  type Impl,
  type ImplId,
  imageNodeFlags,
  impls as allImpls,
  type Running,
  start,
} from './servers.js';

export interface ImplCaseResult {
  case: string;
  impl: ImplId;
  label: string;
  coldStartMs: number;
  levels: LevelResult[];
}

export const resultOf = (results: ImplCaseResult[], caseId: string, impl: ImplId) =>
  results.find((r) => r.case === caseId && r.impl === impl);
export const levelOf = (r: ImplCaseResult | undefined, concurrency: number) =>
  r?.levels.find((l) => l.concurrency === concurrency);

/** What a run starts and sends, settled before anything is timed. */
export interface Setup {
  impls: Record<ImplId, Impl>;
  /** The implementations that run, in order. */
  order: ImplId[];
  peer: { version?: string; skipped?: string };
  anchors: Anchors;
  /** Who sends the measured calls (BENCH_LOADGEN; node when ghz is missing). */
  loadgen: 'ghz' | 'node';
  ourNodeFlags: string[];
  ourNodeOptions?: string;
  /** The image's malloc settings, as function-platform runs with them. */
  ourEnv: Record<string, string>;
  /** undefined: the candidate runs with ourNodeFlags. */
  candidateNodeFlags?: string[];
  /** BENCH_CANDIDATE_BUILD: the checkout whose dist/main.js is the candidate. */
  candidateBuild?: string;
  cases: Case[];
  /** moto, when the live-AWS case runs. */
  aws?: Moto;
}

/** Makes the directories, checks the build, builds the peer if need be, starts moto, builds the cases. */
export async function prepare(config: Config, paths: Paths): Promise<Setup> {
  const { root } = paths;
  mkdirSync(paths.outDir, { recursive: true });
  mkdirSync(paths.logDir, { recursive: true });
  if (paths.profileDir) mkdirSync(paths.profileDir, { recursive: true });
  for (const file of [
    join(root, 'dist', 'main.js'),
    join(root, 'dist', 'bundle', 'main.mjs'),
    join(root, 'dist', 'bench', 'floor.js'),
  ]) {
    if (!existsSync(file))
      throw new Error(`${relative(root, file)} is missing: run npm run build first (npm run bench does)`);
  }

  const wanted = new Set<ImplId>(
    config.profile ? config.impls.filter((i) => i === 'ours' || i === 'bundle' || i === 'candidate') : config.impls,
  );
  let peer: Setup['peer'] = { skipped: 'not asked for (BENCH_IMPLS)' };
  if (wanted.has('peer')) {
    peer = ensurePeer(root, paths.peerBinary);
    if (peer.skipped) {
      say(`WARNING: the Go peer is skipped: ${peer.skipped}. Its ratios and targets are reported as n/a.`);
      wanted.delete('peer');
    }
  }
  const anchors = ensureAnchors(root);
  if (anchors.skipped) {
    say(`WARNING: the Go and Python floors and ghz are skipped: ${anchors.skipped}. Their ratios are n/a.`);
    wanted.delete('go-floor');
    wanted.delete('py-floor');
  }
  const loadgen = anchors.skipped ? 'node' : config.loadgen;
  const image = imageNodeFlags(root);
  const ourNodeFlags = config.ourNodeFlags ?? image.flags;
  const ourNodeOptions = config.ourNodeFlags ? undefined : image.nodeOptions;
  const ourEnv = image.env;
  const { candidateNodeFlags, candidateBuild } = config;
  if (candidateBuild !== undefined && !existsSync(join(candidateBuild, 'dist', 'main.js')))
    throw new Error(`BENCH_CANDIDATE_BUILD: ${candidateBuild}/dist/main.js is missing: build that checkout first`);
  const impls = allImpls(root, {
    ...(paths.profileDir === undefined ? {} : { profileDir: paths.profileDir }),
    peerBinary: paths.peerBinary,
    anchors,
    ourNodeFlags,
    ...(ourNodeOptions === undefined ? {} : { ourNodeOptions }),
    ourEnv,
    ...(candidateNodeFlags === undefined ? {} : { candidateNodeFlags }),
    ...(candidateBuild === undefined ? {} : { candidateBuild }),
    // A CA, the server's certificates and a client's, made with openssl.
    ...(wanted.has('ours-tls') ? { tls: makeCerts() } : {}),
  });
  const order = IMPL_IDS.filter((i) => wanted.has(i));
  const moto = config.cases.includes('database-aws-live') ? motoBinary() : undefined;
  const aws = moto ? await startAws(moto, paths.logDir) : undefined;
  const cases = buildCases(root, aws ? { awsEndpoint: aws.endpoint } : {}).filter((c) => config.cases.includes(c.id));
  if (cases.length === 0) {
    await aws?.stop();
    throw new Error(`BENCH_CASES matches no case: ${config.cases.join(', ')}`);
  }
  if (loadgen === 'ghz') {
    // The largest request: what ghz sends must be the SDK codec's bytes, unchanged.
    const largest = cases.reduce((a, b) => (b.bytes.length > a.bytes.length ? b : a));
    await checkGhzBytes(anchors.ghz, largest.bytes, join(root, '.cache', 'bench', 'requests'));
  }
  return {
    impls,
    order,
    peer,
    anchors,
    loadgen,
    ourNodeFlags,
    ...(ourNodeOptions === undefined ? {} : { ourNodeOptions }),
    ourEnv,
    ...(candidateNodeFlags === undefined ? {} : { candidateNodeFlags }),
    ...(candidateBuild === undefined ? {} : { candidateBuild }),
    cases,
    ...(aws ? { aws } : {}),
  };
}

/** The request an implementation gets for a case, and how its answer is checked. */
function requestFor(c: Case, impl: ImplId): { bytes: Buffer; check: (raw: Buffer) => string | undefined } {
  if (impl === 'peer') {
    const p = c.peer!;
    return { bytes: p.bytes, check: (raw) => checkAnswer(raw, p.expectKeys, p.expectReady) };
  }
  if (impl === 'floor' || impl === 'http2-floor' || impl === 'go-floor' || impl === 'py-floor')
    return { bytes: c.bytes, check: (raw) => checkAnswer(raw, [], undefined) };
  // ours, the bundle, ours-tls and the candidate answer the same.
  return { bytes: c.bytes, check: (raw) => checkAnswer(raw, c.expectKeys, c.expectReady, c.expectAws) };
}

/** Cold start: BENCH_COLD_STARTS fresh processes each answering the seed Widget, implementations interleaved. */
export async function coldStarts(setup: Setup, config: Config, paths: Paths): Promise<Record<string, number[]>> {
  const seed = buildCases(paths.root).find((c) => c.id === 'widget-seed')!;
  const samples: Record<string, number[]> = {};
  if (setup.order.includes('bundle')) {
    // As an image build would: one start and call fill the bundle's compile cache; this start is not counted.
    const { bytes, check } = requestFor(seed, 'bundle');
    await (await start(setup.impls.bundle, paths.logDir, bytes, check)).stop();
  }
  if (config.coldStarts > 0) {
    process.stdout.write(`cold start: ${config.coldStarts} starts per implementation `);
    for (let i = 0; i < config.coldStarts; i++) {
      for (const id of setup.order) {
        const { bytes, check } = requestFor(seed, id);
        const r = await start(setup.impls[id], paths.logDir, bytes, check);
        (samples[id] ??= []).push(r.coldStartMs);
        await r.stop();
        process.stdout.write('.');
      }
    }
    say(' done');
  }
  return samples;
}

/**
 * Each case: a fresh process per implementation (its start adds to
 * `coldStartSamples`), then each level: every implementation warmed, then
 * BENCH_ROUNDS measured turns. Who goes first rotates by level and round, so
 * none always runs right after another's load.
 */
export async function runCases(
  setup: Setup,
  config: Config,
  paths: Paths,
  coldStartSamples: Record<string, number[]>,
): Promise<{ results: ImplCaseResult[]; profiledPids: Map<number, string> }> {
  const { impls } = setup;
  const results: ImplCaseResult[] = [];
  const profiledPids = new Map<number, string>();
  for (const c of setup.cases) {
    const ids = setup.order.filter((id) => id !== 'peer' || c.peer);
    say(
      `${c.id}: ${c.title} (${c.bytes.length} bytes on the wire${c.peer && ids.includes('peer') ? `, ${c.peer.bytes.length} for the peer` : ''})`,
    );
    const running = new Map<ImplId, Running>();
    try {
      for (const id of ids) {
        const { bytes, check } = requestFor(c, id);
        const r = await start(impls[id], paths.logDir, bytes, check);
        running.set(id, r);
        if (id === 'ours' || id === 'bundle' || id === 'candidate') profiledPids.set(r.pid, `${c.id}, ${id}`);
        (coldStartSamples[id] ??= []).push(r.coldStartMs);
        results.push({ case: c.id, impl: id, label: impls[id].label, coldStartMs: r.coldStartMs, levels: [] });
      }
      for (const [li, level] of config.levels.entries()) {
        const targets = new Map<ImplId, Target>(
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
            const t = targets.get(id)!;
            // ghz speaks plaintext here; the mutual-TLS run keeps the grpc-js client, which has the certificates.
            chunks.get(id)!.push(
              setup.loadgen === 'ghz' && id !== 'ours-tls'
                ? await measureGhz(
                    {
                      ghz: setup.anchors.ghz,
                      proto: impls[id].proto,
                      address: `127.0.0.1:${running.get(id)!.port}`,
                      pid: t.pid,
                      request: t.request,
                      workDir: join(paths.root, '.cache', 'bench', 'requests'),
                    },
                    level,
                    n,
                    latencies.get(id)!,
                    done,
                  )
                : await measure(t, level, n, config.checkEvery, latencies.get(id)!, done),
            );
          }
        }
        for (const id of ids) {
          const res = summarizeLevel(level, chunks.get(id)!, latencies.get(id)!);
          resultOf(results, c.id, id)!.levels.push(res);
          say(
            `  ${pad(impls[id].label, 34)} c=${pad(String(level), 3)} ${pad(f(res.throughput, 0), 6, true)} calls/s  p50 ${f(res.latencyMs.p50)}  p99 ${f(res.latencyMs.p99)} ms  cpu ${f(res.cpuMsPerCall, 3)} ms/call  rss ${f(res.peakRssMb, 1)} MB  cores: server ${f(res.serverCores)}, client ${f(res.clientCores)} (${f(res.clientCpuMsPerCall, 3)} ms/call)`,
          );
        }
      }
    } finally {
      for (const r of running.values()) await r.stop();
    }
  }
  return { results, profiledPids };
}
