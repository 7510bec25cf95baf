import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { judge } from '../../src/kinds/index.js';

const dep = (status: object, spec: object = { replicas: 3 }, generation = 2) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', generation },
  spec,
  status,
});

describe('readiness per kind', () => {
  test('nothing observed is not ready', () => {
    assert.deepEqual(judge(undefined), { state: 'absent', ready: false, detail: 'not created yet' });
  });

  test('Deployment: available at full size, current generation, Available condition', () => {
    const ok = {
      observedGeneration: 2,
      updatedReplicas: 3,
      availableReplicas: 3,
      conditions: [{ type: 'Available', status: 'True' }],
    };
    assert.equal(judge(dep(ok)).ready, true);
    assert.equal(
      judge(dep({ ...ok, observedGeneration: 1 })).ready,
      false,
      'a stale observedGeneration speaks of an older spec',
    );
    assert.match(judge(dep({ ...ok, observedGeneration: 1 })).detail, /rollout pending/);
    assert.equal(judge(dep({ ...ok, availableReplicas: 1 })).detail, '1/3 replicas available');
    assert.equal(judge(dep({ ...ok, updatedReplicas: 2 })).ready, false);
    assert.equal(judge(dep({ ...ok, conditions: [{ type: 'Available', status: 'False' }] })).ready, false);
    const stuck = judge(
      dep({
        ...ok,
        availableReplicas: 0,
        conditions: [
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'ReplicaSet "d-1" has timed out progressing.',
          },
        ],
      }),
    );
    assert.equal(stuck.ready, false);
    assert.match(stuck.detail, /^rollout stuck \(0\/3 replicas available\)/);
    assert.equal(
      judge(dep({ observedGeneration: 2, updatedReplicas: 1, availableReplicas: 1 }, {})).ready,
      true,
      'replicas defaults to 1',
    );
  });

  test('StatefulSet: ready replicas and a finished rolling update', () => {
    const sts = (status: object) => ({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { generation: 1 },
      spec: { replicas: 2 },
      status,
    });
    assert.equal(
      judge(sts({ observedGeneration: 1, readyReplicas: 2, currentRevision: 'a', updateRevision: 'a' })).ready,
      true,
    );
    assert.equal(
      judge(sts({ observedGeneration: 1, readyReplicas: 2, currentRevision: 'a', updateRevision: 'b' })).ready,
      false,
    );
    assert.equal(judge(sts({ observedGeneration: 1, readyReplicas: 1 })).detail, '1/2 replicas ready');
  });

  test('Service: ClusterIP once it has an IP; LoadBalancer once it has an address', () => {
    assert.equal(judge({ apiVersion: 'v1', kind: 'Service', spec: { clusterIP: '10.0.0.1' } }).ready, true);
    assert.equal(judge({ apiVersion: 'v1', kind: 'Service', spec: { clusterIP: 'None' } }).ready, true);
    assert.equal(judge({ apiVersion: 'v1', kind: 'Service', spec: {} }).ready, false);
    const lb = { apiVersion: 'v1', kind: 'Service', spec: { type: 'LoadBalancer', clusterIP: '10.0.0.2' } };
    assert.deepEqual(judge(lb), { state: 'progressing', ready: false, detail: 'waiting for a load-balancer address' });
    assert.equal(
      judge({ ...lb, status: { loadBalancer: { ingress: [{ hostname: 'x.elb.amazonaws.com' }] } } }).ready,
      true,
    );
  });

  test('Ingress with and without a load-balancer address', () => {
    const ing = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', spec: {} };
    assert.equal(judge(ing).ready, false);
    assert.equal(judge({ ...ing, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } }).ready, true);
    assert.equal(judge({ ...ing, status: { loadBalancer: { ingress: [{}] } } }).ready, false);
  });

  test('Secret, ConfigMap and NetworkPolicy are ready once they exist', () => {
    assert.equal(judge({ apiVersion: 'v1', kind: 'Secret' }).ready, true);
    assert.equal(judge({ apiVersion: 'v1', kind: 'ConfigMap' }).ready, true);
    assert.equal(judge({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' }).ready, true);
  });

  test('PrometheusRule: ready once it exists (it has no status); absent, it is not', () => {
    const rule = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'orders-db' } };
    assert.deepEqual(judge(rule).state, 'ready');
    assert.equal(judge(undefined).ready, false);
    // Unknown to the registry, an extension kind with no Ready condition would wait for one for ever.
    assert.equal(judge({ ...rule, apiVersion: 'monitoring.example.com/v1' }).ready, false);
  });

  test('cert-manager Certificate: by its Ready condition; a failed issuance is stuck, with its reason', () => {
    const cert = (status: object | undefined) => ({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'c' },
      ...(status ? { status } : {}),
    });
    assert.deepEqual(judge(cert(undefined)), {
      state: 'progressing',
      ready: false,
      detail: 'waiting for cert-manager to issue it',
    });
    assert.equal(judge(cert({ conditions: [{ type: 'Ready', status: 'True', reason: 'Ready' }] })).state, 'ready');
    const notYet = {
      type: 'Ready',
      status: 'False',
      reason: 'DoesNotExist',
      message: 'Issuing certificate as Secret does not exist',
    };
    assert.deepEqual(judge(cert({ conditions: [notYet, { type: 'Issuing', status: 'True' }] })), {
      state: 'progressing',
      ready: false,
      detail: 'not ready (DoesNotExist: Issuing certificate as Secret does not exist)',
    });
    const failedIssuing = { type: 'Issuing', status: 'False', reason: 'Failed', message: 'ACME order failed' };
    assert.deepEqual(judge(cert({ conditions: [notYet, failedIssuing], failedIssuanceAttempts: 1 })), {
      state: 'stuck',
      ready: false,
      detail: 'issuance failed 1 time (ACME order failed)',
    });
    // A renewal that fails while the old certificate is still valid: the Secret still serves.
    assert.equal(
      judge(cert({ conditions: [{ type: 'Ready', status: 'True' }, failedIssuing], failedIssuanceAttempts: 3 })).state,
      'ready',
    );
  });

  test('PVC is ready when Bound', () => {
    assert.equal(judge({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', status: { phase: 'Bound' } }).ready, true);
    assert.deepEqual(judge({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', status: { phase: 'Pending' } }), {
      state: 'progressing',
      ready: false,
      detail: 'volume Pending',
    });
  });

  test('Job: complete, failed, running; CronJob: scheduled unless suspended', () => {
    const job = (conditions: object[]) => ({ apiVersion: 'batch/v1', kind: 'Job', status: { conditions } });
    assert.equal(judge(job([{ type: 'Complete', status: 'True' }])).ready, true);
    assert.match(
      judge(job([{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }])).detail,
      /failed: BackoffLimitExceeded/,
    );
    assert.equal(judge(job([])).ready, false);
    assert.equal(judge({ apiVersion: 'batch/v1', kind: 'CronJob', spec: {} }).ready, true);
    assert.equal(judge({ apiVersion: 'batch/v1', kind: 'CronJob', spec: { suspend: true } }).ready, false);
  });

  test('HPA, PDB', () => {
    const hpa = (conditions: object[]) => ({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      status: { conditions },
    });
    assert.equal(judge(hpa([{ type: 'AbleToScale', status: 'True' }])).ready, true);
    assert.equal(judge(hpa([{ type: 'AbleToScale', status: 'False', message: 'no scale' }])).ready, false);
    assert.equal(judge(hpa([])).ready, false);
    const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { generation: 2 } };
    assert.equal(judge({ ...pdb, status: { observedGeneration: 2 } }).ready, true);
    assert.equal(judge({ ...pdb, status: { observedGeneration: 1 } }).ready, false);
    assert.equal(judge(pdb).ready, false);
  });

  test('managed resources by their Ready condition; CNPG by phase; provider-kubernetes Object by what it wraps', () => {
    const mr = (status?: object) => ({
      apiVersion: 'rds.aws.m.upbound.io/v1beta1',
      kind: 'Instance',
      ...(status ? { status } : {}),
    });
    assert.equal(judge(mr()).ready, false);
    assert.equal(judge(mr({ conditions: [{ type: 'Ready', status: 'True' }] })).ready, true);
    assert.match(
      judge(mr({ conditions: [{ type: 'Ready', status: 'False', reason: 'Creating' }] })).detail,
      /Creating/,
    );
    const cnpg = (phase?: string) => ({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      status: { phase, readyInstances: 2, instances: 2 },
    });
    assert.equal(judge(cnpg('Cluster in healthy state')).ready, true);
    assert.equal(
      judge(cnpg('Waiting for the instances to become active')).ready,
      false,
      'ready counts do not decide, the phase does',
    );
    const object = (manifest: object | undefined, ready = 'True') => ({
      apiVersion: 'kubernetes.crossplane.io/v1alpha2',
      kind: 'Object',
      status: { conditions: [{ type: 'Ready', status: ready }], atProvider: manifest ? { manifest } : {} },
    });
    assert.equal(
      judge(object(dep({ observedGeneration: 2, updatedReplicas: 3, availableReplicas: 1 }))).ready,
      false,
      'the Object is Ready but its Deployment is not',
    );
    assert.equal(judge(object(dep({ observedGeneration: 2, updatedReplicas: 3, availableReplicas: 3 }))).ready, true);
    assert.equal(judge(object(undefined)).ready, false);
  });

  test('anything being deleted is not ready', () => {
    assert.equal(
      judge({ apiVersion: 'v1', kind: 'Secret', metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' } }).ready,
      false,
    );
  });
});

describe('the platform’s own kinds and the Barman Cloud plugin', () => {
  test('a DatabaseBackup by its phase; it holds data; an ObjectStore once it exists', async () => {
    const { holdsData } = await import('../../src/kinds/index.js');
    const backup = (status?: object) => ({
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: { name: 'b' },
      ...(status ? { status } : {}),
    });
    assert.equal(judge(backup({ phase: 'Completed' })).state, 'ready');
    const failed = judge(backup({ phase: 'Failed', failureReason: 'dump was killed for memory' }));
    assert.equal(failed.state, 'failed');
    assert.equal(failed.detail, 'dump was killed for memory');
    assert.equal(judge(backup({ phase: 'Running' })).state, 'progressing');
    assert.equal(judge(backup()).detail, 'pending');
    assert.equal(holdsData(backup()), true);
    const store = { apiVersion: 'barmancloud.cnpg.io/v1', kind: 'ObjectStore', metadata: { name: 's' } };
    assert.equal(judge(store).state, 'ready');
    assert.equal(holdsData(store), false);
  });
});

describe('verdict states: what code decides on, never read out of the detail', () => {
  const dep = (status: object, generation = 2) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', generation },
    spec: { replicas: 3 },
    status,
  });
  const full = {
    observedGeneration: 2,
    updatedReplicas: 3,
    availableReplicas: 3,
    conditions: [{ type: 'Available', status: 'True' }],
  };
  test('a Deployment: ready, updating (new spec), progressing (pods coming back), stuck (deadline)', () => {
    assert.equal(judge(dep(full)).state, 'ready');
    assert.equal(judge(dep({ ...full, observedGeneration: 1 })).state, 'updating');
    assert.equal(judge(dep({ ...full, updatedReplicas: 1 })).state, 'updating');
    assert.equal(judge(dep({ ...full, availableReplicas: 1 })).state, 'progressing');
    assert.equal(
      judge(
        dep({ ...full, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }),
      ).state,
      'stuck',
    );
  });
  test('a Job that failed is failed; an RDS instance says from AWS whether it is changing or failed', () => {
    assert.equal(
      judge({
        apiVersion: 'batch/v1',
        kind: 'Job',
        status: { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] },
      }).state,
      'failed',
    );
    const rds = (status: string) => ({
      apiVersion: 'rds.aws.m.upbound.io/v1beta1',
      kind: 'Instance',
      status: { atProvider: { status }, conditions: [{ type: 'Ready', status: 'False', reason: 'Unavailable' }] },
    });
    assert.equal(judge(rds('modifying')).state, 'updating');
    assert.equal(judge(rds('configuring-log-exports')).state, 'updating');
    assert.equal(judge(rds('storage-full')).state, 'failed');
    assert.equal(judge(rds('creating')).state, 'progressing');
  });
  test('a provider-kubernetes Object carries the state of what it wraps', () => {
    const obj = {
      apiVersion: 'kubernetes.crossplane.io/v1alpha2',
      kind: 'Object',
      status: {
        conditions: [{ type: 'Ready', status: 'True' }],
        atProvider: { manifest: dep({ ...full, observedGeneration: 1 }) },
      },
    };
    assert.equal(judge(obj).state, 'updating');
  });
});
