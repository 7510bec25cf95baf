// Closed by default: each Database in the cluster composes a NetworkPolicy
// that admits its own namespace's pods (the applications, and its own backup
// and restore Jobs) to the database port, and the namespaces the platform
// lists; a CloudNativePG Database also admits its operator (8000 and 5432) and
// its instances to each other. What it admits is read with Kubernetes'
// semantics (test/support/network-policy.ts): no CNI here enforces it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import {
  answered,
  asObserved,
  CNPG_CRD_OBJECT,
  call,
  completedBackup,
  databaseXr,
  desiredOf,
  fatalOf,
  inner,
  NAMESPACE,
  type Required,
} from '../support/database.js';
import { admits, type Pod } from '../support/network-policy.js';
import { healthyStatus } from '../support/observed-state.js';

const input = (network: Obj): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  defaults: { database: { network } },
});
const callWith = (inp: Obj | undefined, xr: Obj, required: Required = {}): RunFunctionResponse =>
  runFunction(buildRequest(xr, [], [], inp, required));

/** The pod labels of a composed workload's template (StatefulSet, Job), in its namespace. */
function podOf(workload: Obj): Pod {
  const meta = workload['metadata'] as Obj;
  const template = (workload['spec'] as Obj)['template'] as Obj;
  return {
    namespace: String(meta['namespace']),
    labels: ((template['metadata'] as Obj)['labels'] ?? {}) as Record<string, string>,
  };
}

const app: Pod = { namespace: NAMESPACE, labels: { app: 'shop' } };
const elsewhere: Pod = { namespace: 'team-b', labels: { app: 'shop' } };
const unlabelled: Pod = { namespace: NAMESPACE, labels: {} };

describe('a NetworkPolicy per Database in a StatefulSet', () => {
  const rsp = call(databaseXr({ engine: 'postgres', storageGB: 20 }));
  const policy = desiredOf(rsp, 'network-policy')!;
  const server = podOf(desiredOf(rsp, 'statefulset')!);

  test('it selects the server pods and admits only its own namespace, on the database port', () => {
    assert.equal(fatalOf(rsp), undefined);
    assert.equal(policy['kind'], 'NetworkPolicy');
    assert.equal((policy['metadata'] as Obj)['namespace'], NAMESPACE);
    assert.deepEqual((policy['spec'] as Obj)['policyTypes'], ['Ingress'], 'the server may still reach S3 and DNS');
    assert.equal(admits(policy, app, server, 5432), true);
    assert.equal(admits(policy, unlabelled, server, 5432), true, 'any pod of the namespace, whatever its labels');
    assert.equal(admits(policy, elsewhere, server, 5432), false, 'another namespace is refused');
    assert.equal(admits(policy, app, server, 22), false, 'only the database port');
    assert.equal(
      admits(policy, app, { namespace: NAMESPACE, labels: { 'app.kubernetes.io/name': 'widget' } }, 8080),
      'not-selected',
      'other pods of the namespace are not its business',
    );
  });

  test('its backup Job and its restore Job reach it', () => {
    const backup = call(
      {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: { name: 'orders-before-migration', namespace: NAMESPACE, uid: 'uid-b' },
        spec: { databaseRef: { name: 'orders' } },
      },
      [],
      answered({ database: [databaseXr({ engine: 'postgres', storageGB: 20 })] }),
    );
    const dump = desiredOf(backup, 'dump-1');
    assert.ok(dump, 'the dump Job is composed');
    assert.equal(admits(policy, podOf(dump), server, 5432), true);
    // A Database made from a backup: its restore Job, once its empty server runs.
    const copy = databaseXr(
      { engine: 'postgres', storageGB: 20, restore: { fromBackup: { name: 'orders-db-202612020300' } } },
      { name: 'orders-copy' },
    );
    const found = answered({ 'restore-backup': [completedBackup('orders-db-202612020300', 'orders')] });
    const waiting = call(copy, [], found);
    const observed = asObserved(waiting, (_key, obj) => healthyStatus(obj));
    for (const o of observed) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
    const running = call({ ...copy, status: { phase: 'Restoring' } }, observed, found);
    const job = desiredOf(running, 'restore');
    assert.ok(job, 'the restore Job is composed');
    const copyPolicy = desiredOf(running, 'network-policy')!;
    const copyServer = podOf(desiredOf(running, 'statefulset')!);
    assert.equal(admits(copyPolicy, podOf(job), copyServer, 5432), true);
    assert.equal(admits(copyPolicy, podOf(job), server, 5432), 'not-selected', "each Database's policy is its own");
  });

  test('a restored generation of the StatefulSet is under the same policy', () => {
    const restored = { ...server, labels: { ...server.labels, 'function-platform.dev/role': 'restore-r1' } };
    assert.equal(admits(policy, elsewhere, restored, 5432), false);
    assert.equal(admits(policy, app, restored, 5432), true);
  });

  test('MySQL: its own port', () => {
    const my = call(databaseXr({ engine: 'mysql', storageGB: 20 }));
    const p = desiredOf(my, 'network-policy')!;
    const s = podOf(desiredOf(my, 'statefulset')!);
    assert.equal(admits(p, app, s, 3306), true);
    assert.equal(admits(p, app, s, 5432), false);
  });

  test("the platform's allowNamespaces widen it, and only by those names", () => {
    const wide = callWith(
      input({ allowNamespaces: ['monitoring', 'team-b', 'monitoring'] }),
      databaseXr({ engine: 'postgres', storageGB: 20 }),
    );
    const p = desiredOf(wide, 'network-policy')!;
    assert.equal(admits(p, elsewhere, server, 5432), true);
    assert.equal(admits(p, { namespace: 'monitoring', labels: {} }, server, 5432), true);
    assert.equal(admits(p, { namespace: 'team-c', labels: {} }, server, 5432), false);
  });

  test('a wrong or unknown network field in the Input is Fatal, naming it, and nothing is composed', () => {
    for (const [network, named] of [
      [{ allowNamespaces: ['Team_B'] }, /allowNamespaces/],
      [{ allowNamespace: ['team-b'] }, /allowNamespace/],
      [{ cnpgOperatorNamespace: '' }, /cnpgOperatorNamespace/],
    ] as const) {
      const bad = callWith(input(network), databaseXr({ engine: 'postgres', storageGB: 20 }));
      const fatal = fatalOf(bad);
      assert.ok(fatal, JSON.stringify(network));
      assert.match(fatal.message, /defaults\.database\.network/);
      assert.match(fatal.message, named);
      assert.deepEqual(Object.keys(bad.desired?.resources ?? {}), []);
    }
  });

  test('a Database on AWS composes none', () => {
    const aws = call(databaseXr({ engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } }));
    assert.equal(desiredOf(aws, 'network-policy'), undefined);
  });
});

describe('a NetworkPolicy per highly available Database (CloudNativePG)', () => {
  const ha = databaseXr({ engine: 'postgres', storageGB: 20, highAvailability: true }, { name: 'catalog' });
  const installed = answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] });
  // CloudNativePG labels each instance pod with its Cluster's name.
  const instance: Pod = {
    namespace: NAMESPACE,
    labels: { 'cnpg.io/cluster': 'catalog-db', 'cnpg.io/instanceRole': 'primary' },
  };
  const operatorPod = (namespace: string): Pod => ({
    namespace,
    labels: { 'app.kubernetes.io/name': 'cloudnative-pg' },
  });

  test('it selects the Cluster’s instances; the operator reaches 8000 and 5432, the instances each other', () => {
    const rsp = call(ha, [], installed);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const cluster = inner(desiredOf(rsp, 'cnpg-cluster'))!;
    assert.equal((cluster['metadata'] as Obj)['name'], instance.labels['cnpg.io/cluster'], 'the pods it selects');
    const policy = desiredOf(rsp, 'network-policy')!;
    assert.equal(admits(policy, app, instance, 5432), true);
    assert.equal(admits(policy, elsewhere, instance, 5432), false);
    assert.equal(admits(policy, operatorPod('cnpg-system'), instance, 8000), true);
    assert.equal(admits(policy, operatorPod('cnpg-system'), instance, 5432), true);
    assert.equal(admits(policy, { namespace: 'cnpg-system', labels: {} }, instance, 8000), false, 'only the operator');
    assert.equal(admits(policy, operatorPod('team-b'), instance, 8000), false, 'not a look-alike elsewhere');
    assert.equal(admits(policy, app, instance, 8000), false, 'the instance manager is not for applications');
    const standby = {
      namespace: NAMESPACE,
      labels: { 'cnpg.io/cluster': 'catalog-db', 'cnpg.io/instanceRole': 'replica' },
    };
    assert.equal(admits(policy, standby, instance, 8000), true);
  });

  test("the operator's namespace is the platform's to name", () => {
    const rsp = callWith(input({ cnpgOperatorNamespace: 'postgres-operator' }), ha, installed);
    const policy = desiredOf(rsp, 'network-policy')!;
    assert.equal(admits(policy, operatorPod('postgres-operator'), instance, 8000), true);
    assert.equal(admits(policy, operatorPod('cnpg-system'), instance, 8000), false);
  });

  test('without the operator there is no Cluster, and no policy selecting nothing', () => {
    const rsp = call(ha, [], answered({ 'cnpg-crd': [] }));
    assert.equal(desiredOf(rsp, 'network-policy'), undefined);
  });
});
