// The reconcile loop against a real kube-apiserver: Crossplane's part
// (test/support/reconciler.ts: observe through resourceRefs, call the
// function, delete what it left out, server-side apply the rest, apply the
// XR's status) and the controllers' part (test/support/controllers.ts: the
// status each would write), until the composite's stored status says ready.
// A blue/green cutover and a Database of each placement go all the way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ApiServer, apiServerSkipReason, type Json, startApiServer } from '../support/apiserver.js';
import { ensureNamespace, prepareCluster } from '../support/cluster.js';
import { finishForegroundDeletion, settleComposed } from '../support/controllers.js';
import { readYamlDocs } from '../support/crank.js';
import { adoptXr, converge, describeRounds, type ReconcileResult, type Round } from '../support/reconciler.js';

const skip = apiServerSkipReason('API server: reconcile loop');

const COLOR_LABEL = 'function-platform.dev/color';

/** The controllers act on everything composed; foreground deletions are finished. */
const everyController = (maxAvailable?: number) => async (r: ReconcileResult) => {
  for (const obj of r.deleted) await finishForegroundDeletion(api.client, obj);
  await settleComposed(api.client, r.composed.values(), maxAvailable === undefined ? {} : { maxAvailable });
};

let api: ApiServer;

function condition(xr: Json, type: string): Json | undefined {
  return (xr['status']?.['conditions'] as Json[] | undefined)?.find((c) => c['type'] === type);
}

function last(rounds: Round[]): Round {
  return rounds[rounds.length - 1]!;
}

async function createExample(file: string, namespace: string, patch: (o: Json) => Json = (o) => o): Promise<Json> {
  const example = readYamlDocs(file)[0]!;
  const { status: _, ...user } = example;
  await ensureNamespace(api.client, namespace);
  const created = await api.client.createObj(patch({ ...user, metadata: { ...user['metadata'], namespace } }), { fieldManager: 'kubectl', fieldValidation: 'Strict' });
  return adoptXr(api.client, created, `${String(example['kind']).toLowerCase()}s.example.com`);
}

function assertConverged(rounds: Round[], what: string): void {
  const end = last(rounds);
  assert.deepEqual(rounds.flatMap((r) => r.rejected), [], `${what}: the server rejected something\n${describeRounds(rounds)}`);
  assert.equal(end.fatal, undefined, `${what}: Fatal\n${describeRounds(rounds)}`);
  assert.equal(end.ready, true, `${what}: never ready\n${describeRounds(rounds)}`);
  assert.equal(end.result.ready, true, `${what}: Crossplane's Ready would not be True\n${describeRounds(rounds)}`);
  assert.equal(condition(end.result.xr, 'Ready')?.['status'], 'True');
  assert.equal(condition(end.result.xr, 'Synced')?.['status'], 'True');
  // Unknown fields are dropped with a warning (the server's default for controllers): none may be.
  assert.deepEqual(api.client.warnings, [], `${what}: the server dropped fields`);
}

describe('the reconcile loop against a real API server', { skip }, () => {
  before(async () => {
    api = await startApiServer();
    console.log(`# kube-apiserver ready at ${api.url} in ${api.startupMs} ms`);
    await prepareCluster(api.client, 'namespaced', api.caPem);
  });
  after(async () => {
    await api?.stop();
  });

  it('a Widget becomes ready, then goes blue to green: green at full size first, traffic switched, then blue removed', async (t) => {
    const ref = await createExample('examples/widget/seed.yaml', 'team-a');
    const first = await converge(api.client, ref, everyController());
    t.diagnostic(`blue:\n${describeRounds(first)}`);
    assertConverged(first, 'blue');
    assert.equal(last(first).result.xr['status']['activeColor'], 'blue');
    assert.equal(last(first).result.xr['status']['availableReplicas'], 42);
    const blueService = [...last(first).result.composed.values()].find((o) => o['kind'] === 'Service')!;
    assert.ok(blueService['spec']['clusterIP'], 'the server allocated a cluster IP');

    // The user changes the color.
    const stored = (await api.client.getObj(ref))!;
    await api.client.updateObj({ ...stored, spec: { ...stored['spec'], color: 'green' } }, { fieldManager: 'kubectl', fieldValidation: 'Strict' });
    // Green rolls out in two steps: 12 replicas, then all.
    let steps = 0;
    const cutover = await converge(api.client, ref, async (r) => {
      await everyController(steps++ === 0 ? 12 : undefined)(r);
    }, 10);
    t.diagnostic(`cutover:\n${describeRounds(cutover)}`);
    assertConverged(cutover, 'cutover');

    const serviceColor = (r: Round) => [...r.result.composed.values()].find((o) => o['kind'] === 'Service')?.['spec']?.['selector']?.[COLOR_LABEL];
    const green = (r: Round) => [...r.result.composed.values()].find((o) => o['kind'] === 'Deployment' && o['metadata']['labels']?.[COLOR_LABEL] === 'green');
    const switched = cutover.findIndex((r) => serviceColor(r) === 'green');
    assert.ok(switched > 0, `the Service never switched, or switched before green existed\n${describeRounds(cutover)}`);
    assert.equal(serviceColor(cutover[0]!), 'blue', 'traffic stays on blue while green starts');
    assert.ok(cutover.some((r) => /switching traffic from blue to green/.test(r.message)), describeRounds(cutover));
    // When the Service switched, green was fully available on the server (its status, as the controller wrote it).
    const greenAtSwitch = green(cutover[switched]!)!;
    assert.equal(greenAtSwitch['status']['availableReplicas'], greenAtSwitch['spec']['replicas']);
    // Blue left desired state only after the switch was observed, and it is gone from the server.
    const removed = cutover.findIndex((r) => r.deleted.length > 0);
    assert.ok(removed >= switched, describeRounds(cutover));
    const deployments = await api.client.listObjs('apps/v1', 'Deployment', 'team-a');
    assert.deepEqual(deployments.map((d) => d['metadata']['labels'][COLOR_LABEL]), ['green']);
    assert.equal(last(cutover).result.xr['status']['activeColor'], 'green');
    assert.equal(condition(last(cutover).result.xr, 'WidgetReady')?.['status'], 'True');
  });

  it('a Database in the cluster becomes ready: StatefulSet, Services, Secret, CronJob', async (t) => {
    const ref = await createExample('examples/database/cluster.yaml', 'team-a');
    const rounds = await converge(api.client, ref, everyController());
    t.diagnostic(describeRounds(rounds));
    assertConverged(rounds, 'cluster Database');
    const xr = last(rounds).result.xr;
    assert.equal(xr['status']['phase'], 'Ready');
    assert.equal(condition(xr, 'DatabaseReady')?.['status'], 'True');
    const secret = await api.client.getObj({ apiVersion: 'v1', kind: 'Secret', metadata: { name: xr['status']['connectionSecret'], namespace: 'team-a' } });
    assert.ok(secret, `connection Secret ${xr['status']['connectionSecret']} exists`);
    for (const key of ['host', 'port', 'dbname', 'username', 'password', 'uri', 'jdbc-uri']) assert.ok(secret['data']?.[key], `Secret has ${key}`);
    assert.ok((await api.client.listObjs('apps/v1', 'StatefulSet', 'team-a')).length === 1);
  });

  it('a highly available Database in the cluster becomes ready through provider-kubernetes and CloudNativePG', async (t) => {
    const ref = await createExample('examples/database/cluster-ha.yaml', 'team-ha');
    const rounds = await converge(api.client, ref, everyController());
    t.diagnostic(describeRounds(rounds));
    assertConverged(rounds, 'HA cluster Database');
    const clusters = await api.client.listObjs('postgresql.cnpg.io/v1', 'Cluster', 'team-ha');
    assert.equal(clusters.length, 1, 'provider-kubernetes created the CloudNativePG Cluster');
    assert.equal(last(rounds).result.xr['status']['phase'], 'Ready');
  });

  it('a Database on AWS becomes ready: RDS Instance Ready with atProvider, its connection Secret, the backup bucket', async (t) => {
    const ref = await createExample('examples/database/aws.yaml', 'team-aws');
    const rounds = await converge(api.client, ref, everyController());
    t.diagnostic(describeRounds(rounds));
    assertConverged(rounds, 'AWS Database');
    const xr = last(rounds).result.xr;
    assert.equal(xr['status']['phase'], 'Ready');
    assert.match(String(xr['status']['endpoint']), /rds\.amazonaws\.com:5432$/);
    const instances = await api.client.listObjs('rds.aws.m.upbound.io/v1beta1', 'Instance', 'team-aws');
    assert.equal(instances.length, 1);
    assert.equal(instances[0]!['status']['atProvider']['status'], 'available');
    assert.ok((await api.client.listObjs('s3.aws.m.upbound.io/v1beta1', 'Bucket', 'team-aws')).length === 1);
  });
});
