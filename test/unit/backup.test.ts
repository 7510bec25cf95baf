// The DatabaseBackup blueprint call by call: the Database looked up, the
// method of its placement composed, the outcome read from what was composed
// (the Job and its Pod, the CloudNativePG Backup, the RDS Snapshot), a dump
// killed for memory retried with twice the memory three times at most, and
// bad input answered with nothing composed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  beforeMigrationBackup,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
  statusOf,
} from '../support/database.js';

const STORE = {
  bucket: 'team-a-backups',
  region: 'eu-west-1',
  endpoint: 'http://minio.storage:9000',
  prefix: 'prod',
  credentialsSecretRef: { name: 'backup-store' },
};
const backupXr = beforeMigrationBackup;
const clusterDb = (backup: Obj = { objectStore: STORE }) =>
  databaseXr({ engine: 'postgres', version: '16', storageGB: 20, backup }, { bare: true });

/** The attempt's pod as the kubelet leaves it: init container dump, container upload. */
function pod(job: string, dump: Obj, upload?: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${job}-x1`,
      namespace: NAMESPACE,
      labels: {
        'batch.kubernetes.io/job-name': job,
        'app.kubernetes.io/name': 'database-backup',
        'app.kubernetes.io/instance': job.replace(/-a\d$/, ''),
      },
    },
    status: {
      phase: upload ? 'Succeeded' : 'Failed',
      initContainerStatuses: [{ name: 'dump', state: { terminated: dump } }],
      containerStatuses: upload ? [{ name: 'upload', state: { terminated: upload } }] : [],
    },
  };
}
const OOM = { reason: 'OOMKilled', exitCode: 137, message: '' };
const jobStatus = (done: 'Complete' | 'Failed' | undefined) => ({
  startTime: '2026-12-02T03:00:05Z',
  ...(done === 'Complete' ? { completionTime: '2026-12-02T03:01:10Z' } : {}),
  ...(done
    ? {
        conditions: [
          {
            type: done,
            status: 'True',
            lastTransitionTime: '2026-12-02T03:01:10Z',
            ...(done === 'Failed'
              ? { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }
              : {}),
          },
        ],
      }
    : {}),
});

describe('a DatabaseBackup of an in-cluster Database: a dump Job to object storage', () => {
  test('first the Database is asked for; nothing is composed until it is known', () => {
    const rsp = call(backupXr());
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(Object.keys(rsp.desired!.resources), []);
    assert.deepEqual(rsp.requirements?.resources?.['database'], {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      matchName: 'orders',
      namespace: NAMESPACE,
    });
    assert.equal(statusOf(rsp)['phase'], 'Pending');
  });

  test('the Job dumps with the engine’s own image and uploads with the S3 client to the object store, under the prefix', () => {
    const rsp = call(backupXr(), [], answered({ database: [clusterDb()] }));
    const job = desiredOf(rsp, 'dump-1')!;
    const spec = (job['spec'] as Obj)['template'] as Obj;
    const podSpec = spec['spec'] as Obj;
    const dump = (podSpec['initContainers'] as Obj[])[0]!;
    const upload = (podSpec['containers'] as Obj[])[0]!;
    assert.equal(dump['image'], 'postgres:16');
    assert.match(String((dump['command'] as string[])[2]), /pg_dump .* -Fc/);
    assert.deepEqual((dump['resources'] as Obj)['limits'], { memory: '256Mi' });
    assert.equal(upload['image'], 'amazon/aws-cli:2.22.35');
    const env = Object.fromEntries((upload['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(env['BUCKET'], 'team-a-backups');
    assert.equal(env['KEY'], 'prod/orders/orders-before-migration.dump');
    assert.equal(env['S3_ENDPOINT'], 'http://minio.storage:9000');
    assert.deepEqual(env['AWS_SECRET_ACCESS_KEY'], {
      secretKeyRef: { name: 'backup-store', key: 'AWS_SECRET_ACCESS_KEY' },
    });
    assert.equal((job['spec'] as Obj)['backoffLimit'], 0, 'attempts are the function’s');
    assert.deepEqual(rsp.requirements?.resources?.['pod'], {
      apiVersion: 'v1',
      kind: 'Pod',
      // Every attempt's pods, by labels no attempt changes: Crossplane wants requirements that settle.
      matchLabels: {
        labels: {
          'app.kubernetes.io/name': 'database-backup',
          'app.kubernetes.io/instance': 'orders-before-migration',
        },
      },
      namespace: NAMESPACE,
    });
    const status = statusOf(rsp);
    assert.equal(status['phase'], 'Pending');
    assert.equal(status['method'], 'dump');
    assert.equal(status['location'], 's3://team-a-backups/prod/orders/orders-before-migration.dump');
  });

  test('Pending → Running → Completed, the size from the upload’s report; then the Job goes and the record stays', () => {
    const db = answered({ database: [clusterDb()] });
    const first = call(backupXr(), [], db);
    const running = call(
      backupXr(statusOf(first)),
      asObserved(first, () => jobStatus(undefined)),
      db,
    );
    assert.equal(statusOf(running)['phase'], 'Running');
    assert.equal(statusOf(running)['startedAt'], '2026-12-02T03:00:05Z');
    // Issue 26: a backup that runs names the Job and its pod to look at.
    const runningPod = { ...pod('orders-before-migration-a1', {}), status: { phase: 'Running' } };
    const named = call(
      backupXr(statusOf(first)),
      asObserved(first, () => jobStatus(undefined)),
      {
        ...db,
        ...answered({ pod: [runningPod] }),
      },
    );
    assert.equal(
      statusOf(named)['message'],
      'dumping Database orders to s3://team-a-backups/prod/orders/orders-before-migration.dump; Job orders-before-migration-a1 runs it (pod orders-before-migration-a1-x1: Running), its logs: kubectl logs -n team-a job/orders-before-migration-a1 --all-containers',
    );
    const report = {
      reason: 'Completed',
      exitCode: 0,
      message: '{"key":"prod/orders/orders-before-migration.dump","sizeBytes":138551}',
    };
    const done = call(
      backupXr(statusOf(running)),
      asObserved(first, () => jobStatus('Complete')),
      {
        ...db,
        ...answered({ pod: [pod('orders-before-migration-a1', { reason: 'Completed', exitCode: 0 }, report)] }),
      },
    );
    const s = statusOf(done);
    assert.equal(s['phase'], 'Completed');
    assert.equal(s['ready'], true);
    assert.equal(s['sizeBytes'], 138551);
    assert.equal(s['completedAt'], '2026-12-02T03:01:10Z');
    assert.equal(s['restorable'], true);
    // The next call, with Completed stored: the Job leaves desired state, the record does not change.
    const later = call(
      backupXr(s),
      asObserved(first, () => jobStatus('Complete')),
      db,
    );
    assert.deepEqual(Object.keys(later.desired!.resources), []);
    assert.equal(statusOf(later)['phase'], 'Completed');
    assert.equal(statusOf(later)['sizeBytes'], 138551);
    // Issue 28: the Database deleted, its hand-made backup stays Completed (it turned Pending), the absence said once.
    const orphan = call(backupXr(statusOf(later)), [], answered({ database: [] }));
    const o = statusOf(orphan);
    assert.equal(o['phase'], 'Completed');
    assert.equal(o['ready'], true);
    assert.equal(o['sizeBytes'], 138551);
    assert.equal(o['location'], s['location']);
    assert.match(
      String(o['message']),
      /^dumped Database orders to s3:\/\/.*; Database orders is gone, this record and what it stored stay$/,
    );
    const again = call(backupXr(o), [], answered({ database: [] }));
    assert.equal(statusOf(again)['message'], o['message'], 'said once, not appended again');
    assert.deepEqual(Object.keys(again.desired!.resources), []);
  });

  test('killed for memory: attempt 2 with twice the memory, then attempt 3, then Failed saying why', () => {
    const db = answered({ database: [clusterDb()] });
    let status: Obj | undefined;
    let observed: Obj[] = [];
    const memories: string[] = [];
    // The answer holds every attempt's pod so far, as the labels select them.
    const pods: Obj[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      if (attempt > 1) pods.push(pod(`orders-before-migration-a${attempt - 1}`, OOM));
      const rsp = call(backupXr(status), observed, { ...db, ...answered({ pod: [...pods] }) });
      const job = desiredOf(rsp, `dump-${attempt}`)!;
      assert.ok(job, `attempt ${attempt} composed`);
      assert.equal(desiredOf(rsp, `dump-${attempt - 1}`), undefined, 'the failed attempt leaves');
      const dump = (((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['initContainers'] as Obj[];
      memories.push(String(((dump[0]!['resources'] as Obj)['limits'] as Obj)['memory']));
      status = statusOf(rsp);
      observed = asObserved(rsp, () => jobStatus('Failed'));
    }
    assert.deepEqual(memories, ['256Mi', '512Mi', '1024Mi']);
    const last = call(backupXr(status), observed, {
      ...db,
      ...answered({ pod: [...pods, pod('orders-before-migration-a3', OOM)] }),
    });
    const s = statusOf(last);
    assert.equal(s['phase'], 'Failed');
    assert.equal(s['attempts'], 3);
    assert.equal(s['failureReason'], 'dump was killed for memory (OOMKilled with 1024Mi)');
    assert.ok(
      last.results.some(
        (r) => r.reason === 'BackupFailed' && /attempt 3 of 3: dump was killed for memory/.test(r.message),
      ),
      'a Warning event',
    );
  });

  test('a failure that is not memory is not retried: Failed with the tool’s last words', () => {
    const db = answered({ database: [clusterDb()] });
    const first = call(backupXr(), [], db);
    const upload = {
      reason: 'Error',
      exitCode: 1,
      message:
        'upload failed: s3://team-a-backups/prod/orders/x.partial An error occurred (NoSuchBucket) when calling the PutObject operation: The specified bucket does not exist',
    };
    const rsp = call(
      backupXr(statusOf(first)),
      asObserved(first, () => jobStatus('Failed')),
      {
        ...db,
        ...answered({ pod: [pod('orders-before-migration-a1', { reason: 'Completed', exitCode: 0 }, upload)] }),
      },
    );
    assert.equal(desiredOf(rsp, 'dump-2'), undefined);
    const s = statusOf(rsp);
    assert.equal(s['phase'], 'Failed');
    assert.match(String(s['failureReason']), /^upload failed \(exit code 1\): .*NoSuchBucket/);
  });
});

describe('a DatabaseBackup of a Database on AWS: an RDS Snapshot', () => {
  const awsDb = databaseXr({ engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } });
  test('composes a Snapshot of the instance, and is Completed when the provider says it is available', () => {
    const db = answered({ database: [awsDb] });
    const rsp = call(backupXr(), [], db);
    const snapshot = desiredOf(rsp, 'rds-snapshot')!;
    assert.deepEqual((snapshot['spec'] as Obj)['forProvider'], {
      region: 'eu-west-1',
      dbInstanceIdentifier: 'team-a-orders-db',
    });
    const done = call(
      backupXr(statusOf(rsp)),
      asObserved(rsp, () => ({
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-12-02T03:05:00Z' }],
        atProvider: { status: 'available', allocatedStorage: 20 },
      })),
      db,
    );
    const s = statusOf(done);
    assert.equal(s['phase'], 'Completed');
    assert.equal(s['method'], 'rds-snapshot');
    assert.equal(s['location'], 'rds-snapshot:orders-before-migration');
    assert.ok(desiredOf(done, 'rds-snapshot'), 'the Snapshot, which holds the data, stays');
  });

  test('of the instance that serves the Database now, and of that one for good once taken', () => {
    // A DatabaseRestore moved the Database to its next instance: its status says which.
    const restored = { ...awsDb, status: { instance: 'team-a-orders-db-r1' } };
    const rsp = call(backupXr(), [], answered({ database: [restored] }));
    const forProvider = () => (desiredOf(rsp, 'rds-snapshot')!['spec'] as Obj)['forProvider'] as Obj;
    assert.equal(forProvider()['dbInstanceIdentifier'], 'team-a-orders-db-r1');
    // Taken of r1: it stays a snapshot of r1 when the Database moves on to r2.
    const later = call(
      backupXr(statusOf(rsp)),
      asObserved(rsp, () => ({ conditions: [{ type: 'Ready', status: 'True' }] })),
      answered({ database: [{ ...awsDb, status: { instance: 'team-a-orders-db-r2' } }] }),
    );
    const kept = (desiredOf(later, 'rds-snapshot')!['spec'] as Obj)['forProvider'] as Obj;
    assert.equal(kept['dbInstanceIdentifier'], 'team-a-orders-db-r1');
  });

  // Found under real Crossplane: the first call of a reconcile has no answer to the requirements yet.
  test('before the Database is looked up, and when it is gone, the Snapshot stays composed as it is', () => {
    const rsp = call(backupXr(), [], answered({ database: [awsDb] }));
    const observed = asObserved(rsp, () => ({ conditions: [{ type: 'Ready', status: 'True' }] }));
    for (const required of [{}, answered({ database: [] })]) {
      const again = call(backupXr(statusOf(rsp)), observed, required);
      assert.equal(fatalOf(again), undefined, fatalOf(again)?.message);
      const kept = desiredOf(again, 'rds-snapshot')!;
      assert.deepEqual(kept['spec'], desiredOf(rsp, 'rds-snapshot')!['spec']);
      assert.equal(kept['status'], undefined, 'status is not desired');
    }
  });
});

describe('a dump in flight when its Database cannot be read', () => {
  test('the Job stays composed, without what the Job controller added to it', () => {
    const rsp = call(backupXr(), [], answered({ database: [clusterDb()] }));
    const observed = asObserved(rsp, () => jobStatus(undefined));
    const job = observed.find((o) => o['kind'] === 'Job')!;
    const spec = job['spec'] as Obj;
    spec['selector'] = { matchLabels: { 'batch.kubernetes.io/controller-uid': 'c0ffee' } };
    const labels = ((spec['template'] as Obj)['metadata'] as Obj)['labels'] as Obj;
    labels['batch.kubernetes.io/controller-uid'] = 'c0ffee';
    labels['batch.kubernetes.io/job-name'] = 'orders-before-migration-a1';
    (job['metadata'] as Obj)['uid'] = 'c0ffee';
    const again = call(backupXr(statusOf(rsp)), observed, answered({ database: [] }));
    assert.equal(fatalOf(again), undefined);
    const kept = desiredOf(again, 'dump-1')!;
    assert.equal((kept['spec'] as Obj)['selector'], undefined);
    assert.equal((kept['metadata'] as Obj)['uid'], undefined);
    const keptLabels = (((kept['spec'] as Obj)['template'] as Obj)['metadata'] as Obj)['labels'] as Obj;
    assert.deepEqual(
      Object.keys(keptLabels).sort(),
      Object.keys(labels)
        .filter((l) => !l.startsWith('batch.'))
        .sort(),
    );
    assert.match(String(statusOf(again)['message']), /does not exist in namespace team-a/);
  });
});

describe('a DatabaseBackup of a CloudNativePG Database: a Backup through the Barman Cloud plugin', () => {
  test('composes the Backup of the cluster and reads its phase', () => {
    const db = answered({
      database: [
        databaseXr({ engine: 'postgres', storageGB: 20, highAvailability: true, backup: { objectStore: STORE } }),
      ],
    });
    const rsp = call(backupXr(), [], db);
    assert.deepEqual(desiredOf(rsp, 'cnpg-backup')!['spec'] as Obj, {
      cluster: { name: 'orders-db' },
      method: 'plugin',
      pluginConfiguration: { name: 'barman-cloud.cloudnative-pg.io' },
    });
    const done = call(
      backupXr(statusOf(rsp)),
      asObserved(rsp, () => ({
        phase: 'completed',
        startedAt: '2026-12-02T03:00:00Z',
        stoppedAt: '2026-12-02T03:00:40Z',
        destinationPath: 's3://team-a-backups/prod/orders-db',
      })),
      db,
    );
    assert.equal(statusOf(done)['phase'], 'Completed');
    assert.equal(statusOf(done)['completedAt'], '2026-12-02T03:00:40Z');
  });
});

describe('bad input: not ready, a clear message, nothing composed, nothing deleted', () => {
  test('a Database that does not exist', () => {
    const rsp = call(backupXr(), [], answered({ database: [] }));
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(Object.keys(rsp.desired!.resources), []);
    assert.equal(statusOf(rsp)['ready'], false);
    assert.equal(statusOf(rsp)['message'], 'Database orders does not exist in namespace team-a; nothing was composed');
  });
  test('an in-cluster Database with no object store (backups on, or off)', () => {
    for (const [backup, said] of [
      [{}, 'it has no spec.backup.objectStore and its status names no platform store'],
      [{ enabled: false }, 'it has backups disabled and no spec.backup.objectStore'],
    ] as const) {
      const rsp = call(backupXr(), [], answered({ database: [clusterDb(backup)] }));
      assert.deepEqual(Object.keys(rsp.desired!.resources), []);
      assert.equal(
        statusOf(rsp)['message'],
        `Database orders cannot be backed up: ${said}, so a backup has nowhere to go; nothing was composed`,
      );
    }
  });
  test('a databaseRef without a name is refused naming the field', () => {
    const rsp = call({ ...backupXr(), spec: { databaseRef: {} } });
    assert.match(fatalOf(rsp)?.message ?? '', /spec\.databaseRef\.name/);
  });
});

describe('DatabaseBackup: requirements that settle within one reconcile, as Crossplane needs', () => {
  test('after an OOM kill, answering the requirements until they settle composes attempt 2 (no ping-pong between attempts)', async () => {
    const { buildRequest, runWithRequirements } = await import('../../src/render.js');
    const { runFunction } = await import('../../src/function.js');
    const first = call(backupXr(), [], answered({ database: [clusterDb()] }));
    const failedJob = asObserved(first, () => jobStatus('Failed'));
    const rsp = runWithRequirements((r) => runFunction(r), buildRequest(backupXr(statusOf(first)), failedJob), [
      { ...clusterDb(), metadata: { name: 'orders', namespace: NAMESPACE, uid: 'uid-orders' } },
      {
        ...pod('orders-before-migration-a1', OOM),
        metadata: {
          name: 'orders-before-migration-a1-x1',
          namespace: NAMESPACE,
          labels: {
            'batch.kubernetes.io/job-name': 'orders-before-migration-a1',
            'app.kubernetes.io/name': 'database-backup',
            'app.kubernetes.io/instance': 'orders-before-migration',
          },
        },
      },
    ]);
    assert.ok(desiredOf(rsp, 'dump-2'), 'attempt 2 composed');
    assert.match(String(statusOf(rsp)['message']), /attempt 2 of 3/);
  });
});
