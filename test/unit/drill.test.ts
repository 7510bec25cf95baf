// Restore drills (spec.backup.verify, issue 30), call by call. A Completed
// dump asked for a drill (spec.verification.requested) composes a Job that
// downloads the dump and restores it into a scratch server in its own pod,
// reaching no live server; its counts or its failure are recorded in
// status.verification and the Job goes. The Database asks its newest
// Completed backup for one on its verify schedule, one at a time, never
// beside a restore, and reports what they found: lastVerifiedTime,
// BackupVerified, and Degraded when its newest good backup failed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
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
import { healthyStatus } from '../support/observed-state.js';

const STORE = {
  bucket: 'team-a-backups',
  region: 'eu-west-1',
  endpoint: 'http://minio.storage:9000',
  credentialsSecretRef: { name: 'backup-store' },
};
const COMPLETED = {
  phase: 'Completed',
  method: 'dump',
  location: 's3://team-a-backups/orders/orders-db-202612060300.dump',
  completedAt: '2026-12-06T03:01:10Z',
  restorable: true,
};
const backupXr = (requested?: string, status: Obj = COMPLETED): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'DatabaseBackup',
  metadata: { name: 'orders-db-202612060300', namespace: NAMESPACE, uid: 'uid-backup' },
  spec: { databaseRef: { name: 'orders' }, ...(requested ? { verification: { requested } } : {}) },
  status,
});
const db = answered({
  database: [
    databaseXr({ engine: 'postgres', version: '16', storageGB: 20, backup: { objectStore: STORE } }, { bare: true }),
  ],
});
const JOB = 'orders-db-202612060300-verify-202612070500';
const jobStatus = (done?: 'Complete' | 'Failed') => ({
  startTime: '2026-12-07T05:00:05Z',
  ...(done === 'Complete' ? { completionTime: '2026-12-07T05:00:41Z' } : {}),
  ...(done ? { conditions: [{ type: done, status: 'True', lastTransitionTime: '2026-12-07T05:00:41Z' }] } : {}),
});
function drillPod(download: Obj, verify?: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${JOB}-x1`,
      namespace: NAMESPACE,
      labels: {
        'batch.kubernetes.io/job-name': JOB,
        'app.kubernetes.io/name': 'database-backup',
        'app.kubernetes.io/instance': 'orders-db-202612060300',
      },
    },
    status: {
      phase: verify?.['exitCode'] === 0 ? 'Succeeded' : 'Failed',
      initContainerStatuses: [{ name: 'download', state: { terminated: download } }],
      containerStatuses: verify ? [{ name: 'verify', state: { terminated: verify } }] : [],
    },
  };
}

describe('a restore drill of a DatabaseBackup', () => {
  test('asked of a Completed dump: a Job downloads it and restores it into a scratch server of its own pod', () => {
    const rsp = call(backupXr('202612070500'), [], db);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const job = desiredOf(rsp, 'verify')!;
    assert.equal((job['metadata'] as Obj)['name'], JOB);
    const pod = ((job['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const [download] = pod['initContainers'] as Obj[];
    const [verify] = pod['containers'] as Obj[];
    assert.equal(download!['image'], 'amazon/aws-cli:2.22.35');
    assert.equal(verify!['image'], 'postgres:16');
    assert.match(String((verify!['command'] as string[])[2]), /\ninitdb [\s\S]*\npg_restore \$conn -d check /);
    // The scratch server is the pod's: no live server's host, user or password is given to it.
    const env = (verify!['env'] as Obj[]).map((e) => e['name']);
    assert.deepEqual(env, ['IN', 'WORK', 'HOME']);
    assert.deepEqual(statusOf(rsp)['verification'], {
      request: '202612070500',
      result: 'Running',
      startedAt: (statusOf(rsp)['verification'] as Obj)['startedAt'],
    });
    assert.equal(statusOf(rsp)['phase'], 'Completed', 'the backup stays Completed while it is drilled');
    // Not asked: nothing composed, as before.
    assert.deepEqual(Object.keys(call(backupXr(), [], db).desired!.resources), []);
  });

  test('the counts recorded, then the Job (and its scratch server) goes; the same request asks nothing more', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus('Complete'));
    const counts = { reason: 'Completed', exitCode: 0, message: '{"tables":3,"rows":10000,"expected":3,"seconds":4}' };
    const ended = call(
      backupXr('202612070500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      {
        ...db,
        ...answered({ pod: [drillPod({ reason: 'Completed', exitCode: 0 }, counts)] }),
      },
    );
    const v = statusOf(ended)['verification'] as Obj;
    assert.equal(v['result'], 'Passed');
    assert.equal(v['tables'], 3);
    assert.equal(v['rows'], 10000);
    assert.equal(v['verifiedAt'], '2026-12-07T05:00:41Z');
    assert.equal(typeof v['durationSeconds'], 'number');
    assert.equal(desiredOf(ended, 'verify'), undefined, 'recorded: the Job goes');
    const later = call(backupXr('202612070500', { ...COMPLETED, verification: v }), observed, db);
    assert.equal(desiredOf(later, 'verify'), undefined);
    assert.deepEqual(statusOf(later)['verification'], v);
  });

  test('ended, but its pod not read yet: judged on the next call, the Job kept meanwhile', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus('Complete'));
    const unread = call(
      backupXr('202612070500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      db,
    );
    assert.ok(desiredOf(unread, 'verify'));
    assert.equal((statusOf(unread)['verification'] as Obj)['result'], 'Running');
  });

  test('a dump damaged at rest: Failed with the download step’s words, a warning, and the Job goes', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus('Failed'));
    const damaged = {
      reason: 'Error',
      exitCode: 5,
      message:
        's3://team-a-backups/orders/orders-db-202612060300.dump does not match the checksum stored with it (damaged at rest); nothing was restored',
    };
    const rsp = call(
      backupXr('202612070500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      {
        ...db,
        ...answered({ pod: [drillPod(damaged)] }),
      },
    );
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Failed');
    assert.match(String(v['reason']), /^the download failed \(exit code 5\): .*damaged at rest/);
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationFailed' && r.severity === Severity.SEVERITY_WARNING));
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    assert.equal(statusOf(rsp)['phase'], 'Completed', 'the record of the backup is not rewritten');
  });

  test('a drill stopped by something else than the backup (the store unreachable): Incomplete, not Failed', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus('Failed'));
    const unreachable = { reason: 'Error', exitCode: 1, message: 'Could not connect to the endpoint URL' };
    const rsp = call(
      backupXr('202612070500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      { ...db, ...answered({ pod: [drillPod(unreachable)] }) },
    );
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^the download failed \(exit code 1\): Could not connect/);
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationIncomplete'));
    assert.ok(!rsp.results.some((r) => r.reason === 'VerificationFailed'));
  });
});

describe('a restore drill whose Database is deleted meanwhile', () => {
  test('its Job goes, and the drill is recorded Incomplete (it says nothing of the backup)', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus());
    const rsp = call(
      backupXr('202612070500', { ...COMPLETED, verification: statusOf(first)['verification'] }),
      observed,
      answered({ database: [] }),
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'verify'), undefined);
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.match(String(v['reason']), /^Database orders is gone: the drill stopped/);
    assert.equal(statusOf(rsp)['phase'], 'Completed');
  });
});

describe('a restore drill whose request is withdrawn meanwhile', () => {
  test('its Job goes, the drill is recorded Incomplete saying so, with no warning; asked again, it starts anew', () => {
    const first = call(backupXr('202612070500'), [], db);
    const observed = asObserved(first, () => jobStatus());
    const running = statusOf(first)['verification'] as Obj;
    assert.equal(running['result'], 'Running');
    const rsp = call(backupXr(undefined, { ...COMPLETED, verification: running }), observed, db);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(desiredOf(rsp, 'verify'), undefined, 'nothing composes the Job now');
    const v = statusOf(rsp)['verification'] as Obj;
    assert.equal(v['result'], 'Incomplete');
    assert.equal(v['request'], '202612070500');
    assert.equal(v['startedAt'], running['startedAt']);
    assert.match(String(v['reason']), /^spec\.verification\.requested was removed: the drill stopped/);
    assert.equal(typeof v['durationSeconds'], 'number');
    assert.ok(!rsp.results.some((r) => r.severity === Severity.SEVERITY_WARNING));
    const later = call(backupXr(undefined, { ...COMPLETED, verification: v }), [], db);
    assert.deepEqual(statusOf(later)['verification'], v, 'recorded once, kept as recorded');
    const again = call(backupXr('202612080500', { ...COMPLETED, verification: v }), [], db);
    assert.ok(desiredOf(again, 'verify'), 'a new request drills again');
  });
});

/** A serving Database in a StatefulSet with one Completed scheduled backup, drilled as `verification` says. */
function databaseWithBackup(verification?: Obj, requested?: string, extra: Obj = {}) {
  const spec = { engine: 'postgres', storageGB: 20, backup: { objectStore: STORE }, ...extra };
  const bootstrap = call(databaseXr(spec));
  const running = asObserved(bootstrap, (_k, o) => healthyStatus(o));
  for (const o of running) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
  const scheduled: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: {
      name: 'orders-db-202612060300',
      namespace: NAMESPACE,
      annotations: { 'crossplane.io/composition-resource-name': 'scheduled-backup-202612060300' },
    },
    spec: { databaseRef: { name: 'orders' }, ...(requested ? { verification: { requested } } : {}) },
    status: { ...COMPLETED, ...(verification ? { verification } : {}) },
  };
  return { spec, observed: [...running, scheduled] };
}
const scheduledBackup = (rsp: ReturnType<typeof call>) => desiredOf(rsp, 'scheduled-backup-202612060300')!;

describe('a Database that drills its backups', () => {
  // A Sunday, an hour after the default verify slot (0 5 * * 0) and three after the day's backup slot.
  let restoreClock = () => {};
  before(() => {
    restoreClock = setClock(() => new Date('2026-12-06T06:00:00Z'));
  });
  after(() => restoreClock());

  test('the verify schedule fired: its newest Completed backup is asked for a drill, once', () => {
    const { spec, observed } = databaseWithBackup();
    const rsp = call(databaseXr(spec, { status: { phase: 'Ready' } }), observed);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const asked = ((scheduledBackup(rsp)['spec'] as Obj)['verification'] as Obj | undefined)?.['requested'];
    assert.equal(asked, '202612060500', 'the minute stamp of the verify slot that fired');
    // Asked and running: the same request stays, and no other is asked.
    const again = databaseWithBackup({ request: asked, result: 'Running' }, String(asked));
    const rsp2 = call(databaseXr(again.spec, { status: { phase: 'Ready' } }), again.observed);
    assert.deepEqual((scheduledBackup(rsp2)['spec'] as Obj)['verification'], { requested: asked });
    // Turned off: nothing asked.
    const off = databaseWithBackup(undefined, undefined, {
      backup: { objectStore: STORE, verify: { enabled: false } },
    });
    const rsp3 = call(databaseXr(off.spec, { status: { phase: 'Ready' } }), off.observed);
    assert.equal((scheduledBackup(rsp3)['spec'] as Obj)['verification'], undefined);
  });

  test('passed: status.backup.lastVerifiedTime and lastVerification, BackupVerified True, the Database Ready', () => {
    const passed = {
      request: '202611300500',
      result: 'Passed',
      verifiedAt: '2026-11-30T05:00:41Z',
      tables: 3,
      rows: 10000,
      durationSeconds: 36,
    };
    const { spec, observed } = databaseWithBackup(passed, '202611300500');
    const rsp = call(databaseXr(spec, { status: { phase: 'Ready' } }), observed);
    const backup = statusOf(rsp)['backup'] as Obj;
    assert.equal(backup['lastVerifiedTime'], '2026-11-30T05:00:41Z');
    assert.deepEqual(backup['lastVerification'], {
      backup: 'orders-db-202612060300',
      result: 'Passed',
      verifiedAt: '2026-11-30T05:00:41Z',
      tables: 3,
      rows: 10000,
    });
    const c = rsp.conditions.find((x) => x.type === 'BackupVerified');
    assert.equal(c?.reason, 'Verified');
    assert.match(c?.message ?? '', /restored into a scratch server at .*: 3 tables, 10000 rows, in 36 s/);
    assert.equal(statusOf(rsp)['ready'], true);
  });

  test('a drill that could not judge: BackupVerified False saying so, nothing Degraded', () => {
    const incomplete = {
      request: '202611300500',
      result: 'Incomplete',
      verifiedAt: '2026-11-30T05:00:41Z',
      reason: 'the drill Job failed: Job was active longer than specified deadline',
    };
    const { spec, observed } = databaseWithBackup(incomplete, '202611300500');
    const rsp = call(databaseXr(spec, { status: { phase: 'Ready' } }), observed);
    const c = rsp.conditions.find((x) => x.type === 'BackupVerified');
    assert.equal(c?.reason, 'VerificationIncomplete');
    assert.notEqual(statusOf(rsp)['phase'], 'Degraded');
  });

  test('the newest good backup failed its drill: a warning, BackupVerified False, Degraded with the reason, still Ready', () => {
    const failed = {
      request: '202611300500',
      result: 'Failed',
      verifiedAt: '2026-11-30T05:00:41Z',
      reason: 'the download failed (exit code 5): damaged at rest',
    };
    const { spec, observed } = databaseWithBackup(failed, '202611300500');
    const rsp = call(databaseXr(spec, { status: { phase: 'Ready' } }), observed);
    const c = rsp.conditions.find((x) => x.type === 'BackupVerified');
    assert.equal(c?.reason, 'VerificationFailed');
    assert.equal(statusOf(rsp)['phase'], 'Degraded');
    assert.equal(statusOf(rsp)['ready'], true, 'a serving database is Ready; the backup trouble is said apart');
    assert.match(String(statusOf(rsp)['message']), /the newest backup cannot be trusted: .*damaged at rest/);
    assert.ok(rsp.results.some((r) => r.reason === 'VerificationFailed'));
  });
});
