// Restore drills of CloudNativePG backups, call by call: a Completed backup
// asked for a drill composes a scratch Cluster bootstrapped by recovery from
// the Database's ObjectStore to that backup's end (one instance, archiving
// nothing, labelled as scratch); once the operator says it is healthy, a Job
// counts its tables and rows as its own superuser; the counts, or the
// recovery's failure, are recorded in status.verification, and the scratch
// Cluster and the Job go (the nothing-lost guard lets a scratch instance go,
// and nothing else). The operator's side (the Cluster's phase, its recovery
// Job) is written here as observed state: a STAND-IN for the operator, which
// cannot run here.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
import { SCRATCH_LABEL } from '../../src/kinds/index.js';
import type { Obj } from '../../src/kube.js';
import { guardNothingLost } from '../../src/safety.js';
import { FatalError } from '../../src/errors.js';
import {
  answered,
  asObserved,
  CNPG_CRD_OBJECT,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
  OBJECT_STORE,
  statusOf,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';
import { countJobStatus, countPod as podOfCount } from '../support/drills.js';
import { validateObject } from '../support/schemas.js';

const STORE = { ...OBJECT_STORE, endpoint: 'http://minio.storage:9000' };
const SPEC = {
  engine: 'postgres',
  version: '16',
  storageGB: 50,
  highAvailability: true,
  backup: { objectStore: STORE },
};
const COMPLETED = {
  phase: 'Completed',
  method: 'cnpg',
  instance: 'orders-db',
  completedAt: '2026-12-06T03:04:10Z',
  location: 's3://team-a-backups/orders',
  restorable: true,
};
const NAME = 'orders-db-202612060300';
const REQUEST = '202612070500';
const SCRATCH = `${NAME}-drill-${REQUEST}`;
const JOB = `${NAME}-verify-${REQUEST}`;

const backupXr = (requested?: string, status: Obj = COMPLETED): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'DatabaseBackup',
  metadata: { name: NAME, namespace: NAMESPACE, uid: 'uid-backup' },
  spec: { databaseRef: { name: 'orders' }, ...(requested ? { verification: { requested } } : {}) },
  status,
});
const database = (status?: Obj) => databaseXr(SPEC, { bare: true, ...(status ? { status } : {}) });
const db = answered({ database: [database()] });

/** The CloudNativePG Backup as the operator left it: completed, with its ID in the store. */
function operatorBackup(): Obj {
  const composed = desiredOf(call(backupXr(), [], db), 'cnpg-backup')!;
  const [observed] = asObserved({ desired: { resources: { 'cnpg-backup': { resource: composed } } } } as never, () => ({
    phase: 'completed',
    backupId: '20261206T030012',
    stoppedAt: '2026-12-06T03:04:10Z',
    destinationPath: 's3://team-a-backups/orders',
  }));
  return observed!;
}

/** The scratch Cluster as observed, in the operator's `phase`. */
const scratchObserved = (rsp: ReturnType<typeof call>, status: Obj) =>
  asObserved(rsp, (key) => (key === 'drill-cluster' ? status : key === 'cnpg-backup' ? undefined : undefined)).map(
    (o) => (o['kind'] === 'Backup' ? operatorBackup() : o),
  );
const HEALTHY = { phase: 'Cluster in healthy state', readyInstances: 1, instances: 1 };

const countPod = (verify: Obj) => podOfCount(JOB, NAME, verify);
const jobStatus = (done?: 'Complete' | 'Failed') =>
  countJobStatus('2026-12-07T05:09:05Z', '2026-12-07T05:09:12Z', done);

/** The drill's first call: the backup Completed, the operator's Backup observed. */
const started = (at = '2026-12-07T05:00:00Z') => {
  const restore = setClock(() => new Date(at));
  try {
    return call(backupXr(REQUEST), [operatorBackup()], db);
  } finally {
    restore();
  }
};
const running = (first: ReturnType<typeof call>) =>
  backupXr(REQUEST, { ...COMPLETED, verification: statusOf(first)['verification'] });

describe('a restore drill of a CloudNativePG backup', () => {
  test('asked of a Completed backup: a scratch Cluster recovered from the store to that backup, one instance, archiving nothing', () => {
    const rsp = started();
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const cluster = desiredOf(rsp, 'drill-cluster')!;
    assert.deepEqual(validateObject(cluster), [], 'valid against the real Cluster CRD');
    assert.equal((cluster['metadata'] as Obj)['name'], SCRATCH);
    // The operator's recovery Job is <cluster>-1-full-recovery, and a Job's name is 63 characters at most.
    assert.ok(`${SCRATCH}-1-full-recovery`.length <= 63);
    assert.equal(((cluster['metadata'] as Obj)['labels'] as Obj)[SCRATCH_LABEL], 'drill');
    const spec = cluster['spec'] as Obj;
    assert.equal(spec['instances'], 1);
    assert.equal(spec['imageName'], 'ghcr.io/cloudnative-pg/postgresql:16');
    // Its own superuser counts every table, whoever owns it; the Secret goes with the Cluster.
    assert.equal(spec['enableSuperuserAccess'], true);
    assert.deepEqual(spec['storage'], { size: '50Gi' });
    assert.deepEqual(spec['bootstrap'], {
      recovery: { source: 'origin', recoveryTarget: { backupID: '20261206T030012', targetImmediate: true } },
    });
    assert.deepEqual(spec['externalClusters'], [
      {
        name: 'origin',
        plugin: {
          name: 'barman-cloud.cloudnative-pg.io',
          parameters: { barmanObjectName: 'orders-db-store', serverName: 'orders-db' },
        },
      },
    ]);
    // No WAL archiver: the scratch writes nothing into the live cluster's store.
    assert.equal(spec['plugins'], undefined);
    assert.equal(desiredOf(rsp, 'verify'), undefined, 'nothing counts it before it is healthy');
    // A full copy of the Database: its PostgreSQL port to this backup's count alone, the status port to the operator.
    const policy = desiredOf(rsp, 'drill-network-policy')!;
    assert.deepEqual(validateObject(policy), []);
    assert.deepEqual(policy['spec'], {
      podSelector: { matchLabels: { 'cnpg.io/cluster': SCRATCH } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            {
              podSelector: {
                matchLabels: { 'app.kubernetes.io/name': 'database-backup', 'app.kubernetes.io/instance': NAME },
              },
            },
          ],
          ports: [{ protocol: 'TCP', port: 5432 }],
        },
        { from: [{ namespaceSelector: {} }], ports: [{ protocol: 'TCP', port: 8000 }] },
      ],
    });
    assert.deepEqual(rsp.requirements?.resources?.['drill-recovery'], {
      apiVersion: 'batch/v1',
      kind: 'Job',
      namespace: NAMESPACE,
      matchLabels: { labels: { 'cnpg.io/cluster': SCRATCH, 'cnpg.io/jobRole': 'full-recovery' } },
    });
    assert.deepEqual(statusOf(rsp)['verification'], {
      request: REQUEST,
      result: 'Running',
      startedAt: '2026-12-07T05:00:00.000Z',
    });
    assert.equal(statusOf(rsp)['phase'], 'Completed', 'the backup stays Completed while it is drilled');
    // Ready, but the operator's recovery Job is no composed resource, so no watch brings its end: called again
    // at the changing interval while the drill runs.
    assert.equal(rsp.meta?.ttl?.seconds, 15);
  });

  test('as large as the live volumes grew', () => {
    const grown = answered({ database: [database({ storage: { requestedGB: 80 } })] });
    const rsp = call(backupXr(REQUEST), [operatorBackup()], grown);
    assert.deepEqual((desiredOf(rsp, 'drill-cluster')!['spec'] as Obj)['storage'], { size: '80Gi' });
  });

  test('healthy: a Job counts every database it holds at its -rw Service as its own superuser; the Cluster kept', () => {
    const first = started();
    const observed = scratchObserved(first, HEALTHY);
    const rsp = call(running(first), observed, db);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.ok(desiredOf(rsp, 'drill-cluster'));
    const job = desiredOf(rsp, 'verify')!;
    assert.deepEqual(validateObject(job), []);
    assert.equal((job['metadata'] as Obj)['name'], JOB);
    const [count] = (((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[];
    assert.equal(count!['image'], 'postgres:16');
    const env = Object.fromEntries((count!['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(env['HOST'], `${SCRATCH}-rw.${NAMESPACE}.svc.cluster.local`);
    assert.deepEqual(env['DB_USER'], { secretKeyRef: { name: `${SCRATCH}-superuser`, key: 'username' } });
    assert.deepEqual(env['DB_PASSWORD'], { secretKeyRef: { name: `${SCRATCH}-superuser`, key: 'password' } });
    // Every database it holds is counted: no name is assumed (a restored Database keeps its source's).
    assert.equal(env['DB_NAME'], undefined);
    const script = String((count!['command'] as string[])[2]);
    assert.match(script, /SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate/);
    assert.match(script, /SELECT count\(\*\), coalesce\(sum/);
    assert.doesNotMatch(script, /INSERT|UPDATE|DELETE|DROP|CREATE/, 'the count writes nothing');
    assert.equal((statusOf(rsp)['verification'] as Obj)['result'], 'Running');
  });

  test('counted: Passed with its tables and rows, timed from the drill’s start; the scratch Cluster and the Job go', () => {
    const first = started();
    const withJob = call(running(first), scratchObserved(first, HEALTHY), db);
    const observed = asObserved(withJob, (key) =>
      key === 'drill-cluster' ? HEALTHY : key === 'verify' ? jobStatus('Complete') : undefined,
    ).map((o) => (o['kind'] === 'Backup' ? operatorBackup() : o));
    const counts = { reason: 'Completed', exitCode: 0, message: '{"tables":4,"rows":10000,"seconds":2}' };
    const rsp = call(running(first), observed, { ...db, ...answered({ pod: [countPod(counts)] }) });
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.deepEqual(v, {
      request: REQUEST,
      result: 'Passed',
      startedAt: '2026-12-07T05:00:00.000Z',
      verifiedAt: '2026-12-07T05:09:12Z',
      tables: 4,
      rows: 10000,
      durationSeconds: 552,
    });
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined, 'the scratch Cluster goes');
    assert.equal(desiredOf(rsp, 'drill-network-policy'), undefined, 'and its NetworkPolicy');
    assert.equal(desiredOf(rsp, 'verify'), undefined, 'the Job goes');
    // Recorded: later calls keep the record, and compose nothing of the drill while its Cluster is still deleted.
    const later = call(backupXr(REQUEST, { ...COMPLETED, verification: v }), observed, db);
    assert.equal(fatalOf(later), undefined, fatalOf(later)?.message);
    assert.equal(desiredOf(later, 'drill-cluster'), undefined);
    assert.deepEqual(statusOf(later)['verification'], v);
    assert.equal(later.meta?.ttl?.seconds, 60, 'recorded: the settled interval again');
  });

  /** The drill's call once the operator's recovery Job failed, its pod's container ended as `terminated` says. */
  function recoveryFailed(terminated: Obj) {
    const first = started();
    const observed = scratchObserved(first, { phase: 'Setting up primary' });
    const labels = { 'cnpg.io/cluster': SCRATCH, 'cnpg.io/jobRole': 'full-recovery' };
    const recovery = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: `${SCRATCH}-1-full-recovery`, namespace: NAMESPACE, labels },
      status: {
        conditions: [
          {
            type: 'Failed',
            status: 'True',
            reason: 'BackoffLimitExceeded',
            message: 'Job has reached the specified backoff limit',
          },
        ],
      },
    };
    // The operator's pods leave no termination message: an exit code and the kubelet's reason.
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${SCRATCH}-1-full-recovery-x7k2p`, namespace: NAMESPACE, labels },
      status: { phase: 'Failed', containerStatuses: [{ name: 'full-recovery', state: { terminated } }] },
    };
    const restore = setClock(() => new Date('2026-12-07T05:20:00Z'));
    try {
      return call(running(first), observed, {
        ...db,
        ...answered({ 'drill-recovery': [recovery], 'drill-recovery-pods': [pod] }),
      });
    } finally {
      restore();
    }
  }

  test('the operator’s recovery Job failed: Failed with its exit code, a warning, and the scratch Cluster goes', () => {
    const rsp = recoveryFailed({ exitCode: 1, reason: 'Error' });
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Failed');
    assert.equal(v['durationSeconds'], 1200);
    assert.match(
      String(v['reason']),
      /^CloudNativePG could not recover backup 20261206T030012 into scratch Cluster .*: its recovery Job .*-1-full-recovery failed \(exit code 1, Error\)$/,
    );
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationFailed' && r.severity === Severity.SEVERITY_WARNING));
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
    // Still asked on the call that ends it: Crossplane calls again until two answers ask the same, and a call
    // without the recovery Job's answer would find the drill running again.
    assert.ok(rsp.requirements?.resources?.['drill-recovery'], 'the recovery Job is still asked for');
    assert.equal(statusOf(rsp)['phase'], 'Completed', 'the record of the backup is not rewritten');
  });

  test('its recovery pod killed for memory: Incomplete, it says nothing of the backup', () => {
    const rsp = recoveryFailed({ exitCode: 137, reason: 'OOMKilled' });
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /failed \(exit code 137, OOMKilled\)$/);
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationIncomplete'));
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
  });

  test('the recovery Job and its pods are asked for by the operator’s labels, on every call of the drill', () => {
    const rsp = started();
    const labels = { labels: { 'cnpg.io/cluster': SCRATCH, 'cnpg.io/jobRole': 'full-recovery' } };
    assert.deepEqual(rsp.requirements?.resources?.['drill-recovery-pods'], {
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: NAMESPACE,
      matchLabels: labels,
    });
    const healthy = call(running(rsp), scratchObserved(rsp, HEALTHY), db);
    assert.deepEqual(
      Object.keys(healthy.requirements?.resources ?? {})
        .filter((k) => k.startsWith('drill'))
        .sort(),
      ['drill-recovery', 'drill-recovery-pods'],
    );
  });

  test('the operator gave the scratch Cluster up (no pod alive): Incomplete, it says nothing of the backup', () => {
    const first = started();
    const observed = scratchObserved(first, {
      phase: 'Cluster is unrecoverable and needs manual intervention',
      phaseReason: 'No pods are active, the cluster needs manual intervention ',
    });
    const rsp = call(running(first), observed, db);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(
      String(v['reason']),
      /gave scratch Cluster .* up: No pods are active, the cluster needs manual intervention$/,
    );
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
  });

  test('not healthy after six hours: Incomplete (nothing judged), the scratch Cluster goes', () => {
    const first = started();
    const observed = scratchObserved(first, { phase: 'Setting up primary' });
    const at = (iso: string) => {
      const restore = setClock(() => new Date(iso));
      try {
        return call(running(first), observed, db);
      } finally {
        restore();
      }
    };
    const still = at('2026-12-07T10:59:00Z');
    assert.equal((statusOf(still)['verification'] as Obj)['result'], 'Running');
    assert.ok(desiredOf(still, 'drill-cluster'));
    const late = at('2026-12-07T11:01:00Z');
    const v = statusOf(late)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /was not healthy after 6 hours \(phase "Setting up primary"\)/);
    assert.ok(late.results.some((r) => r.reason === 'VerificationIncomplete'));
    assert.equal(desiredOf(late, 'drill-cluster'), undefined);
  });

  test('the count could not reach it: Incomplete, not Failed', () => {
    const first = started();
    const withJob = call(running(first), scratchObserved(first, HEALTHY), db);
    const observed = asObserved(withJob, (key) =>
      key === 'drill-cluster' ? HEALTHY : key === 'verify' ? jobStatus('Failed') : undefined,
    ).map((o) => (o['kind'] === 'Backup' ? operatorBackup() : o));
    const unreachable = {
      reason: 'Error',
      exitCode: 1,
      message: `the scratch server at ${SCRATCH}-rw.team-a.svc.cluster.local did not answer in 5 minutes`,
    };
    const rsp = call(running(first), observed, { ...db, ...answered({ pod: [countPod(unreachable)] }) });
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^the count on the scratch Cluster failed \(exit code 1\): the scratch server/);
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
    assert.equal(desiredOf(rsp, 'verify'), undefined);
  });

  test('a newer request while an earlier scratch Cluster is still there: that one goes first', () => {
    const first = started();
    const observed = scratchObserved(first, HEALTHY);
    const rsp = call(
      backupXr('202612140500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      db,
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
    assert.equal((statusOf(rsp)['verification'] as Obj)['result'], 'Running');
    assert.equal((statusOf(rsp)['verification'] as Obj)['request'], '202612140500');
  });

  test('a count under way goes on when the phase moves meanwhile: the Job is kept', () => {
    const first = started();
    const withJob = call(running(first), scratchObserved(first, HEALTHY), db);
    const observed = asObserved(withJob, (key) =>
      key === 'drill-cluster' ? { phase: 'Applying configuration' } : key === 'verify' ? jobStatus() : undefined,
    ).map((o) => (o['kind'] === 'Backup' ? operatorBackup() : o));
    const rsp = call(running(first), observed, db);
    assert.ok(desiredOf(rsp, 'verify'), 'not deleted mid-count');
    assert.ok(desiredOf(rsp, 'drill-cluster'));
  });

  test('a backup from before an in-place major upgrade recovers into the major it was taken of', () => {
    const older = operatorBackup();
    (older['status'] as Obj)['majorVersion'] = 15;
    const rsp = call(backupXr(REQUEST), [older], db);
    assert.equal(
      (desiredOf(rsp, 'drill-cluster')!['spec'] as Obj)['imageName'],
      'ghcr.io/cloudnative-pg/postgresql:15',
    );
    const same = operatorBackup();
    (same['status'] as Obj)['majorVersion'] = 16;
    const rsp16 = call(backupXr(REQUEST), [same], db);
    assert.equal(
      (desiredOf(rsp16, 'drill-cluster')!['spec'] as Obj)['imageName'],
      'ghcr.io/cloudnative-pg/postgresql:16',
    );
  });

  test('a long backup name: the scratch Cluster’s name is bounded so the operator’s Job names fit', () => {
    const long = 'inventory-reporting-eu-db-202612060300';
    const xr = backupXr(REQUEST);
    (xr['metadata'] as Obj)['name'] = long;
    const rsp = call(xr, [operatorBackup()], db);
    const name = String((desiredOf(rsp, 'drill-cluster')!['metadata'] as Obj)['name']);
    assert.ok(`${name}-1-full-recovery`.length <= 63, name);
    assert.match(name, /^inventory-reporting-eu-db-/);
  });

  test('the Database deleted mid-drill: the scratch Cluster and the Job go, the drill recorded Incomplete', () => {
    const first = started();
    const withJob = call(running(first), scratchObserved(first, HEALTHY), db);
    const observed = asObserved(withJob, (key) =>
      key === 'drill-cluster' ? HEALTHY : key === 'verify' ? jobStatus() : undefined,
    ).map((o) => (o['kind'] === 'Backup' ? operatorBackup() : o));
    const rsp = call(running(first), observed, answered({ database: [] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'drill-cluster'), undefined);
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    assert.ok(desiredOf(rsp, 'cnpg-backup'), 'the backup itself stays');
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^Database orders is gone: the drill stopped/);
    assert.equal(statusOf(rsp)['phase'], 'Completed');
  });

  test('the Database refused for now (its spec invalid): the drill waits, its scratch Cluster kept', () => {
    const first = started();
    const observed = scratchObserved(first, { phase: 'Setting up primary' });
    const broken = databaseXr({ ...SPEC, storageGB: -1 }, { bare: true });
    const rsp = call(running(first), observed, answered({ database: [broken] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.ok(desiredOf(rsp, 'drill-cluster'), 'kept: the Database is there, and the drill goes on once it is valid');
    assert.equal((statusOf(rsp)['verification'] as Obj)['result'], 'Running');
  });

  test('the guard lets go of a scratch Cluster only: an instance without the label left out is Fatal', () => {
    const cluster = (labels: Obj): Obj => ({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'c', namespace: NAMESPACE, labels },
    });
    const discarding = [{ key: 'drill-cluster', why: 'ended' }];
    guardNothingLost(
      { resources: [], discarding },
      new Map([['drill-cluster', cluster({ [SCRATCH_LABEL]: 'drill' })]]),
    );
    assert.throws(
      () => guardNothingLost({ resources: [], discarding }, new Map([['drill-cluster', cluster({})]])),
      (e: unknown) => e instanceof FatalError && /would delete/.test(e.message),
    );
    assert.throws(() =>
      guardNothingLost({ resources: [] }, new Map([['drill-cluster', cluster({ [SCRATCH_LABEL]: 'drill' })]])),
    );
  });
});

describe('the Database drills its CloudNativePG backups', () => {
  test('on the verify schedule (by default Sundays 05:00) its newest Completed backup is asked for one', () => {
    const restore = setClock(() => new Date('2026-12-07T05:00:30Z'));
    try {
      const required = answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] });
      const first = call(databaseXr(SPEC), [], required);
      const serving = asObserved(first, (_k, o) => healthyStatus(o));
      const scheduled: Obj = {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: {
          name: NAME,
          namespace: NAMESPACE,
          annotations: { 'crossplane.io/composition-resource-name': 'scheduled-backup-202612060300' },
        },
        spec: { databaseRef: { name: 'orders' } },
        status: COMPLETED,
      };
      const rsp = call(databaseXr(SPEC), [...serving, scheduled], required);
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      const asked = desiredOf(rsp, 'scheduled-backup-202612060300')!;
      assert.deepEqual((asked['spec'] as Obj)['verification'], { requested: '202612060500' });
    } finally {
      restore();
    }
  });
});
