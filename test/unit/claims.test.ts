// Claims mode: the same user YAML as a claim, its cluster-scoped composite
// composing provider-kubernetes Objects and cluster-scoped managed resources.
// The user must not be able to tell the modes apart from the status.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Target } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { render } from '../../src/render.js';
import { Loop } from '../support/loop.js';

/** The same object in each mode: a namespaced XR, or the composite Crossplane makes from the claim. */
function inMode(mode: 'namespaced' | 'claims', kind: string, name: string, namespace: string, spec: Obj): Obj {
  if (mode === 'namespaced') return { apiVersion: 'example.com/v1', kind, metadata: { name, namespace }, spec };
  return {
    apiVersion: 'example.com/v1',
    kind: `X${kind}`,
    metadata: {
      name: `${name}-x7k2p`,
      uid: `uid-${namespace}-${name}`,
      labels: { 'crossplane.io/claim-name': name, 'crossplane.io/claim-namespace': namespace },
    },
    spec: { ...spec, claimRef: { apiVersion: 'example.com/v1', kind, name, namespace } },
  };
}

type Step = (loop: Loop) => void;

/** Runs the same reconcile story in a mode and returns what the user sees after each step. */
function story(mode: 'namespaced' | 'claims', kind: string, spec: Obj, steps: Step[]): Obj[] {
  const loop = new Loop(inMode(mode, kind, 'app', 'team-a', spec));
  const seen: Obj[] = [];
  for (const step of [() => undefined, ...steps]) {
    step(loop);
    loop.apply(loop.call());
    const status = { ...loop.status() };
    seen.push({
      status,
      condition: loop.last!.conditions.map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`),
    });
  }
  return seen;
}

const mrReady =
  (key: string, atProvider: Obj = {}): Step =>
  (loop) => {
    const obj = loop.observed.get(key)!;
    obj['status'] = { conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }], atProvider };
  };

describe('claims mode', () => {
  test('an XWidget made from a claim composes provider-kubernetes Objects into the claim namespace', () => {
    const xr = inMode('claims', 'Widget', 'web', 'team-b', { color: 'blue', size: 2 });
    const out = render(xr);
    assert.equal(out.fatal, undefined);
    for (const obj of out.resources) {
      assert.equal(obj['apiVersion'], 'kubernetes.crossplane.io/v1alpha2');
      assert.equal(obj['kind'], 'Object');
      const manifest = ((obj['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
      assert.equal((manifest['metadata'] as Obj)['namespace'], 'team-b');
      assert.equal((obj['metadata'] as Obj)['namespace'], undefined, 'Objects are cluster-scoped');
    }
    const kinds = out.resources
      .map((o) => String((((o['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj)['kind']))
      .sort();
    // The budget comes once the Deployment is available (issue 26), wrapped the same way.
    assert.deepEqual(kinds, ['Deployment', 'Service']);
    const loop = new Loop(xr);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.call();
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'pdb', 'service']);
    const budget = loop.last!.desired!.resources['pdb']!.resource as Obj;
    assert.equal(budget['kind'], 'Object');
    assert.equal(
      ((((budget['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj)['metadata'] as Obj)['namespace'],
      'team-b',
    );
  });

  test('Object names cannot collide between namespaces, nor between kinds of the same name', () => {
    // With the budget, which shares the Service's name (it comes once the Deployment is available).
    const names = (ns: string) => {
      const loop = new Loop(inMode('claims', 'Widget', 'web', ns, { size: 2 }));
      loop.apply(loop.call());
      loop.rollOut('deployment-blue');
      const rsp = loop.call();
      return Object.values(rsp.desired!.resources).map((r) => String(((r.resource as Obj)['metadata'] as Obj)['name']));
    };
    const a = names('team-a');
    const b = names('team-b');
    assert.equal(a.length, 3, `Deployment, Service and budget: ${a.join(', ')}`);
    assert.equal(new Set(a).size, a.length, `unique within one claim: ${a.join(', ')}`);
    assert.deepEqual(
      a.filter((n) => b.includes(n)),
      [],
    );
  });

  test('a claim Database on AWS uses the cluster-scoped groups with Secrets in the claim namespace', () => {
    const out = render(
      inMode('claims', 'Database', 'orders', 'team-a', { placement: 'aws', aws: { region: 'eu-west-1' } }),
    );
    const instance = out.resources.find((o) => o['kind'] === 'Instance')!;
    assert.equal(instance['apiVersion'], 'rds.aws.upbound.io/v1beta3');
    const spec = instance['spec'] as Obj;
    assert.deepEqual(spec['writeConnectionSecretToRef'], { name: 'orders-db-rds', namespace: 'team-a' });
    assert.equal(((spec['forProvider'] as Obj)['passwordSecretRef'] as Obj)['namespace'], 'team-a');
    assert.equal(spec['deletionPolicy'], 'Orphan', 'Retain orphans the instance');
    assert.equal(
      out.resources.find((o) => o['kind'] === 'Bucket'),
      undefined,
      'RDS keeps the backups: no bucket',
    );
    assert.ok(out.resources.every((o) => !String(o['apiVersion']).includes('.m.')));
  });

  test('a claim is ready exactly when its wrapped objects are, not when the Objects are', () => {
    const loop = new Loop(inMode('claims', 'Widget', 'web', 'team-a', { size: 3 }));
    loop.apply(loop.call());
    loop.rollOut('deployment-blue', 1);
    loop.settle();
    loop.call();
    assert.equal(loop.status()['ready'], false, 'every Object reports Ready, but the Deployment has 1/3');
    assert.equal(loop.status()['message'], 'Deployment web-blue: 1/3 replicas available');
    loop.rollOut('deployment-blue');
    loop.apply(loop.call()); // The budget comes now (issue 26); ready once its controller has seen it.
    loop.settle();
    loop.call();
    assert.equal(loop.status()['ready'], true);
  });

  test('status and the custom condition reach the claim', () => {
    const loop = new Loop(inMode('claims', 'Widget', 'web', 'team-a', {}));
    const rsp = loop.call();
    assert.ok(rsp.conditions.every((c) => c.target === Target.TARGET_COMPOSITE_AND_CLAIM));
    assert.ok(rsp.results.every((r) => r.target === Target.TARGET_COMPOSITE_AND_CLAIM));
  });

  const stories: Array<[string, string, Obj, Step[]]> = [
    [
      'Widget blue/green',
      'Widget',
      { color: 'blue', size: 4 },
      [
        (l) => l.rollOut('deployment-blue', 2),
        (l) => {
          l.rollOut('deployment-blue');
          l.settle();
        },
        (l) => (l.xr = { ...l.xr, spec: { ...(l.xr['spec'] as Obj), color: 'green' } }),
        (l) => l.rollOut('deployment-green', 3),
        (l) => l.rollOut('deployment-green'),
        (l) => l.settle(),
      ],
    ],
    [
      'Database in the cluster',
      'Database',
      { storageGB: 10, backup: { objectStore: { bucket: 'team-a-backups', credentialsSecretRef: { name: 'store' } } } },
      [
        (l) => {
          const sts = l.observed.get('statefulset')!;
          sts['status'] = { observedGeneration: 1, readyReplicas: 0 };
        },
        (l) => {
          const sts = l.observed.get('statefulset')!;
          sts['status'] = { observedGeneration: 1, readyReplicas: 1 };
        },
      ],
    ],
    [
      'Database on AWS',
      'Database',
      { placement: 'aws', aws: { region: 'eu-west-1' } },
      [mrReady('rds-instance', { address: 'db.example.internal', port: 5432, status: 'available' })],
    ],
  ];
  for (const [name, kind, spec, steps] of stories) {
    test(`the user sees the same status in both modes: ${name}`, () => {
      const namespaced = story('namespaced', kind, spec, steps);
      const claims = story('claims', kind, spec, steps);
      assert.deepEqual(claims, namespaced);
      assert.ok(namespaced.length === steps.length + 1);
    });
  }
});
