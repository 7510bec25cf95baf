// Three replicas behind one endpoint, as a DeploymentRuntimeConfig with
// `replicas: 3` makes them. Crossplane's client spreads calls over the pods
// one call at a time (grpc-go's round_robin over the function's headless
// Service: internal/xfn/function_runner.go, v2.2.1), so consecutive calls for
// one composite land on different processes. The harness does the same here:
// call i goes to replica i mod 3, each a real process.
//
// What each process keeps in memory, and what that means with three:
//   - the answer itself keeps nothing: every replica composes the same
//     resources and status from the same request;
//   - events said once (src/events.ts) are said once per replica: a warning
//     up to three times per ten minutes instead of once;
//   - the AWS facts cache (src/aws/facts.ts) is per replica: AWS is asked up to
//     three times per composite and cache lifetime instead of once.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RunFunctionRequest, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { startAws } from '../../bench/aws.js';
import { buildCases, type Case } from '../../bench/cases.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { awsDatabaseRequest } from '../support/aws-requests.js';
import { type FakeAws, startFakeAws } from '../support/fake-aws.js';
import { type FunctionProcess, metricsUrlOf, startFunction } from '../support/function-process.js';
import { type Moto, motoBinary, motoSkipReason } from '../support/moto.js';
import { samples, sum } from '../support/prometheus.js';
import { dialWire, type WireClient } from '../support/wire.js';

const skip = motoSkipReason();

interface Replica {
  fn: FunctionProcess;
  client: WireClient;
  metrics: string;
}

async function startReplica(): Promise<Replica> {
  const fn = await startFunction({ args: ['--metrics-address', '127.0.0.1:0'] });
  return { fn, client: dialWire(fn.target), metrics: await metricsUrlOf(fn) };
}

/** Sends `n` calls of `bytes`, call i to replica i mod replicas.length, one at a time as a reconcile loop would. */
async function roundRobin(replicas: Replica[], bytes: Uint8Array, n: number): Promise<RunFunctionResponse[]> {
  const out: RunFunctionResponse[] = [];
  for (let i = 0; i < n; i++) {
    const o = await replicas[i % replicas.length]!.client.runRaw(bytes, 30_000);
    assert.ok(o.ok, o.ok ? '' : `call ${i}: ${o.details}`);
    out.push(o.rsp);
  }
  return out;
}

describe('three replicas behind one endpoint', { skip }, () => {
  let moto: Moto;
  let fakeAws: FakeAws;
  let cases: Case[];
  const three: Replica[] = [];
  let one: Replica;
  before(async () => {
    moto = await startAws(motoBinary()!, mkdtempSync(join(tmpdir(), 'fp-replicas-')));
    fakeAws = await startFakeAws();
    cases = buildCases(repoRoot, { awsEndpoint: moto.endpoint });
    for (let i = 0; i < 3; i++) three.push(await startReplica());
    one = await startReplica();
  });
  after(async () => {
    for (const r of [...three, one]) {
      if (!r) continue;
      r.client.close();
      assert.equal(await r.fn.stop(), 0, r.fn.logs());
    }
    await fakeAws?.close();
    await moto?.stop();
  });

  test('three replicas answer a reconcile loop as one process does, and their status settles', async () => {
    /** Nine calls as Crossplane makes them: each answer's status written to the composite, then read by the next call. */
    const loop = async (replicas: Replica[], c: Case): Promise<RunFunctionResponse[]> => {
      let req = structuredClone(c.request);
      const answers: RunFunctionResponse[] = [];
      for (let i = 0; i < 9; i++) {
        const o = await replicas[i % replicas.length]!.client.run(req, 30_000);
        assert.ok(o.ok, o.ok ? '' : `${c.id} call ${i}: ${o.details}`);
        answers.push(o.rsp);
        const status = o.rsp.desired?.composite?.resource?.['status'];
        req = structuredClone(req);
        if (status && req.observed?.composite?.resource) req.observed.composite.resource['status'] = status;
      }
      return answers;
    };
    /** What Crossplane applies from an answer; `timeless` leaves out the moments each process read AWS at. */
    const composed = (a: RunFunctionResponse, timeless = false) =>
      JSON.stringify(
        { resources: a.desired?.resources, composite: a.desired?.composite, conditions: a.conditions },
        (k, v) => (timeless && (k === 'observedAt' || k === 'latestRestorableTime') ? undefined : v),
      );
    for (const c of cases) {
      const byThree = await loop(three, c);
      const byOne = await loop([one], c);
      for (let i = 0; i < 9; i++)
        assert.equal(
          composed(byThree[i]!, true),
          composed(byOne[i]!, true),
          `${c.id}, call ${i}: three replicas as one`,
        );
      // Each replica read AWS at its own moment; the newest read wins (status never moves back), so from the second
      // round on the three answer alike, down to the moments.
      for (let i = 4; i < 9; i++)
        assert.equal(composed(byThree[i]!), composed(byThree[3]!), `${c.id}, call ${i} settled`);
    }
  });

  test('AWS is asked once per replica and cache lifetime: three times what one process asks', async () => {
    const live = cases.find((c) => c.id === 'database-aws-live');
    assert.ok(live, 'the live AWS case (moto)');
    // The loop above called each process with this composite, within the cache's 30 s; twelve calls more each.
    await roundRobin(three, live.bytes, 12);
    await roundRobin([one], live.bytes, 12);
    const asked = async (r: Replica) =>
      sum(samples(await (await fetch(r.metrics)).text()), 'function_platform_aws_calls_total');
    const byReplica = await Promise.all(three.map(asked));
    const byOne = await asked(one);
    assert.ok(byOne > 0, 'the single process asked AWS');
    assert.deepEqual(byReplica, [byOne, byOne, byOne], 'each replica asked as often as the single process');
    console.log(
      `AWS calls for one composite over 21 calls within the cache's lifetime: 1 process ${byOne}, 3 replicas ${byReplica.join(' + ')}`,
    );
  });

  test('a warning is said once per replica, not once per call', async () => {
    const req = awsDatabaseRequest('replicas', fakeAws.endpoint);
    const warnings = (rsps: RunFunctionResponse[]) =>
      rsps.filter((r) =>
        r.results.some((x) => x.severity === Severity.SEVERITY_WARNING && x.reason === 'AwsUnavailable'),
      ).length;
    const bytes = RunFunctionRequest.encode(req).finish();
    const said3 = warnings(await roundRobin(three, bytes, 9));
    const said1 = warnings(await roundRobin([one], bytes, 9));
    assert.equal(said1, 1, 'one process says it once');
    assert.equal(said3, 3, 'three replicas say it once each');
    console.log(`AwsUnavailable warnings in 9 calls: 1 replica ${said1}, 3 replicas ${said3}`);
  });
});
