// A Database created from a DatabaseBackup (spec.restore.fromBackup), call by
// call: the backup looked up and judged, the empty server started, the
// restore Job once it runs, the connection Secret only after the data is
// back, the outcome kept in status; and what is refused, naming the field.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
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
  k8sSecret,
  NAMESPACE,
  secretData,
  OBJECT_STORE,
  statusOf,
  withObjectStore,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';
import { validateObject } from '../support/schemas.js';

const backup = (status: Obj = {}) => completedBackup('orders-db-202612020300', 'orders', status);
const restoredXr = (spec: Obj = {}, status?: Obj) =>
  databaseXr(
    { engine: 'postgres', storageGB: 20, restore: { fromBackup: { name: 'orders-db-202612020300' } }, ...spec },
    { name: 'orders-copy', ...(status ? { status } : {}) },
  );
const found = (b: Obj = backup()) => answered({ 'restore-backup': [b] });
const fatal = (rsp: RunFunctionResponse) => fatalOf(rsp)?.message ?? '';

/** What Crossplane observes after `rsp`, every object healthy; the restore Job as `job` says. */
function observe(rsp: RunFunctionResponse, job?: 'Complete' | 'Failed'): Obj[] {
  const out = asObserved(rsp, (key, obj) =>
    key === 'restore'
      ? job && {
          conditions: [{ type: job, status: 'True', message: job === 'Failed' ? 'BackoffLimitExceeded' : undefined }],
        }
      : healthyStatus(obj),
  );
  for (const o of out) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
  return out;
}

describe('a Database restored from a DatabaseBackup, in a StatefulSet', () => {
  test('looked up, the empty server started, the Job once it runs, the connection Secret after; the outcome kept', () => {
    const lookup = call(restoredXr());
    assert.equal(fatalOf(lookup), undefined, fatal(lookup));
    assert.equal(statusOf(lookup)['phase'], 'Restoring');
    assert.equal(statusOf(lookup)['message'], 'looking up DatabaseBackup orders-db-202612020300');
    assert.deepEqual(lookup.requirements?.resources?.['restore-backup'], {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      matchName: 'orders-db-202612020300',
      namespace: NAMESPACE,
    });
    assert.equal(desiredOf(lookup, 'connection'), undefined, 'no connection to an empty server');

    const waiting = call(restoredXr(), [], found());
    assert.equal(statusOf(waiting)['phase'], 'Restoring');
    assert.match(
      String(statusOf(waiting)['message']),
      /restoring orders-copy from DatabaseBackup orders-db-202612020300 \(postgres 17, 48211 bytes\): waiting for the empty server to start/,
    );
    assert.ok(desiredOf(waiting, 'statefulset'));
    assert.equal(desiredOf(waiting, 'restore'), undefined, 'no restore before the server runs');

    const running = call(restoredXr({}, { phase: 'Restoring' }), observe(waiting), found());
    const job = desiredOf(running, 'restore')!;
    assert.equal(job['kind'], 'Job');
    const pod = ((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const download = (pod['initContainers'] as Obj[])[0]!;
    const env = Object.fromEntries((download['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(env['BUCKET'], 'team-a-backups');
    assert.equal(env['KEY'], 'orders/orders-db-202612020300.dump');
    const restore = (pod['containers'] as Obj[])[0]!;
    assert.equal(restore['image'], 'postgres:17');
    const renv = Object.fromEntries((restore['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(renv['HOST'], 'orders-copy-db.team-a.svc.cluster.local');
    assert.equal(renv['DB_NAME'], 'orders_copy');
    assert.equal(statusOf(running)['phase'], 'Restoring');
    assert.equal(statusOf(running)['ready'], false);
    assert.equal(desiredOf(running, 'connection'), undefined);

    const done = call(restoredXr({}, { phase: 'Restoring' }), observe(running, 'Complete'), found());
    assert.ok(desiredOf(done, 'connection'), 'the connection Secret, now that the data is back');
    assert.equal(statusOf(done)['restoredFrom'], 'orders-db-202612020300');
    assert.equal(statusOf(done)['restorePoint'], '2026-12-02T03:01:12Z');

    // Later: the record in status is the memory; the backup may even be gone.
    const later = call(
      restoredXr({}, { ...statusOf(done) }),
      observe(done, 'Complete'),
      answered({ 'restore-backup': [] }),
    );
    assert.equal(fatalOf(later), undefined, fatal(later));
    assert.equal(desiredOf(later, 'restore'), undefined, 'the Job has done its part');
    assert.equal(later.requirements?.resources?.['restore-backup'], undefined);
    assert.equal(statusOf(later)['ready'], true, String(statusOf(later)['message']));
    assert.equal(statusOf(later)['phase'], 'Ready');
    assert.equal(statusOf(later)['restoredFrom'], 'orders-db-202612020300');
  });

  test("from a dump no DatabaseBackup records (spec.restore.fromDump, a deleted Database's last dump): nothing looked up, the same Job", () => {
    const location = 's3://team-a-backups/orders/last-dump-0a1b2c3d.dump';
    const xr = (status?: Obj) =>
      databaseXr(
        { engine: 'postgres', storageGB: 20, restore: { fromDump: { location } } },
        { name: 'orders', ...(status ? { status } : {}) },
      );
    const waiting = call(xr());
    assert.equal(fatalOf(waiting), undefined, fatal(waiting));
    assert.deepEqual(
      Object.keys(waiting.requirements?.resources ?? {}).filter((k) => k.startsWith('restore')),
      [],
    );
    assert.match(
      String(statusOf(waiting)['message']),
      /restoring orders from dump s3:\/\/team-a-backups\/orders\/last-dump-0a1b2c3d\.dump: waiting for the empty server to start/,
    );
    const running = call(xr({ phase: 'Restoring' }), observe(waiting));
    const job = desiredOf(running, 'restore')!;
    const pod = ((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const download = (pod['initContainers'] as Obj[])[0]!;
    const env = Object.fromEntries((download['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(env['BUCKET'], 'team-a-backups');
    assert.equal(env['KEY'], 'orders/last-dump-0a1b2c3d.dump');
    assert.equal(desiredOf(running, 'connection'), undefined, 'nobody connects before the data is back');
    const done = call(xr({ phase: 'Restoring' }), observe(running, 'Complete'));
    assert.ok(desiredOf(done, 'connection'));
    assert.equal(statusOf(done)['restoredFrom'], location);
    const later = call(xr({ ...statusOf(done) }), observe(done, 'Complete'));
    assert.equal(desiredOf(later, 'restore'), undefined, 'the Job has done its part');
    assert.equal(statusOf(later)['phase'], 'Ready', String(statusOf(later)['message']));
  });

  test("spec.restore.fromDump refused, naming the field: another bucket, another engine's dump, a placement that restores no dump", () => {
    const cases: Array<[string, Obj, RegExp]> = [
      [
        'another bucket',
        { engine: 'postgres', storageGB: 20, restore: { fromDump: { location: 's3://elsewhere/orders/x.dump' } } },
        /spec\.restore\.fromDump\.location is in bucket elsewhere, and the restore reads with the credentials of spec\.backup\.objectStore, bucket team-a-backups/,
      ],
      [
        'not under the prefix of the store',
        {
          engine: 'postgres',
          storageGB: 20,
          backup: { objectStore: { ...OBJECT_STORE, prefix: 'team-a' } },
          restore: { fromDump: { location: 's3://team-a-backups/team-b/orders/x.dump' } },
        },
        /spec\.restore\.fromDump\.location is not under the prefix of spec\.backup\.objectStore \(team-a\/\)/,
      ],
      [
        'a mysql dump into postgres',
        { engine: 'postgres', storageGB: 20, restore: { fromDump: { location: 's3://team-a-backups/shop/x.sql' } } },
        /spec\.restore\.fromDump\.location does not end in \.dump: a postgres dump does/,
      ],
      [
        'highAvailability',
        {
          engine: 'postgres',
          storageGB: 20,
          highAvailability: true,
          restore: { fromDump: { location: 's3://team-a-backups/orders/x.dump' } },
        },
        /spec\.restore\.fromDump names a dump, which only a Database in a StatefulSet restores/,
      ],
    ];
    for (const [what, spec, message] of cases) {
      const rsp = call(databaseXr(spec, { name: 'orders' }), [], answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] }));
      assert.match(fatal(rsp), message, what);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], `${what}: nothing composed`);
    }
    const storeless = call(
      databaseXr(
        { engine: 'postgres', storageGB: 20, restore: { fromDump: { location: 's3://team-a-backups/orders/x.dump' } } },
        { name: 'orders', bare: true },
      ),
    );
    assert.match(fatal(storeless), /spec\.restore\.fromDump: .*spec\.backup\.objectStore, which is not set/);
  });

  test('a failed restore: a warning, still Restoring, no connection Secret, the Job kept to show why', () => {
    const running = call(restoredXr({}, { phase: 'Restoring' }), observe(call(restoredXr(), [], found())), found());
    const failed = call(restoredXr({}, { phase: 'Restoring' }), observe(running, 'Failed'), found());
    assert.equal(statusOf(failed)['phase'], 'Restoring');
    assert.match(String(statusOf(failed)['message']), /the restore failed \(BackoffLimitExceeded\)/);
    assert.ok(failed.results.some((r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'RestoreFailed'));
    assert.ok(desiredOf(failed, 'restore'));
    assert.equal(desiredOf(failed, 'connection'), undefined);
  });

  test('claims mode: the message names the Database by its claim, not by its composite', () => {
    // Found by the chaos harness (issue 29): a claim read "restoring ledger-fbxkt from DatabaseBackup ...", the
    // name of a composite the user never made.
    const xr = restoredXr();
    xr['kind'] = 'XDatabase';
    xr['metadata'] = {
      name: 'orders-copy-x7k2p',
      uid: 'uid-orders-copy-x7k2p',
      labels: { 'crossplane.io/claim-name': 'orders-copy', 'crossplane.io/claim-namespace': NAMESPACE },
    };
    const waiting = call(xr, [], found());
    assert.equal(fatalOf(waiting), undefined, fatal(waiting));
    assert.match(
      String(statusOf(waiting)['message']),
      /^restoring orders-copy from DatabaseBackup orders-db-202612020300 \(postgres 17, 48211 bytes\): waiting for the empty server to start/,
    );
    const missing = call(xr, [], answered({ 'restore-backup': [] }));
    assert.match(String(statusOf(missing)['message']), /^restoring orders-copy: spec\.restore\.fromBackup\.name names/);
  });

  test('a backup that does not exist (yet): Restoring, saying so; nothing restored, nobody connects', () => {
    const rsp = call(restoredXr(), [], answered({ 'restore-backup': [] }));
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    assert.equal(statusOf(rsp)['phase'], 'Restoring');
    assert.equal(
      statusOf(rsp)['message'],
      'restoring orders-copy: spec.restore.fromBackup.name names DatabaseBackup orders-db-202612020300, which does not exist in namespace team-a',
    );
    assert.equal(desiredOf(rsp, 'restore'), undefined);
    assert.equal(desiredOf(rsp, 'connection'), undefined);
  });

  test('refused with Fatal, naming the field and what would do', () => {
    const cases: Array<[string, RunFunctionResponse, RegExp]> = [
      [
        'not completed',
        call(restoredXr(), [], found(backup({ phase: 'Failed', restorable: false }))),
        /is Failed and not restorable; a restore needs a Completed, restorable backup/,
      ],
      [
        'a snapshot',
        call(restoredXr(), [], found(backup({ method: 'rds-snapshot', location: 'rds-snapshot:x' }))),
        /was taken by rds-snapshot; a Database in a StatefulSet restores a dump/,
      ],
      [
        'engine',
        call(restoredXr({ engine: 'mysql', version: '8.4' }), [], found()),
        /holds postgres 17, and this Database is mysql 8\.4; a restore needs the same engine and major version/,
      ],
      [
        'major',
        call(restoredXr({ version: '16' }), [], found()),
        /holds postgres 17, and this Database is postgres 16/,
      ],
      [
        'point in time',
        call(restoredXr({ restore: { fromDatabase: { name: 'orders' }, pointInTime: '2026-12-02T02:00:00Z' } })),
        /spec\.restore\.pointInTime: a Database in a StatefulSet restores from dumps/,
      ],
      [
        'a dump into RDS',
        call(restoredXr({ placement: 'aws', aws: { region: 'eu-west-1' } }), [], found()),
        /spec\.restore\.fromBackup\.name: DatabaseBackup orders-db-202612020300 was taken by dump; a Database on AWS restores an RDS snapshot/,
      ],
      [
        'no store',
        call(databaseXr({ restore: { fromBackup: { name: 'b' } }, backup: { enabled: false } }, { bare: true })),
        /spec\.restore\.fromBackup: the dump is read from spec\.backup\.objectStore, which is not set/,
      ],
    ];
    cases.push(
      [
        'both',
        call(restoredXr({ restore: { fromBackup: { name: 'a' }, fromDatabase: { name: 'b' } } })),
        /spec\.restore needs exactly one of fromBackup, fromDatabase, fromSnapshot and fromDump/,
      ],
      [
        'changed',
        call(restoredXr({ restore: { fromBackup: { name: 'other' } } }, { restoredFrom: 'orders-db-202612020300' })),
        /spec\.restore cannot change once the Database exists/,
      ],
    );
    const plain = call(databaseXr({ engine: 'postgres', storageGB: 20 }, { name: 'orders-copy' }));
    const added = call(restoredXr({}, { phase: 'Ready' }), asObserved(plain), found());
    assert.match(fatal(added), /spec\.restore can only be given when the Database is created/);
    for (const [what, rsp, message] of cases) {
      assert.match(fatal(rsp), message, what);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], `${what}: nothing composed`);
    }
  });
});

const AWS_SPEC = { engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } };

/** The source Database of a point-in-time restore, as Crossplane returns it: its status gives the window. */
function sourceDatabase(spec: Obj = AWS_SPEC, backup: Obj = {}): Obj {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: NAMESPACE, uid: 'uid-orders' },
    spec,
    status: {
      instance: 'team-a-orders-db',
      backup: {
        earliestRestorableTime: '2026-11-25T10:00:00Z',
        latestRestorableTime: '2026-12-02T03:55:00Z',
        ...backup,
      },
    },
  };
}

describe('a Database created from another one at a point in time, or from a snapshot', () => {
  const pitr = (pointInTime?: string, extra: Obj = {}) =>
    databaseXr(
      { ...AWS_SPEC, restore: { fromDatabase: { name: 'orders' }, ...(pointInTime ? { pointInTime } : {}) }, ...extra },
      { name: 'orders-copy' },
    );
  const source = (s = sourceDatabase()) => answered({ 'restore-database': [s] });

  test('on AWS: RDS restores the source instance to the point; no database or user of its own; Ready once available', () => {
    const rsp = call(pitr('2026-12-01T09:30:00Z'), [], source());
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const fp = (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
    assert.deepEqual(fp['restoreToPointInTime'], {
      sourceDbInstanceIdentifier: 'team-a-orders-db',
      restoreTime: '2026-12-01T09:30:00Z',
    });
    assert.equal(fp['identifier'], 'team-a-orders-copy-db');
    assert.equal(fp['dbName'], undefined);
    assert.equal(fp['username'], undefined);
    assert.equal(statusOf(rsp)['phase'], 'Restoring');
    assert.match(String(statusOf(rsp)['message']), /^restoring orders-copy from orders at 2026-12-01T09:30:00Z/);

    // Available, the provider's Secret written: the connection names the source's database.
    const observed = asObserved(rsp, (_key, obj) => healthyStatus(obj));
    const rds = k8sSecret('orders-copy-db-rds', NAMESPACE, {
      address: 'team-a-orders-copy-db.abc.eu-west-1.rds.amazonaws.com',
      port: '5432',
      username: 'app',
      password: 'pw',
    });
    const done = call(
      { ...pitr('2026-12-01T09:30:00Z'), status: statusOf(rsp) },
      observed,
      answered({ 'restore-database': [sourceDatabase()], 'rds-connection': [rds] }),
    );
    assert.equal(statusOf(done)['restoredFrom'], 'orders@2026-12-01T09:30:00Z');
    assert.equal(statusOf(done)['restorePoint'], '2026-12-01T09:30:00Z');
    assert.equal(secretData(desiredOf(done, 'connection'))['dbname'], 'orders');
    // Later, the source gone: what the instance was made from is composed as it was.
    const afterXr = { ...pitr('2026-12-01T09:30:00Z'), status: statusOf(done) };
    const kept = call(
      afterXr,
      asObserved(done, (_key, obj) => healthyStatus(obj)),
      answered({ 'rds-connection': [rds] }),
    );
    assert.equal(fatalOf(kept), undefined, fatal(kept));
    assert.deepEqual(
      ((desiredOf(kept, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj)['restoreToPointInTime'],
      fp['restoreToPointInTime'],
    );
    assert.equal(secretData(desiredOf(kept, 'connection'))['dbname'], 'orders');
  });

  test('on AWS, no point: the latest restorable time', () => {
    const rsp = call(pitr(), [], source());
    const fp = (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
    assert.deepEqual(fp['restoreToPointInTime'], {
      sourceDbInstanceIdentifier: 'team-a-orders-db',
      useLatestRestorableTime: true,
    });
  });

  test('on AWS from an RDS snapshot DatabaseBackup: snapshotIdentifier', () => {
    const snapshot = backup({ method: 'rds-snapshot', location: 'rds-snapshot:orders-before-migration' });
    const rsp = call(
      databaseXr({ ...AWS_SPEC, restore: { fromBackup: { name: 'orders-db-202612020300' } } }, { name: 'orders-copy' }),
      [],
      found(snapshot),
    );
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const fp = (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
    assert.equal(fp['snapshotIdentifier'], 'orders-before-migration');
  });

  // Issue 28: the final snapshot a deleted Database left, restored through the API into a Database made again.
  test('on AWS from an RDS snapshot no DatabaseBackup records (spec.restore.fromSnapshot): nothing looked up; its database kept', () => {
    const again = (extra: Obj = {}, status?: Obj) =>
      databaseXr(
        { ...AWS_SPEC, restore: { fromSnapshot: { identifier: 'team-a-orders-final-1a2b3c4d', ...extra } } },
        { name: 'orders', ...(status ? { status } : {}) },
      );
    const rsp = call(again(), []);
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    assert.deepEqual(
      Object.keys(rsp.requirements?.resources ?? {}).filter((k) => k.startsWith('restore-')),
      [],
    );
    const fp = (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
    assert.equal(fp['snapshotIdentifier'], 'team-a-orders-final-1a2b3c4d');
    assert.equal(fp['dbName'], undefined, 'the database comes with the snapshot');
    assert.deepEqual(validateObject(desiredOf(rsp, 'rds-instance')!), [], 'valid against the provider CRD');
    assert.equal(statusOf(rsp)['phase'], 'Restoring');
    assert.match(String(statusOf(rsp)['message']), /^restoring orders from RDS snapshot team-a-orders-final-1a2b3c4d/);
    // Available: the connection names the database the snapshot holds (by default this Database's own).
    const rds = k8sSecret('orders-db-rds', NAMESPACE, {
      address: 'team-a-orders-db.abc.eu-west-1.rds.amazonaws.com',
      port: '5432',
      username: 'app',
      password: 'pw',
    });
    const observed = asObserved(rsp, (_key, obj) => healthyStatus(obj));
    const done = call({ ...again(), status: statusOf(rsp) }, observed, answered({ 'rds-connection': [rds] }));
    assert.equal(fatalOf(done), undefined, fatal(done));
    assert.equal(statusOf(done)['restoredFrom'], 'rds-snapshot:team-a-orders-final-1a2b3c4d');
    assert.equal(secretData(desiredOf(done, 'connection'))['dbname'], 'orders');
    const kept = call(
      { ...again(), status: statusOf(done) },
      asObserved(done, (_key, obj) => healthyStatus(obj)),
      answered({ 'rds-connection': [rds] }),
    );
    assert.equal(
      ((desiredOf(kept, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj)['snapshotIdentifier'],
      'team-a-orders-final-1a2b3c4d',
    );
    // Named: a snapshot of another Database's data.
    const named = call(again({ database: 'ledger' }), []);
    const named2 = call(
      { ...again({ database: 'ledger' }), status: statusOf(named) },
      asObserved(named, (_key, obj) => healthyStatus(obj)),
      answered({ 'rds-connection': [rds] }),
    );
    assert.equal(secretData(desiredOf(named2, 'connection'))['dbname'], 'ledger');
  });

  test('spec.restore.fromSnapshot refused in the cluster and beside another source, naming the field; nothing composed', () => {
    const cases: Array<[string, Obj, RegExp]> = [
      [
        'in the cluster',
        { engine: 'postgres', storageGB: 20, restore: { fromSnapshot: { identifier: 'orders-final' } } },
        /spec\.restore\.fromSnapshot names an RDS snapshot, which only placement aws restores from/,
      ],
      [
        'beside fromBackup',
        {
          ...AWS_SPEC,
          restore: { fromSnapshot: { identifier: 'orders-final' }, fromBackup: { name: 'orders-db-202612020300' } },
        },
        /spec\.restore needs exactly one of fromBackup, fromDatabase, fromSnapshot and fromDump/,
      ],
      [
        'not an identifier',
        { ...AWS_SPEC, restore: { fromSnapshot: { identifier: '1-orders' } } },
        /spec\.restore\.fromSnapshot\.identifier/,
      ],
    ];
    for (const [what, spec, message] of cases) {
      const rsp = call(databaseXr(spec, { name: 'orders' }), []);
      assert.match(fatal(rsp), message, what);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], `${what}: nothing composed`);
    }
  });

  test('CloudNativePG: recovery from the source cluster archive to the point, the source database kept', () => {
    const ha = { engine: 'postgres', storageGB: 20, highAvailability: true };
    const xr = databaseXr(
      { ...ha, restore: { fromDatabase: { name: 'orders' }, pointInTime: '2026-12-01T09:30:00Z' } },
      { name: 'orders-copy' },
    );
    const rsp = call(
      xr,
      [],
      answered({
        'restore-database': [
          sourceDatabase(withObjectStore(ha) as Obj, { earliestRestorableTime: '2026-11-30T00:00:00Z' }),
        ],
        'cnpg-crd': [CNPG_CRD_OBJECT],
      }),
    );
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const cluster = inner(desiredOf(rsp, 'cnpg-cluster'))!;
    const spec = cluster['spec'] as Obj;
    assert.deepEqual((spec['bootstrap'] as Obj)['recovery'], {
      source: 'origin',
      database: 'orders',
      owner: 'app',
      secret: { name: 'orders-copy-db-credentials' },
      recoveryTarget: { targetTime: '2026-12-01T09:30:00Z' },
    });
    assert.deepEqual((spec['externalClusters'] as Obj[])[0], {
      name: 'origin',
      plugin: {
        name: 'barman-cloud.cloudnative-pg.io',
        parameters: { barmanObjectName: 'orders-db-store', serverName: 'team-a-orders-db' },
      },
    });
    assert.equal(desiredOf(rsp, 'connection'), undefined, 'nobody connects before the recovery');
  });

  test('CloudNativePG from a backup of a Database since restored: the archive of the cluster the backup was taken of', () => {
    // Known defect (issue 29): the recovery named the source's first cluster (orders-db), whose archive
    // does not hold a backup taken after a DatabaseRestore moved orders to orders-db-r1.
    const ha = { engine: 'postgres', storageGB: 20, highAvailability: true };
    const source = databaseXr(ha, { status: { instance: 'orders-db-r1' } });
    const backupXr = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: { name: 'orders-nightly', namespace: NAMESPACE, uid: 'uid-nightly' },
      spec: { databaseRef: { name: 'orders' } },
    };
    const taking = call(backupXr, [], answered({ database: [source] }));
    assert.equal(
      ((desiredOf(taking, 'cnpg-backup')!['spec'] as Obj)['cluster'] as Obj)['name'],
      'orders-db-r1',
      'the backup is of the cluster that serves',
    );
    const taken = call(
      { ...backupXr, status: statusOf(taking) },
      asObserved(taking, () => ({
        phase: 'completed',
        startedAt: '2026-12-02T03:00:00Z',
        stoppedAt: '2026-12-02T03:00:40Z',
        destinationPath: 's3://team-a-backups/orders',
      })),
      answered({ database: [source] }),
    );
    const status = statusOf(taken);
    assert.equal(status['phase'], 'Completed');
    assert.equal(status['instance'], 'orders-db-r1', 'the backup says which cluster it was taken of');

    const copy = databaseXr({ ...ha, restore: { fromBackup: { name: 'orders-nightly' } } }, { name: 'orders-copy' });
    const rsp = call(
      copy,
      [],
      answered({
        'restore-backup': [{ ...backupXr, status }],
        'cnpg-crd': [CNPG_CRD_OBJECT],
      }),
    );
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const cluster = inner(desiredOf(rsp, 'cnpg-cluster'))!;
    assert.deepEqual(((cluster['spec'] as Obj)['externalClusters'] as Obj[])[0]!['plugin'], {
      name: 'barman-cloud.cloudnative-pg.io',
      parameters: { barmanObjectName: 'orders-db-store', serverName: 'orders-db-r1' },
    });
    assert.equal(
      ((((cluster['spec'] as Obj)['bootstrap'] as Obj)['recovery'] as Obj)['recoveryTarget'] as Obj)['targetTime'],
      '2026-12-02T03:00:40Z',
    );
  });

  test('refused with Fatal, naming the field and what is allowed', () => {
    const cases: Array<[string, RunFunctionResponse, RegExp]> = [
      [
        'future',
        call(pitr('2099-01-01T00:00:00Z'), [], source()),
        /spec\.restore\.pointInTime is 2099-01-01T00:00:00Z, which is in the future/,
      ],
      [
        'before the window',
        call(pitr('2026-11-01T00:00:00Z'), [], source()),
        /spec\.restore\.pointInTime is 2026-11-01T00:00:00Z, before the earliest restorable time 2026-11-25T10:00:00Z; allowed: 2026-11-25T10:00:00Z to 2026-12-02T03:55:00Z/,
      ],
      [
        'after the window',
        call(pitr('2026-12-02T03:58:00Z'), [], source()),
        /after the latest restorable time 2026-12-02T03:55:00Z/,
      ],
      [
        'another engine',
        call(pitr('2026-12-01T09:30:00Z', { engine: 'mysql', version: '8.4' }), [], source()),
        /spec\.restore\.fromDatabase\.name: Database orders is postgres 17 \(on AWS\), and this Database is mysql 8\.4 \(on AWS\)/,
      ],
    ];
    for (const [what, rsp, message] of cases) {
      assert.match(fatal(rsp), message, what);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], `${what}: nothing composed`);
    }
  });
});

describe('the DatabaseRestore blueprint', () => {
  const restoreXr = (spec: Obj, status?: Obj): Obj => ({
    apiVersion: 'example.com/v1',
    kind: 'DatabaseRestore',
    metadata: { name: 'orders-undo', namespace: NAMESPACE, uid: 'uid-undo' },
    spec: { databaseRef: { name: 'orders' }, ...spec },
    ...(status ? { status } : {}),
  });
  const clusterDb = (status: Obj = {}): Obj => ({
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: NAMESPACE, uid: 'uid-orders' },
    spec: withObjectStore({ engine: 'postgres', storageGB: 20 }),
    status,
  });

  test('looks up the Database and the backup; composes nothing of its own (its Usage: deletion-order.test.ts); mirrors what the Database says', () => {
    const first = call(restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }));
    assert.deepEqual(Object.keys(first.requirements?.resources ?? {}).sort(), ['backup', 'database', 'usage-crd']);
    assert.equal(statusOf(first)['phase'], 'Pending');
    assert.equal(statusOf(first)['message'], 'looking up Database orders');

    const waiting = call(
      restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }),
      [],
      answered({ database: [clusterDb()], backup: [backup()] }),
    );
    assert.equal(fatalOf(waiting), undefined, fatal(waiting));
    assert.deepEqual(Object.keys(waiting.desired?.resources ?? {}), []);
    assert.match(String(statusOf(waiting)['message']), /^waiting for Database orders to start the restore/);

    const running = call(
      restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }),
      [],
      answered({
        database: [
          clusterDb({
            restore: { name: 'orders-undo', phase: 'Restoring', instance: 'orders-db-r1', message: 'restoring orders' },
          }),
        ],
        backup: [backup()],
      }),
    );
    assert.equal(statusOf(running)['phase'], 'Restoring');
    assert.equal(statusOf(running)['instance'], 'orders-db-r1');
    assert.equal(statusOf(running)['ready'], false);

    const kept =
      'PersistentVolumeClaim data-orders-db-0 (the data before a restore) is kept; delete it when it is no longer needed: kubectl delete pvc data-orders-db-0 -n team-a';
    const switched = call(
      restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }),
      [],
      answered({
        database: [
          clusterDb({
            restores: [
              {
                name: 'orders-undo',
                instance: 'orders-db-r1',
                previousInstance: 'orders-db',
                switchedAt: '2026-12-02T04:00:00Z',
              },
            ],
            kept: [kept],
          }),
        ],
        // Since pruned: a restore that switched is history.
        backup: [],
      }),
    );
    assert.equal(fatalOf(switched), undefined, fatal(switched));
    assert.equal(statusOf(switched)['phase'], 'Switched');
    assert.equal(statusOf(switched)['ready'], true);
    assert.equal(
      statusOf(switched)['message'],
      'switched Database orders to orders-db-r1; orders-db is kept for you to delete (status.kept)',
      'a sentence, also when the Database keeps it only in its history',
    );
    assert.deepEqual(statusOf(switched)['kept'], [kept]);
  });

  test('Switched is final: the Database deleted and created again does not make the request Pending again', () => {
    // Found by the chaos harness (issue 29): while a Database deleted under Retain was gone, its switched
    // DatabaseRestores said Pending ("Database orders does not exist"); created again, the Database took the
    // oldest of them up again and rolled its data back to that request's backup.
    const switched = {
      requested: 'fromBackup orders-db-202612020300',
      phase: 'Switched',
      instance: 'orders-db-r1',
      previousInstance: 'orders-db',
      switchedAt: '2026-12-02T04:00:00Z',
      message: 'switched Database orders to orders-db-r1',
    };
    const xr = restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }, { ...switched, ready: true });
    for (const [what, rsp] of [
      ['the Database gone', call(xr, [], answered({ database: [], backup: [backup()] }))],
      ['the Database not read yet', call(xr, [])],
      [
        'the Database created again, knowing nothing of it',
        call(xr, [], answered({ database: [clusterDb()], backup: [] })),
      ],
    ] as const) {
      assert.equal(fatalOf(rsp), undefined, `${what}: ${fatal(rsp)}`);
      assert.equal(statusOf(rsp)['phase'], 'Switched', what);
      assert.equal(statusOf(rsp)['instance'], 'orders-db-r1', what);
      assert.equal(statusOf(rsp)['ready'], true, what);
    }
  });

  test('claims mode: the restore the Database reports is the claim, by its name', () => {
    // Found by the chaos harness (issue 29): the composite's own name and uid never matched what the Database
    // recorded (the claim's), so a DatabaseRestore claim said Pending forever after its restore had switched.
    const composite = {
      apiVersion: 'example.com/v1',
      kind: 'XDatabaseRestore',
      metadata: {
        name: 'orders-undo-454hq',
        uid: 'uid-x-orders-undo',
        labels: { 'crossplane.io/claim-name': 'orders-undo', 'crossplane.io/claim-namespace': NAMESPACE },
      },
      spec: { databaseRef: { name: 'orders' }, fromBackup: { name: 'orders-db-202612020300' } },
    };
    const restore = {
      name: 'orders-undo',
      uid: 'uid-of-the-claim',
      instance: 'orders-db-r1',
      previousInstance: 'orders-db',
    };
    const running = call(
      composite,
      [],
      answered({
        database: [clusterDb({ restore: { ...restore, phase: 'Restoring', message: 'restoring orders' } })],
        backup: [backup()],
      }),
    );
    assert.equal(fatalOf(running), undefined, fatal(running));
    assert.equal(statusOf(running)['phase'], 'Restoring');
    const switched = call(
      composite,
      [],
      answered({
        database: [clusterDb({ restores: [{ ...restore, switchedAt: '2026-12-02T04:00:00Z' }] })],
        backup: [],
      }),
    );
    assert.equal(fatalOf(switched), undefined, fatal(switched));
    assert.equal(statusOf(switched)['phase'], 'Switched');
    assert.equal(statusOf(switched)['instance'], 'orders-db-r1');
    assert.equal(statusOf(switched)['ready'], true);
  });

  // Issue 26: a request that cannot be done against the Database as it is was a Fatal answer, so the reason
  // showed only in `kubectl describe`; it is now phase Refused with the reason in status (a column), and a warning.
  test('a spec that is not valid is Fatal, naming the field', () => {
    const cases: Array<[string, RunFunctionResponse, RegExp]> = [
      [
        'both',
        call(restoreXr({ pointInTime: '2026-12-01T09:30:00Z', fromBackup: { name: 'x' } })),
        /spec needs exactly one of fromBackup and pointInTime/,
      ],
      [
        'changed',
        call(restoreXr({ fromBackup: { name: 'other' } }, { requested: 'fromBackup orders-db-202612020300' })),
        /spec cannot be changed; make another DatabaseRestore/,
      ],
    ];
    for (const [what, rsp, message] of cases) assert.match(fatal(rsp), message, what);
  });

  test('one that cannot be done as things are is Refused, naming the field in status and a warning; nothing composed', () => {
    const db = clusterDb();
    const cases: Array<[string, RunFunctionResponse, RegExp]> = [
      [
        'point in time of a StatefulSet',
        call(restoreXr({ pointInTime: '2026-12-01T09:30:00Z' }), [], answered({ database: [db] })),
        /^refused: spec\.pointInTime: a Database in a StatefulSet restores from dumps/,
      ],
      [
        'missing backup',
        call(restoreXr({ fromBackup: { name: 'nope' } }), [], answered({ database: [db], backup: [] })),
        /^refused: spec\.fromBackup\.name names DatabaseBackup nope, which does not exist in this namespace/,
      ],
      [
        'a backup still running',
        call(
          restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }),
          [],
          answered({ database: [db], backup: [backup({ phase: 'Running', restorable: false })] }),
        ),
        /^refused: spec\.fromBackup\.name: DatabaseBackup orders-db-202612020300 is Running and not restorable/,
      ],
    ];
    for (const [what, rsp, message] of cases) {
      assert.equal(fatalOf(rsp), undefined, `${what}: ${fatal(rsp)}`);
      assert.equal(statusOf(rsp)['phase'], 'Refused', what);
      assert.equal(statusOf(rsp)['ready'], false, what);
      assert.match(String(statusOf(rsp)['message']), message, what);
      const warned = rsp.results.find((x) => x.severity === Severity.SEVERITY_WARNING && x.reason === 'RestoreRefused');
      assert.match(warned?.message ?? '', message, `${what}: a warning event`);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], `${what}: nothing composed`);
    }
    // Judged again on every call: once the backup is Completed, it waits for the Database like any other.
    const later = call(
      restoreXr(
        { fromBackup: { name: 'orders-db-202612020300' } },
        { phase: 'Refused', requested: 'fromBackup orders-db-202612020300' },
      ),
      [],
      answered({ database: [db], backup: [backup()] }),
    );
    assert.equal(statusOf(later)['phase'], 'Pending');
  });

  test('a waiting one says exactly what it waits behind', () => {
    const waitsFor = (status: Obj, name = 'orders-undo') =>
      String(
        statusOf(
          call(
            {
              ...restoreXr({ fromBackup: { name: 'orders-db-202612020300' } }),
              metadata: { name, namespace: NAMESPACE, uid: `uid-${name}` },
            },
            [],
            answered({ database: [clusterDb(status)], backup: [backup()] }),
          ),
        )['message'],
      );
    const restoring = {
      ready: true,
      phase: 'Restoring',
      restore: { name: 'first', phase: 'Restoring', instance: 'orders-db-r1', waiting: ['second', 'orders-undo'] },
    };
    assert.equal(
      waitsFor(restoring),
      'waiting for Database orders to start the restore after DatabaseRestore first (which is restoring it into orders-db-r1), then second; this one starts once second has switched',
    );
    assert.equal(
      waitsFor(restoring, 'second'),
      'waiting for Database orders to start the restore after DatabaseRestore first (which is restoring it into orders-db-r1); this one starts once first has switched',
    );
    assert.match(
      waitsFor({ ready: false, phase: 'Provisioning', message: 'StatefulSet orders-db: 0/1 replicas ready' }),
      /^waiting for Database orders to start the restore once it serves \(it is Provisioning: StatefulSet orders-db: 0\/1 replicas ready\)$/,
    );
    assert.match(
      waitsFor({ ready: true, phase: 'Ready' }),
      /^waiting for Database orders to start the restore \(it does at its next reconcile/,
    );
    // The Database shows its oldest refusal as Failed when nothing is being built: that holds nothing up.
    const refusedShown = { name: 'orders-undo-tuesday', phase: 'Failed', message: 'refused: no point in time' };
    assert.match(
      waitsFor({ ready: true, phase: 'Ready', restore: refusedShown }),
      /^waiting for Database orders to start the restore \(it does at its next reconcile/,
    );
    // A restore that failed after building its instance does hold the queue until it is deleted.
    assert.match(
      waitsFor({ ready: true, phase: 'Ready', restore: { ...refusedShown, instance: 'orders-db-r1' } }),
      /after DatabaseRestore orders-undo-tuesday \(which failed and holds the queue until it is deleted\)/,
    );
  });
});
