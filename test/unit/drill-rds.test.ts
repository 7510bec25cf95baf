// Restore drills of RDS snapshots, call by call. Asked (only by someone:
// nothing schedules one on AWS, a scratch instance costs money), a Completed
// snapshot is made into a scratch RDS instance in the Database's subnets and
// security groups, with a master password of its own the provider generates
// into a Secret the drill composes; once AWS says it is available, a Job
// counts its tables and rows as its master user, reading the provider's
// connection Secret; the counts, or AWS's failure to restore, are recorded
// in status.verification, and the instance, its Secret and the Job go.
// provider-upjet-aws and AWS are written here as observed state: a STAND-IN
// for the provider (test/aws/moto.test.ts replays the scratch instance
// through the SDK against moto).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { rdsScratchIdentifier } from '../../src/blueprints/lifecycle/placements/rds-drill.js';
import { setClock } from '../../src/clock.js';
import { SCRATCH_LABEL } from '../../src/kinds/index.js';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
  statusOf,
} from '../support/database.js';
import { countJobStatus, countPod as podOfCount } from '../support/drills.js';
import { validateObject } from '../support/schemas.js';

const SPEC = {
  engine: 'postgres',
  version: '16',
  storageGB: 50,
  placement: 'aws',
  aws: {
    region: 'eu-west-1',
    instanceClass: 'db.t4g.medium',
    subnetIds: ['subnet-0a1b2c', 'subnet-3d4e5f'],
    securityGroupIds: ['sg-0123abcd'],
  },
};
const NAME = 'orders-before-migration';
const SNAPSHOT = NAME;
const COMPLETED = {
  phase: 'Completed',
  method: 'rds-snapshot',
  instance: 'team-a-orders',
  completedAt: '2026-12-06T03:14:10Z',
  location: `rds-snapshot:${SNAPSHOT}`,
  restorable: true,
  sizeBytes: 50 * 2 ** 30,
};
const REQUEST = 'before-friday';
const SCRATCH = `${NAME}-drill-${REQUEST}`;
const JOB = `${NAME}-verify-${REQUEST}`;
const UID = 'uid-backup-rds';
const IDENTIFIER = rdsScratchIdentifier({ namespace: NAMESPACE, name: NAME, uid: UID }, REQUEST);

const backupXr = (requested?: string, status: Obj = COMPLETED): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'DatabaseBackup',
  metadata: { name: NAME, namespace: NAMESPACE, uid: UID },
  spec: { databaseRef: { name: 'orders' }, ...(requested ? { verification: { requested } } : {}) },
  status,
});
const db = answered({ database: [databaseXr(SPEC, { bare: true })] });

/** The provider's Snapshot as observed: available, of 50 GB. */
function snapshotObserved(): Obj {
  const [observed] = asObserved(call(backupXr(), [], db), () => ({
    atProvider: { status: 'available', allocatedStorage: 50 },
    conditions: [{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: '2026-12-06T03:14:10Z' }],
  }));
  return observed!;
}

/** The scratch instance as the provider reports it: AWS's state, and its conditions. */
const instanceStatus = (aws: string | undefined, ready: boolean, synced: Obj = { status: 'True' }): Obj => ({
  atProvider: { ...(aws ? { status: aws } : {}), ...(ready ? { address: `${IDENTIFIER}.abc.rds.amazonaws.com` } : {}) },
  conditions: [
    { type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'Available' : 'Creating' },
    { type: 'Synced', reason: 'ReconcileSuccess', ...synced },
  ],
});
const AVAILABLE = instanceStatus('available', true);

const observedWith = (rsp: ReturnType<typeof call>, scratch: Obj, job?: Obj) =>
  asObserved(rsp, (key) =>
    key === 'drill-rds-instance' ? scratch : key === 'verify' ? job : key === 'rds-snapshot' ? undefined : undefined,
  ).map((o) => (o['kind'] === 'Snapshot' ? snapshotObserved() : o));

const countPod = (verify: Obj) => podOfCount(JOB, NAME, verify);
const jobStatus = (done?: 'Complete' | 'Failed') =>
  countJobStatus('2026-12-07T05:31:05Z', '2026-12-07T05:31:40Z', done);

const at = <T>(time: string, f: () => T): T => {
  const restore = setClock(() => new Date(time));
  try {
    return f();
  } finally {
    restore();
  }
};
const started = () => at('2026-12-07T05:00:00Z', () => call(backupXr(REQUEST), [snapshotObserved()], db));
const running = (first: ReturnType<typeof call>) =>
  backupXr(REQUEST, { ...COMPLETED, verification: statusOf(first)['verification'] });

describe('a restore drill of an RDS snapshot, asked for', () => {
  test('a scratch instance from the snapshot, in the Database’s subnets, deleted with no final snapshot', () => {
    const rsp = started();
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const instance = desiredOf(rsp, 'drill-rds-instance')!;
    assert.deepEqual(validateObject(instance), [], 'valid against the real Instance CRD');
    const meta = instance['metadata'] as Obj;
    assert.equal(meta['name'], SCRATCH);
    assert.equal((meta['labels'] as Obj)[SCRATCH_LABEL], 'drill');
    const spec = instance['spec'] as Obj;
    assert.deepEqual(spec['managementPolicies'], ['*'], 'deleting it deletes the instance in AWS');
    assert.deepEqual(spec['writeConnectionSecretToRef'], { name: `${SCRATCH}-rds` });
    const p = spec['forProvider'] as Obj;
    assert.equal(p['identifier'], IDENTIFIER);
    assert.match(IDENTIFIER, /^team-a-orders-before-migration-drill-[0-9a-f]{8}$/);
    assert.equal(p['snapshotIdentifier'], SNAPSHOT);
    assert.equal(p['instanceClass'], 'db.t4g.medium');
    // The snapshot's size and backup retention: a larger size or a retention of 0 would each be a change after
    // the restore (hours of storage optimization; an outage mid-count).
    assert.equal(p['allocatedStorage'], undefined);
    assert.equal(p['backupRetentionPeriod'], undefined);
    assert.equal(p['deleteAutomatedBackups'], true);
    assert.equal(p['skipFinalSnapshot'], true);
    assert.equal(p['finalSnapshotIdentifier'], undefined);
    assert.equal(p['deletionProtection'], false);
    assert.equal(p['multiAz'], false);
    assert.equal(p['publiclyAccessible'], false);
    assert.deepEqual(p['dbSubnetGroupNameRef'], { name: 'orders-db-subnets' });
    assert.deepEqual(p['vpcSecurityGroupIds'], ['sg-0123abcd']);
    assert.equal(p['autoGeneratePassword'], true);
    assert.deepEqual(p['passwordSecretRef'], { name: `${SCRATCH}-password`, key: 'password' });
    // Its version is the snapshot's: RDS makes it so (a snapshot from before an upgrade stays on its version).
    assert.equal(p['engineVersion'], undefined);
    // The password Secret is composed empty: the provider fills it, and it goes with the drill.
    const secret = desiredOf(rsp, 'drill-rds-password')!;
    assert.equal((secret['metadata'] as Obj)['name'], `${SCRATCH}-password`);
    assert.equal(((secret['metadata'] as Obj)['labels'] as Obj)[SCRATCH_LABEL], 'drill');
    assert.equal(secret['data'], undefined);
    assert.equal(desiredOf(rsp, 'verify'), undefined, 'nothing counts it before it is available');
    assert.ok(desiredOf(rsp, 'rds-snapshot'), 'the snapshot stays');
    assert.deepEqual(statusOf(rsp)['verification'], {
      request: REQUEST,
      result: 'Running',
      startedAt: '2026-12-07T05:00:00.000Z',
    });
  });

  test('two requests of one backup, and one backup name in two clusters, never share an identifier', () => {
    const other = rdsScratchIdentifier({ namespace: NAMESPACE, name: NAME, uid: UID }, 'after-friday');
    const elsewhere = rdsScratchIdentifier({ namespace: NAMESPACE, name: NAME, uid: 'uid-other-cluster' }, REQUEST);
    assert.notEqual(other, IDENTIFIER);
    assert.notEqual(elsewhere, IDENTIFIER);
    const long = rdsScratchIdentifier({ namespace: 'payments-eu-west', name: 'x'.repeat(80), uid: UID }, REQUEST);
    assert.ok(long.length <= 63 && /^[a-z][a-z0-9-]*[a-z0-9]$/.test(long) && !long.includes('--'), long);
  });

  test('being made: the instance and its Secret kept, nothing counted yet', () => {
    const first = started();
    const rsp = call(running(first), observedWith(first, instanceStatus('creating', false)), db);
    assert.ok(desiredOf(rsp, 'drill-rds-instance'));
    assert.ok(desiredOf(rsp, 'drill-rds-password'));
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    assert.equal((statusOf(rsp)['verification'] as Obj)['result'], 'Running');
  });

  test('available: a Job counts every database as the master user, host and password from the provider’s Secret', () => {
    const first = started();
    const rsp = call(running(first), observedWith(first, AVAILABLE), db);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const job = desiredOf(rsp, 'verify')!;
    assert.deepEqual(validateObject(job), []);
    assert.equal((job['metadata'] as Obj)['name'], JOB);
    const [count] = (((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[];
    assert.equal(count!['image'], 'postgres:16');
    const env = Object.fromEntries((count!['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    const ref = (key: string) => ({ secretKeyRef: { name: `${SCRATCH}-rds`, key } });
    assert.deepEqual(env['HOST'], ref('address'));
    assert.deepEqual(env['PORT'], ref('port'));
    assert.deepEqual(env['DB_USER'], ref('username'));
    assert.deepEqual(env['DB_PASSWORD'], ref('password'));
    const script = String((count!['command'] as string[])[2]);
    // RDS for PostgreSQL keeps rdsadmin closed to the master user: not counted.
    assert.match(script, /WHERE datallowconn AND NOT datistemplate AND datname <> 'rdsadmin'/);
    assert.ok(desiredOf(rsp, 'drill-rds-instance'));
  });

  test('a MySQL snapshot is counted with the MySQL client, the server’s own schemas left out', () => {
    const mysql = answered({ database: [databaseXr({ ...SPEC, engine: 'mysql', version: '8.0' }, { bare: true })] });
    const first = at('2026-12-07T05:00:00Z', () => call(backupXr(REQUEST), [snapshotObserved()], mysql));
    const rsp = call(running(first), observedWith(first, AVAILABLE), mysql);
    const job = desiredOf(rsp, 'verify')!;
    const [count] = (((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[];
    assert.equal(count!['image'], 'mysql:8.0');
    const script = String((count!['command'] as string[])[2]);
    assert.match(script, /mysql --defaults-file=/);
    assert.match(script, /table_schema NOT IN \('mysql', 'information_schema', 'performance_schema', 'sys'\)/);
    assert.doesNotMatch(script, /psql/);
  });

  test('counted: Passed with the counts; the instance, its Secret and the Job go', () => {
    const first = started();
    const withJob = call(running(first), observedWith(first, AVAILABLE), db);
    const observed = observedWith(withJob, AVAILABLE, jobStatus('Complete'));
    const counts = { reason: 'Completed', exitCode: 0, message: '{"tables":6,"rows":10000,"seconds":3}' };
    const rsp = at('2026-12-07T05:32:00Z', () =>
      call(running(first), observed, { ...db, ...answered({ pod: [countPod(counts)] }) }),
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.deepEqual(statusOf(rsp)['verification'], {
      request: REQUEST,
      result: 'Passed',
      startedAt: '2026-12-07T05:00:00.000Z',
      verifiedAt: '2026-12-07T05:31:40Z',
      tables: 6,
      rows: 10000,
      durationSeconds: 1900,
    });
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined, 'the scratch instance goes');
    assert.equal(desiredOf(rsp, 'drill-rds-password'), undefined, 'and its password Secret');
    assert.equal(desiredOf(rsp, 'verify'), undefined, 'and the Job');
    assert.ok(desiredOf(rsp, 'rds-snapshot'), 'the snapshot stays');
  });

  test('AWS could not restore the snapshot: Failed, a warning, and the instance goes', () => {
    const first = started();
    const rsp = at('2026-12-07T05:40:00Z', () =>
      call(running(first), observedWith(first, instanceStatus('incompatible-restore', false)), db),
    );
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Failed');
    assert.equal(v['durationSeconds'], 2400);
    assert.equal(
      v['reason'],
      `AWS could not restore RDS snapshot ${SNAPSHOT} into scratch instance ${IDENTIFIER} (AWS status: incompatible-restore)`,
    );
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationFailed' && r.severity === Severity.SEVERITY_WARNING));
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
    assert.equal(desiredOf(rsp, 'drill-rds-password'), undefined);
  });

  test('AWS has no such snapshot: Failed with what the provider said first (its LastAsyncOperation condition)', () => {
    const first = started();
    const missing = instanceStatus(undefined, false);
    (missing['conditions'] as Obj[]).push({
      type: 'LastAsyncOperation',
      status: 'False',
      reason: 'AsyncCreateFailure',
      message: `async create failed: failed to create the resource: operation error RDS: RestoreDBInstanceFromDBSnapshot, api error DBSnapshotNotFound: DBSnapshot not found: ${SNAPSHOT}`,
    });
    const rsp = call(running(first), observedWith(first, missing), db);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Failed');
    assert.match(
      String(v['reason']),
      /^AWS refused to restore RDS snapshot orders-before-migration: async create failed/,
    );
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('AWS refuses the request itself (a class, a quota): Incomplete at once, nothing judged', () => {
    const first = started();
    const refused = instanceStatus(undefined, false, {
      status: 'False',
      reason: 'ReconcileError',
      message:
        'create failed: api error InvalidParameterCombination: RDS does not support creating a DB instance with the following combination',
    });
    const rsp = call(running(first), observedWith(first, refused), db);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(
      String(v['reason']),
      /^AWS refused to make scratch instance .*InvalidParameterCombination.*; nothing was judged$/,
    );
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('serving while AWS optimizes its storage: counted, not waited on', () => {
    const first = started();
    const rsp = call(running(first), observedWith(first, instanceStatus('storage-optimization', true)), db);
    assert.ok(desiredOf(rsp, 'verify'), 'the count starts');
  });

  test('a backup whose location is no RDS snapshot: Incomplete, nothing made', () => {
    const rsp = at('2026-12-07T05:00:00Z', () =>
      call(
        backupXr(REQUEST, { ...COMPLETED, location: 's3://team-a-backups/orders/x.dump' }),
        [snapshotObserved()],
        db,
      ),
    );
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /names no RDS snapshot \(its location is "s3:/);
  });

  test('a newer request while an earlier scratch instance is still there: that one goes first', () => {
    const first = started();
    const observed = observedWith(first, AVAILABLE);
    const rsp = call(
      backupXr('after-friday', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      db,
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined, 'the earlier one goes');
    assert.equal(desiredOf(rsp, 'drill-rds-password'), undefined);
    assert.deepEqual((({ request, result }) => ({ request, result }))(statusOf(rsp)['verification'] as Obj), {
      request: 'after-friday',
      result: 'Running',
    });
    // Once it is gone, the new request's instance is made.
    const next = call(
      backupXr('after-friday', { ...COMPLETED, verification: statusOf(rsp)['verification'] }),
      [snapshotObserved()],
      db,
    );
    assert.equal((desiredOf(next, 'drill-rds-instance')!['metadata'] as Obj)['name'], `${NAME}-drill-after-friday`);
  });

  test('counting for six hours and nothing counted: Incomplete, everything goes', () => {
    const first = started();
    const withJob = call(running(first), observedWith(first, AVAILABLE), db);
    const observed = observedWith(withJob, AVAILABLE, jobStatus());
    const rsp = at('2026-12-07T11:00:01Z', () => call(running(first), observed, db));
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /was not counted within 6 hours/);
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('the Database refused (its spec invalid): the drill waits, then stops after six hours, the instance gone', () => {
    const first = started();
    const observed = observedWith(first, AVAILABLE);
    const broken = answered({ database: [databaseXr({ ...SPEC, storageGB: -1 }, { bare: true })] });
    const waiting = at('2026-12-07T06:00:00Z', () => call(running(first), observed, broken));
    assert.equal(fatalOf(waiting), undefined, fatalOf(waiting)?.message);
    assert.ok(desiredOf(waiting, 'drill-rds-instance'), 'kept while the spec may be fixed');
    const late = at('2026-12-07T11:00:01Z', () => call(running(first), observed, broken));
    assert.equal(fatalOf(late), undefined, fatalOf(late)?.message);
    assert.equal(desiredOf(late, 'drill-rds-instance'), undefined, 'it bills by the hour: it goes');
    assert.equal(desiredOf(late, 'drill-rds-password'), undefined);
    assert.ok(desiredOf(late, 'rds-snapshot'), 'the snapshot stays');
    const v = statusOf(late)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^Database orders has been refused for 6 hours \(its spec is invalid/);
    assert.match(String(statusOf(late)['message']), /Database orders is refused now \(its spec is invalid/);
  });

  test('stuck in a state that needs someone (no capacity): Incomplete, nothing judged', () => {
    const first = started();
    const rsp = call(running(first), observedWith(first, instanceStatus('insufficient-capacity', false)), db);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /needs someone: .*nothing was judged$/);
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationIncomplete'));
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('not available after six hours: Incomplete, the instance goes', () => {
    const first = started();
    const rsp = at('2026-12-07T11:00:01Z', () =>
      call(running(first), observedWith(first, instanceStatus('creating', false)), db),
    );
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /was not available after 6 hours \(AWS status: creating\)/);
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('the count could not get in: Incomplete, not Failed', () => {
    const first = started();
    const withJob = call(running(first), observedWith(first, AVAILABLE), db);
    const observed = observedWith(withJob, AVAILABLE, jobStatus('Failed'));
    const refused = {
      reason: 'Error',
      exitCode: 1,
      message: 'the scratch server at x did not let the count in within 5 minutes: psql: error: connection refused',
    };
    const rsp = call(running(first), observed, { ...db, ...answered({ pod: [countPod(refused)] }) });
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^the count on the scratch RDS instance failed \(exit code 1\)/);
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
  });

  test('the Database deleted mid-drill: the instance, its Secret and the Job go, recorded Incomplete', () => {
    const first = started();
    const withJob = call(running(first), observedWith(first, AVAILABLE), db);
    const observed = observedWith(withJob, AVAILABLE, jobStatus());
    const rsp = call(running(first), observed, answered({ database: [] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'drill-rds-instance'), undefined);
    assert.equal(desiredOf(rsp, 'drill-rds-password'), undefined);
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    assert.ok(desiredOf(rsp, 'rds-snapshot'), 'the snapshot itself stays');
    assert.equal((statusOf(rsp)['verification'] as Obj)['result'], 'Incomplete');
  });

  test('nothing asks for one: a Database on AWS never schedules a drill', () => {
    const rsp = at('2026-12-13T05:00:00Z', () => call(databaseXr(SPEC), [], {}));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const composed = Object.values(rsp.desired?.resources ?? {}).map((r) => (r.resource as Obj)['kind']);
    assert.ok(!composed.includes('DatabaseBackup'), String(composed));
    // And a DatabaseBackup nobody asked a drill of composes none.
    const plain = call(backupXr(), [snapshotObserved()], db);
    assert.equal(desiredOf(plain, 'drill-rds-instance'), undefined);
    assert.equal(statusOf(plain)['verification'], undefined);
  });
});
