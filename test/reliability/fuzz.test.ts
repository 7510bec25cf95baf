// Fuzzing the real server: dist/main.js as a process, RunFunction over gRPC,
// 10,000 generated requests (FUZZ_RUNS for more), many in flight at once.
// What Crossplane would send, the same damaged in every way, and bytes no
// client would encode. Each request goes twice, and a sound answer comes back
// once more with its own desired state observed.
//
// For every answer: a Fatal result with a message and nothing composed of its
// own, or a desired state that loses nothing, marks READY_TRUE only what was
// observed, and is the same both times (a generated password aside); for
// requests Crossplane could send, also valid names and labels, one password
// kept, and names that do not change on the next call. An InternalError
// result (the function's own bug) fails too. Bytes that do not decode are
// refused by gRPC (INTERNAL), nothing else. At the end the process must be
// alive, its stderr clean, and still serving.
//
// FUZZ_RUNS=<n> for more cases; FUZZ_SEED=<n> replays a run (the seed is
// printed); a failure is shrunk against the same server and printed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { RunFunctionRequest, Severity } from '@crossplane-org/function-sdk-typescript';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { fuzzCase, type FuzzCase, nextRequest } from '../support/fuzz-requests.js';
import { answerProblems, fatalOf, fingerprint, identities } from '../support/invariants.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { alive, dialWire, mapConcurrent, type Outcome, watchStderr, type WireClient } from '../support/wire.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const SEED = process.env.FUZZ_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED);
/** Cases generated at a time (each chunk has its own seed, so memory stays flat and any case can be replayed). */
const CHUNK = 500;
/** Cases in flight at once; each is two or three calls. */
const CONCURRENCY = 24;

type Verdict = 'desired' | 'fatal' | 'refused';

interface CaseResult {
  verdict: Verdict;
  problems: string[];
}

function describeOutcome(o: Outcome): string {
  return o.ok
    ? fatalOf(o.rsp)
      ? `Fatal: ${fatalOf(o.rsp)!.message.slice(0, 300)}`
      : 'a desired state'
    : `gRPC ${grpc.status[o.code]}: ${o.details}`;
}

/** Sends one case (twice, and a third time with its answer observed) and says what is wrong with the answers. */
async function runCase(client: WireClient, c: FuzzCase): Promise<CaseResult> {
  // Encoded once, as Crossplane's client would encode it; decoded as the server will.
  const bytes = c.raw ?? RunFunctionRequest.encode(c.request!).finish();
  let received: RunFunctionRequest | undefined;
  try {
    received = RunFunctionRequest.decode(bytes);
  } catch {
    received = undefined; // garbage, or too deep for protobuf: the server must refuse it the same way
  }
  const send = () => client.runRaw(bytes);
  const [first, second] = await Promise.all([send(), send()]);
  if (received === undefined) {
    const problems = [first, second]
      .filter((o) => o.ok || o.code !== grpc.status.INTERNAL)
      .map((o) => `undecodable request answered with ${describeOutcome(o)}, not INTERNAL`);
    return { verdict: 'refused', problems };
  }
  if (!first.ok || !second.ok) {
    return {
      verdict: 'refused',
      problems: [`a decodable request failed: ${describeOutcome(first.ok ? second : first)}`],
    };
  }
  const problems = answerProblems(received, first.rsp, { wellFormed: c.wellFormed });
  // The server says each event once per composite (src/events.ts): the same request twice gives the same
  // answer but for its events, which one of the two carries (or both, when the composite has no uid).
  if (fingerprint(received, first.rsp, { events: false }) !== fingerprint(received, second.rsp, { events: false }))
    problems.push('the same request twice gave different answers');
  const said = (o: typeof first) => (o.ok ? o.rsp.results.filter((r) => r.severity !== Severity.SEVERITY_FATAL) : []);
  const [a, b] = [said(first), said(second)];
  if (!(JSON.stringify(a) === JSON.stringify(b) || a.length === 0 || b.length === 0))
    problems.push('the same request twice gave different events');
  const fatal = fatalOf(first.rsp) !== undefined;
  if (!fatal && c.wellFormed && problems.length === 0) {
    // Crossplane applies the answer; controllers report; the function is called again.
    const nextBytes = RunFunctionRequest.encode(nextRequest(received, first.rsp)).finish();
    const third = await client.runRaw(nextBytes);
    if (!third.ok) problems.push(`the follow-up call failed: ${describeOutcome(third)}`);
    else {
      problems.push(
        ...answerProblems(RunFunctionRequest.decode(nextBytes), third.rsp, { wellFormed: true }).map(
          (p) => `follow-up: ${p}`,
        ),
      );
      if (!fatalOf(third.rsp)) {
        const before = identities(first.rsp);
        for (const [key, id] of identities(third.rsp)) {
          if (before.has(key) && before.get(key) !== id)
            problems.push(`follow-up: ${key} changed identity from ${before.get(key)} to ${id}`);
        }
      }
    }
  }
  return { verdict: fatal ? 'fatal' : 'desired', problems };
}

function preview(c: FuzzCase): string {
  const text = c.raw
    ? `bytes ${Buffer.from(c.raw).toString('hex')}`
    : JSON.stringify(c.request, (_k, v: unknown) =>
        typeof v === 'string' && v.length > 200 ? `${v.slice(0, 60)}…(${v.length} chars)` : v,
      );
  return text.length > 6000 ? `${text.slice(0, 6000)}…` : text;
}

describe('fuzzing the gRPC server', () => {
  let fn: FunctionProcess;
  let stderr: () => string;
  let clients: WireClient[];

  before(async () => {
    fn = await startFunction({ insecure: true });
    stderr = watchStderr(fn);
    // A few connections, as Crossplane's pool of reconcilers would have.
    clients = Array.from({ length: 3 }, () => dialWire(fn.target));
  });
  after(async () => {
    for (const c of clients) c.close();
    await fn.stop();
  });

  test(`${RUNS} generated requests: no crash, every answer sound`, { timeout: 30 * 60_000 }, async (t) => {
    t.diagnostic(`FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`);
    const started = Date.now();
    const counts = new Map<string, number>();
    const bump = (k: string) => counts.set(k, (counts.get(k) ?? 0) + 1);
    const failures: Array<{ chunkSeed: number; index: number; c: FuzzCase; problems: string[] }> = [];
    let done = 0;
    for (let chunk = 0; done < RUNS; chunk++) {
      const chunkSeed = (SEED + chunk) | 0;
      const cases = fc.sample(fuzzCase, { seed: chunkSeed, numRuns: Math.min(CHUNK, RUNS - done) });
      const results = await mapConcurrent(cases, CONCURRENCY, (c, i) => runCase(clients[i % clients.length]!, c));
      results.forEach((r, index) => {
        const c = cases[index]!;
        const family = c.raw ? 'bytes' : c.wellFormed ? 'well-formed' : 'damaged';
        bump(`${family} → ${r.verdict}`);
        if (r.problems.length > 0 && failures.length < 5) failures.push({ chunkSeed, index, c, problems: r.problems });
      });
      done += cases.length;
      assert.ok(alive(fn), `the server died after ${done} cases\n${fn.logs().slice(-4000)}`);
      if (failures.length >= 5) break;
    }
    const seconds = (Date.now() - started) / 1000;
    t.diagnostic(
      `${done} cases in ${seconds.toFixed(1)}s: ${[...counts]
        .sort()
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')}`,
    );

    if (failures.length > 0) {
      const first = failures[0]!;
      // Shrink the first failure against the same server, for a readable counterexample.
      const shrunk = await fc.check(
        fc.asyncProperty(fuzzCase, async (c) => (await runCase(clients[0]!, c)).problems.length === 0),
        { seed: first.chunkSeed, path: String(first.index), numRuns: 1, interruptAfterTimeLimit: 30_000 },
      );
      const example = shrunk.counterexample?.[0];
      const report = failures
        .map((f) => `- case ${f.index} of chunk seed ${f.chunkSeed} (${f.c.label}): ${f.problems.join('; ')}`)
        .join('\n');
      assert.fail(
        `${failures.length} unsound answer(s) (FUZZ_SEED=${SEED}):\n${report}\n` +
          (example
            ? `shrunk (${example.label}): ${(await runCase(clients[0]!, example)).problems.join('; ')}\n${preview(example)}`
            : `first case:\n${preview(first.c)}`),
      );
    }

    // The fuzz meant something: every family was exercised and each answer kind occurred.
    for (const k of [
      'well-formed → desired',
      'well-formed → fatal',
      'damaged → fatal',
      'damaged → desired',
      'bytes → refused',
    ]) {
      assert.ok((counts.get(k) ?? 0) > 0 || RUNS < 200, `no case came out as "${k}"`);
    }

    // Still alive, nothing unhandled on stderr, and still serving.
    assert.ok(alive(fn), 'the server process exited');
    assert.equal(stderr(), '', 'the server wrote to stderr (an unhandled error or warning)');
    assert.doesNotMatch(fn.logs(), /unhandled|uncaught|function failed unexpectedly/i);
    const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;
    const rsp = await clients[0]!.run(buildRequest(seed));
    assert.ok(
      rsp.ok && !fatalOf(rsp.rsp) && rsp.rsp.desired?.resources['deployment-blue'],
      'the seed Widget is still composed',
    );
  });
});
