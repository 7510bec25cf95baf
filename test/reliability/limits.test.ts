// Size and shape limits of the real server: a request over 16 MiB is refused
// by gRPC (RESOURCE_EXHAUSTED) before it is parsed, one just under is served,
// an answer too large to send becomes a Fatal result, nesting too deep for
// protobuf is refused, and after each the server keeps serving — on the same
// connection and on new ones — with a sane memory footprint.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Ready, type RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { MAX_REQUEST_BYTES } from '../../src/server.js';
import { rssMb } from '../../bench/proc.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { answerProblems, asReceived, fatalOf } from '../support/invariants.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { alive, dialWire, type WireClient } from '../support/wire.js';

const MiB = 1024 * 1024;
const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;

/** The seed Widget with `bytes` of ballast in an annotation the function never reads. */
function ballast(bytes: number): RunFunctionRequest {
  return buildRequest({
    ...seed,
    metadata: { name: 'ballast', namespace: 'team-a', annotations: { ballast: 'x'.repeat(bytes) } },
  });
}

/** Resident memory of a process, in MiB, from /proc. */
describe('limits of the gRPC server', () => {
  let fn: FunctionProcess;
  let client: WireClient;
  before(async () => {
    fn = await startFunction({ insecure: true });
    client = dialWire(fn.target);
  });
  after(async () => {
    client.close();
    assert.equal(await fn.stop(), 0, fn.logs());
  });

  async function stillServes(c: WireClient = client): Promise<void> {
    const out = await c.run(buildRequest(seed));
    assert.ok(out.ok, out.ok ? '' : `after that, a normal call failed: ${grpc.status[out.code]} ${out.details}`);
    assert.ok(out.rsp.desired?.resources['deployment-blue'], 'the seed Widget is composed');
  }

  test('a 20 MiB request is refused with RESOURCE_EXHAUSTED, and the server keeps serving', async () => {
    const req = ballast(20 * MiB);
    const out = await client.run(req);
    assert.equal(out.ok, false, 'a 20 MiB request was served');
    if (!out.ok) {
      assert.equal(out.code, grpc.status.RESOURCE_EXHAUSTED, `${grpc.status[out.code]}: ${out.details}`);
      assert.match(out.details, /larger than max \(\d+ vs\.? 16777216\)/, 'the error says the size and the bound');
    }
    assert.ok(alive(fn));
    await stillServes();
    const fresh = dialWire(fn.target);
    try {
      await stillServes(fresh);
    } finally {
      fresh.close();
    }
  });

  test('twenty 20 MiB requests at once: all refused, memory stays bounded, still serving', async () => {
    const before = rssMb(fn.child.pid!);
    const req = ballast(20 * MiB);
    const outs = await Promise.all(Array.from({ length: 20 }, () => client.run(req)));
    for (const out of outs)
      assert.ok(
        !out.ok && out.code === grpc.status.RESOURCE_EXHAUSTED,
        out.ok ? 'served' : `${grpc.status[out.code]}: ${out.details}`,
      );
    const afterRss = rssMb(fn.child.pid!);
    // 400 MiB were sent; what is refused early is not buffered whole.
    assert.ok(afterRss - before < 200, `resident memory grew from ${before.toFixed(0)} to ${afterRss.toFixed(0)} MiB`);
    await stillServes();
  });

  test('a request just under the bound (15 MiB) is served', async () => {
    const req = ballast(15 * MiB);
    const out = await client.run(req);
    assert.ok(out.ok, out.ok ? '' : `${grpc.status[out.code]}: ${out.details}`);
    assert.equal(fatalOf(out.rsp), undefined);
    assert.deepEqual(answerProblems(asReceived(req), out.rsp, { wellFormed: true }), []);
    assert.equal(((out.rsp.desired!.resources['deployment-blue']!.resource as Obj)['spec'] as Obj)['replicas'], 42);
    await stillServes();
  });

  test('an answer too large to send is a Fatal result saying so, not a bare gRPC error', async () => {
    // Names this long cannot exist in a cluster, but they show what happens when an answer outgrows the limit:
    // the name reappears in every composed object's labels.
    const name = 'a'.repeat(2 * MiB);
    const req = buildRequest({
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: { name, namespace: 'team-a' },
      spec: {},
    });
    const out = await client.run(req);
    assert.ok(out.ok, out.ok ? '' : `${grpc.status[out.code]}: ${out.details}`);
    const fatal = fatalOf(out.rsp);
    assert.ok(fatal, 'a Fatal result');
    assert.equal(fatal.reason, 'ResponseTooLarge');
    assert.match(
      fatal.message,
      /answer would be \d+\.\d MiB, over the 16\.0 MiB a function may send; nothing was changed/,
    );
    assert.deepEqual(out.rsp.desired?.resources ?? {}, {}, 'nothing composed');
    assert.ok(JSON.stringify(out.rsp).length < MAX_REQUEST_BYTES / 8, 'the Fatal answer is small');
    await stillServes();
  });

  test('nesting deeper than protobuf decodes is refused (INTERNAL), and the server keeps serving', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 60; i++) deep = { nested: deep };
    const out = await client.run(buildRequest({ ...seed, spec: { color: 'blue', deep } }));
    assert.ok(
      !out.ok && out.code === grpc.status.INTERNAL,
      out.ok ? 'served' : `${grpc.status[out.code]}: ${out.details}`,
    );
    await stillServes();
  });

  test('the deepest real input, the CloudNativePG CRD as a required resource, decodes and is used', async () => {
    const crd = parse(
      readFileSync(`${repoRoot}/../shared/crds/cloudnative-pg/postgresql.cnpg.io_clusters.yaml`, 'utf8'),
    ) as Obj;
    const xr = {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: { name: 'ha', namespace: 'team-a' },
      spec: { highAvailability: true },
    };
    const req = buildRequest(xr, [], [], undefined, {
      'cnpg-crd': { items: [{ resource: crd, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED }] },
    });
    const out = await client.run(req);
    assert.ok(out.ok, out.ok ? '' : `${grpc.status[out.code]}: ${out.details}`);
    assert.equal(fatalOf(out.rsp), undefined);
    assert.ok(out.rsp.desired?.resources['cnpg-cluster'], 'the operator is seen as installed: the Cluster is composed');
  });
});
