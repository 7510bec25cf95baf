// A Database's scheduled backups, call by call with the clock moved by the
// test: one DatabaseBackup per due slot (named by the slot, so reconciles are
// idempotent), no backfill but the miss reported, retention that removes the
// stored object before the record and never the newest Completed or a pinned
// backup, the BackupHealthy condition and Degraded when backups are overdue.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Ready, type RunFunctionResponse, Severity, Status } from '@crossplane-org/function-sdk-typescript';
import fc from 'fast-check';
import { setClock } from '../../src/clock.js';
import type { Obj } from '../../src/kube.js';
import { guardNothingLost } from '../../src/safety.js';
import { firedAtOrBefore, nextFiring } from '../../src/spec/cron.js';
import { healthyStatus } from '../support/observed-state.js';
import {
  answered,
  asObserved,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  OBJECT_STORE,
  statusOf,
  storeCredentials,
} from '../support/database.js';

let clock = new Date('2026-12-02T03:05:00Z');
const restore = setClock(() => clock);
after(restore);

const CREATED = '2026-11-01T00:00:00Z';
/** A Database that has served since November (its status says Ready), with the StatefulSet ready. */
function servingXr(backup: Obj = {}, extra: Obj = {}): Obj {
  const xr = databaseXr(
    { storageGB: 10, backup: { objectStore: OBJECT_STORE, ...backup } },
    { status: { phase: 'Ready', ...extra } },
  );
  (xr['metadata'] as Obj)['creationTimestamp'] = CREATED;
  return xr;
}
const scheduledKeys = (rsp: RunFunctionResponse) =>
  Object.keys(rsp.desired?.resources ?? {})
    .filter((k) => k.startsWith('scheduled-backup-'))
    .sort();
const condition = (rsp: RunFunctionResponse, type: string) => rsp.conditions.find((c) => c.type === type);
const warnings = (rsp: RunFunctionResponse, reason: string) =>
  rsp.results.filter((r) => r.severity === Severity.SEVERITY_WARNING && r.reason === reason);

/** The observed state after `rsp`, with each scheduled DatabaseBackup given the status `backupStatus` returns. */
function observe(rsp: RunFunctionResponse, backupStatus: (key: string) => Obj | undefined = () => undefined): Obj[] {
  const out = asObserved(rsp, (key, obj) =>
    key.startsWith('scheduled-backup-') ? backupStatus(key) : healthyStatus(obj),
  );
  // The API server gives every Service a cluster IP.
  for (const o of out) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
  return out;
}

describe('cron: the slots a schedule fires at', () => {
  // Every minute in a window, matched field by field the slow way.
  function brute(schedule: string, from: number, to: number): number[] {
    const [mi, h, dom, mon, dow] = schedule.split(' ');
    const match = (text: string, v: number, min: number, max: number) =>
      text.split(',').some((part) => {
        const [range, step] = part.split('/');
        const [lo, hi] =
          range === '*'
            ? [min, max]
            : range!.includes('-')
              ? range!.split('-').map(Number)
              : [Number(range), step ? max : Number(range)];
        return v >= lo! && v <= hi! && (v - lo!) % Number(step ?? 1) === 0;
      });
    const out: number[] = [];
    for (let t = from; t <= to; t += 60_000) {
      const d = new Date(t);
      const domOk = match(dom!, d.getUTCDate(), 1, 31);
      const dowOk = match(dow!, d.getUTCDay(), 0, 6);
      // robfig/cron: a field is unrestricted when a part is '*' without a step above 1.
      const star = (f: string) => f.split(',').some((p) => p === '*' || p === '*/1');
      const day = star(dom!) || star(dow!) ? domOk && dowOk : domOk || dowOk;
      if (
        match(mi!, d.getUTCMinutes(), 0, 59) &&
        match(h!, d.getUTCHours(), 0, 23) &&
        match(mon!, d.getUTCMonth() + 1, 1, 12) &&
        day
      )
        out.push(t);
    }
    return out;
  }
  const field = (min: number, max: number) =>
    fc.oneof(
      fc.constant('*'),
      fc.integer({ min, max }).map(String),
      fc
        .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
        .map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      fc.integer({ min: 1, max: Math.max(1, Math.floor((max - min) / 2)) }).map((s) => `*/${s}`),
      fc.uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 3 }).map((a) => a.join(',')),
    );
  const schedule = fc
    .tuple(
      field(0, 59),
      field(0, 23),
      fc.oneof(fc.constant('*'), field(1, 28)),
      fc.constant('*'),
      fc.oneof(fc.constant('*'), field(0, 6)),
    )
    .map((f) => f.join(' '));

  test('the newest two firings and the next one agree with a minute-by-minute walk over three weeks', () => {
    fc.assert(
      fc.property(
        schedule,
        fc.integer({ min: Date.parse('2026-01-22T00:00:00Z'), max: Date.parse('2027-12-31T00:00:00Z') }),
        (s, t) => {
          const now = new Date(t);
          const minute = Math.floor(t / 60_000) * 60_000;
          const walked = brute(s, minute - 21 * 86_400_000, minute + 21 * 86_400_000);
          const past = walked
            .filter((x) => x <= minute)
            .slice(-2)
            .reverse();
          const fired = firedAtOrBefore(s, now, 2).map((d) => d.getTime());
          assert.deepEqual(fired.slice(0, past.length), past, s);
          const ahead = walked.find((x) => x > minute);
          if (ahead !== undefined) assert.equal(nextFiring(s, now)?.getTime(), ahead, s);
        },
      ),
      { numRuns: 150 },
    );
  });

  test('named days and months, and day-of-month OR day-of-week when both are restricted', () => {
    const at = new Date('2026-12-02T12:00:00Z'); // a Wednesday
    assert.deepEqual(
      firedAtOrBefore('30 2 * * MON', at, 2).map((d) => d.toISOString()),
      ['2026-11-30T02:30:00.000Z', '2026-11-23T02:30:00.000Z'],
    );
    assert.deepEqual(
      firedAtOrBefore('0 0 1 JAN *', at, 1).map((d) => d.toISOString()),
      ['2026-01-01T00:00:00.000Z'],
    );
    // The 1st of the month or any Friday.
    assert.deepEqual(
      firedAtOrBefore('0 0 1 * 5', at, 3).map((d) => d.toISOString()),
      ['2026-12-01T00:00:00.000Z', '2026-11-27T00:00:00.000Z', '2026-11-20T00:00:00.000Z'],
    );
  });
});

describe('Database: a DatabaseBackup per due slot', () => {
  test('the due slot gets one DatabaseBackup, named by the slot; 100 reconciles compose the same', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    let rsp = call(servingXr());
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.deepEqual(scheduledKeys(rsp), ['scheduled-backup-202612020300']);
    const backup = desiredOf(rsp, 'scheduled-backup-202612020300')!;
    assert.equal(backup['kind'], 'DatabaseBackup');
    assert.equal((backup['metadata'] as Obj)['name'], 'orders-db-202612020300');
    assert.deepEqual(backup['spec'], { databaseRef: { name: 'orders' } });
    assert.equal(
      statusOf(rsp)['backup'] && (statusOf(rsp)['backup'] as Obj)['nextScheduledTime'],
      '2026-12-03T03:00:00.000Z',
    );
    const bodies = (r: RunFunctionResponse) =>
      JSON.stringify(Object.entries(r.desired!.resources).map(([k, v]) => [k, v.resource]));
    const first = bodies(rsp);
    for (let i = 0; i < 100; i++) {
      clock = new Date(Date.parse('2026-12-02T03:05:00Z') + i * 60_000 * 5); // until 11:20, before the next slot
      rsp = call(servingXr(), observe(rsp));
      assert.equal(bodies(rsp), first, `reconcile ${i}`);
    }
  });

  test('the next slot adds one and keeps the earlier; a skipped slot is reported, not taken late', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const day1 = call(servingXr());
    clock = new Date('2026-12-03T03:01:00Z');
    const day2 = call(
      servingXr(),
      observe(day1, () => ({ phase: 'Completed', completedAt: '2026-12-02T03:07:00Z' })),
    );
    assert.deepEqual(scheduledKeys(day2), ['scheduled-backup-202612020300', 'scheduled-backup-202612030300']);
    assert.equal(warnings(day2, 'BackupMissed').length, 0);

    clock = new Date('2026-12-06T04:00:00Z'); // nothing reconciled this Database on the 4th and 5th
    const day6 = call(
      servingXr(),
      observe(day2, () => ({ phase: 'Completed', completedAt: '2026-12-03T03:07:00Z' })),
    );
    assert.deepEqual(scheduledKeys(day6), [
      'scheduled-backup-202612020300',
      'scheduled-backup-202612030300',
      'scheduled-backup-202612060300',
    ]);
    assert.equal((statusOf(day6)['backup'] as Obj)['missedSlot'], '2026-12-05T03:00:00.000Z');
    assert.match(warnings(day6, 'BackupMissed')[0]?.message ?? '', /2026-12-05T03:00:00.000Z.*not taken late/);
  });

  test('none before the Database has served, none for a slot before it was created, none with backups off', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const provisioning = databaseXr({ backup: { objectStore: OBJECT_STORE } }, { status: { phase: 'Provisioning' } });
    assert.deepEqual(scheduledKeys(call(provisioning)), []);
    const young = servingXr();
    (young['metadata'] as Obj)['creationTimestamp'] = '2026-12-02T03:01:00Z';
    assert.deepEqual(scheduledKeys(call(young)), []);
    assert.deepEqual(scheduledKeys(call(servingXr({ enabled: false }))), []);
  });

  test('no object store: Ready (it serves), Degraded, the message says backups have nowhere to go, nothing scheduled', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const xr = databaseXr({ storageGB: 10 }, { bare: true, status: { phase: 'Ready' } });
    let rsp = call(xr);
    rsp = call(xr, observe(rsp));
    assert.equal(statusOf(rsp)['ready'], true);
    assert.equal(statusOf(rsp)['phase'], 'Degraded');
    assert.match(String(statusOf(rsp)['message']), /^backups have nowhere to go: set spec\.backup\.objectStore/);
    assert.deepEqual(scheduledKeys(rsp), []);
    assert.equal(condition(rsp, 'BackupHealthy')?.status, Status.STATUS_CONDITION_FALSE);
    assert.equal(condition(rsp, 'BackupHealthy')?.reason, 'NoObjectStore');
    // Backups off is a choice: Ready, and BackupHealthy says so.
    const off = call(databaseXr({ backup: { enabled: false } }, { bare: true }), observe(rsp));
    assert.equal(statusOf(off)['ready'], true, String(statusOf(off)['message']));
    assert.equal(condition(off, 'BackupHealthy')?.reason, 'BackupsDisabled');
  });
});

// Issue 26: a two-line Database read as still being created (phase Provisioning) while it served, and
// placeholder credentials for the object store were taken without a word.
// Issue 28: and it was not Ready, though it took connections; backup trouble no longer holds back readiness.
describe('Database: what is true when only backups are in trouble', () => {
  test('a two-line Database that serves is Ready and Degraded, saying it accepts connections and why backups cannot run', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const xr = databaseXr({ engine: 'postgres', storageGB: 5 }, { bare: true, name: 'payments' });
    const first = call(xr);
    assert.equal(statusOf(first)['phase'], 'Provisioning', 'not serving yet');
    const served = call(xr, observe(first));
    assert.equal(statusOf(served)['ready'], true, 'it accepts connections');
    assert.equal(
      served.desired?.composite?.ready,
      Ready.READY_TRUE,
      'the composite is ready for Crossplane too (its Ready condition)',
    );
    assert.equal(statusOf(served)['phase'], 'Degraded');
    assert.match(
      String(statusOf(served)['message']),
      /^backups have nowhere to go: set spec\.backup\.objectStore .*; postgres 17 accepts connections at payments-db\.team-a\.svc\.cluster\.local:5432$/,
    );
    assert.equal(condition(served, 'DatabaseReady')?.status, Status.STATUS_CONDITION_TRUE);
    assert.equal(condition(served, 'DatabaseReady')?.reason, 'NoObjectStore');
    assert.equal(condition(served, 'BackupHealthy')?.status, Status.STATUS_CONDITION_FALSE);
    assert.match(
      warnings(served, 'NoObjectStore')[0]?.message ?? '',
      /^backups have nowhere to go/,
      'a warning says how to fix it',
    );
  });

  test('the store credentials: a placeholder, a key missing or no Secret is said, naming the Secret and keys, never a value', () => {
    const xr = servingXr();
    const observed = observe(call(xr));
    const withSecret = (secret: Obj | undefined) =>
      call(xr, observed, answered({ 'backup-store-credentials': secret ? [secret] : [] }));
    const cases: Array<[string, Obj | undefined, RegExp]> = [
      [
        'placeholders',
        storeCredentials({ AWS_ACCESS_KEY_ID: 'replace-me', AWS_SECRET_ACCESS_KEY: 'replace-me' }),
        /^Secret backup-store \(spec\.backup\.objectStore\.credentialsSecretRef\) holds a placeholder, not a credential, in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
      ],
      [
        'one placeholder',
        storeCredentials({ AWS_SECRET_ACCESS_KEY: 'changeme' }),
        /holds a placeholder, not a credential, in AWS_SECRET_ACCESS_KEY:/,
      ],
      [
        'a key missing',
        (() => {
          const s = storeCredentials();
          delete (s['data'] as Obj)['AWS_SECRET_ACCESS_KEY'];
          return s;
        })(),
        /^Secret backup-store \(spec\.backup\.objectStore\.credentialsSecretRef\) has no AWS_SECRET_ACCESS_KEY/,
      ],
      [
        'no Secret',
        undefined,
        /^Secret backup-store \(spec\.backup\.objectStore\.credentialsSecretRef\) does not exist in namespace team-a/,
      ],
    ];
    for (const [what, secret, message] of cases) {
      const rsp = withSecret(secret);
      assert.equal(fatalOf(rsp), undefined, what);
      assert.match(warnings(rsp, 'BackupCredentials')[0]?.message ?? '', message, what);
      assert.equal(condition(rsp, 'BackupHealthy')?.reason, 'BackupCredentials', what);
      assert.match(condition(rsp, 'BackupHealthy')?.message ?? '', message, what);
      assert.equal(statusOf(rsp)['ready'], true, `${what}: the database still serves`);
      const said = JSON.stringify([rsp.results, rsp.conditions, statusOf(rsp)]);
      assert.doesNotMatch(said, /replace-me|changeme|AKIAEXAMPLESTORE01|k3y-of-the-store/, `${what}: no value echoed`);
    }
    const good = withSecret(storeCredentials());
    assert.deepEqual(warnings(good, 'BackupCredentials'), []);
    assert.notEqual(condition(good, 'BackupHealthy')?.reason, 'BackupCredentials');
    assert.doesNotMatch(
      JSON.stringify([good.results, good.conditions, statusOf(good)]),
      /AKIAEXAMPLESTORE01|k3y-of-the-store/,
    );
  });
});

/** The status of the backup of the 2 December slot, completed. */
const DONE_0202 = {
  phase: 'Completed',
  method: 'dump',
  completedAt: '2026-12-02T03:09:00Z',
  location: 's3://team-a-backups/orders/orders-db-202612020300.dump',
};

describe('Database: backup status and health come from Completed backups only', () => {
  test('lastSuccessfulTime and location from the newest Completed one; a later failure warns and is recorded', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const day1 = call(servingXr());
    assert.equal((statusOf(day1)['backup'] as Obj)['location'], undefined, 'nothing stored yet: no location');
    clock = new Date('2026-12-03T03:05:00Z');
    const day2 = call(
      servingXr(),
      observe(day1, () => DONE_0202),
    );
    clock = new Date('2026-12-03T04:00:00Z');
    const failed = call(
      servingXr(),
      observe(day2, (key) =>
        key.endsWith('202612020300')
          ? DONE_0202
          : { phase: 'Failed', method: 'dump', failureReason: 'dump was killed for memory (OOMKilled with 1024Mi)' },
      ),
    );
    const backup = statusOf(failed)['backup'] as Obj;
    assert.equal(backup['lastSuccessfulTime'], '2026-12-02T03:09:00Z');
    assert.equal(backup['location'], 's3://team-a-backups/orders/');
    assert.equal(backup['lastFailure'], 'orders-db-202612030300: dump was killed for memory (OOMKilled with 1024Mi)');
    assert.match(
      warnings(failed, 'BackupFailed')[0]?.message ?? '',
      /DatabaseBackup orders-db-202612030300 failed: dump was killed/,
    );
    assert.equal(condition(failed, 'BackupHealthy')?.reason, 'BackupFailed');
    assert.equal(statusOf(failed)['ready'], true, 'one failure within two periods: still Ready');
  });

  test('no success for two schedule periods: Degraded, saying since when', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const day1 = call(servingXr());
    const completed = () => DONE_0202;
    clock = new Date('2026-12-04T02:59:00Z');
    const late = call(
      servingXr({}, { backup: { lastSuccessfulTime: '2026-12-02T03:09:00Z' } }),
      observe(day1, completed),
    );
    assert.equal(statusOf(late)['ready'], true, `two periods not yet passed: ${statusOf(late)['message']}`);
    clock = new Date('2026-12-04T03:00:00Z');
    const overdue = call(
      servingXr(),
      observe(late, (k) =>
        k.endsWith('202612020300')
          ? completed()
          : { phase: 'Failed', method: 'dump', failureReason: 'upload failed (exit code 1): Access Denied' },
      ),
    );
    assert.equal(statusOf(overdue)['ready'], true, 'it still serves');
    assert.equal(statusOf(overdue)['phase'], 'Degraded');
    assert.match(
      String(statusOf(overdue)['message']),
      /^backups are overdue: the last successful backup finished at 2026-12-02T03:09:00Z: overdue since 2026-12-04T03:00:00.000Z \(two scheduled backups since\)/,
    );
    assert.equal(condition(overdue, 'BackupHealthy')?.reason, 'BackupOverdue');
    assert.match(warnings(overdue, 'BackupOverdue')[0]?.message ?? '', /^backups are overdue/);
  });
});

describe('Database: overdue means two scheduled backups since the last success, whatever the gaps', () => {
  test('weekdays only: a Friday backup is not overdue over the weekend, it is on Tuesday’s slot', () => {
    const weekdays = { schedule: '0 2 * * 1-5' };
    clock = new Date('2026-12-04T02:05:00Z'); // Friday
    const friday = call(servingXr(weekdays));
    const done = () => ({
      phase: 'Completed',
      method: 'dump',
      completedAt: '2026-12-04T02:10:00Z',
      location: 's3://team-a-backups/orders/orders-db-202612040200.dump',
    });
    for (const [at, overdue] of [
      ['2026-12-06T12:00:00Z', false], // Sunday
      ['2026-12-07T01:59:00Z', false], // Monday, before its slot
      ['2026-12-08T01:59:00Z', false], // Tuesday, before its slot (Monday's may have failed)
      ['2026-12-08T02:00:00Z', true], // Tuesday's slot: two since Friday
    ] as const) {
      clock = new Date(at);
      const rsp = call(servingXr(weekdays), observe(friday, done));
      assert.equal(
        condition(rsp, 'BackupHealthy')?.reason === 'BackupOverdue',
        overdue,
        `${at}: ${statusOf(rsp)['message']}`,
      );
      assert.equal(statusOf(rsp)['phase'], overdue ? 'Degraded' : 'Ready');
      assert.equal(statusOf(rsp)['ready'], true, 'overdue or not, it serves');
    }
  });

  test('an old Database that gets an object store is not overdue at once: the count starts at its first backup', () => {
    clock = new Date('2026-12-02T03:05:00Z');
    const first = call(servingXr());
    const rsp = call(servingXr(), observe(first));
    assert.equal(statusOf(rsp)['ready'], true, String(statusOf(rsp)['message']));
    assert.equal(condition(rsp, 'BackupHealthy')?.reason, 'NoBackupYet');
  });
});

describe('Database: retention', () => {
  const DAY = 86_400_000;
  /** A Database observed with scheduled backups of the given ages (days before the clock), phases and pins. */
  function withBackups(
    records: Array<{ age: number; phase: 'Completed' | 'Failed'; pinned?: boolean }>,
    removals: Obj[] = [],
  ) {
    const observed: Obj[] = [];
    for (const r of records) {
      const slot = new Date(clock.getTime() - r.age * DAY);
      slot.setUTCMinutes(0, 0, 0);
      const stamp = slot.toISOString().replace(/[-:T]/g, '').slice(0, 12);
      observed.push({
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: {
          name: `orders-db-${stamp}`,
          namespace: 'team-a',
          annotations: { 'crossplane.io/composition-resource-name': `scheduled-backup-${stamp}` },
        },
        spec: { databaseRef: { name: 'orders' }, ...(r.pinned ? { pinned: true } : {}) },
        status: {
          phase: r.phase,
          method: 'dump',
          ...(r.phase === 'Completed'
            ? { completedAt: slot.toISOString(), location: `s3://team-a-backups/orders/orders-db-${stamp}.dump` }
            : {}),
        },
      });
    }
    return [...observed, ...removals];
  }
  const retention = { retentionDays: 7, schedule: '0 * * * *' };

  test('an expired dump: its object removed by a Job first, the record let go once the Job is Complete', () => {
    clock = new Date('2026-12-20T12:30:00Z');
    const observed = withBackups([
      { age: 9, phase: 'Completed' },
      { age: 1, phase: 'Completed' },
    ]);
    const first = call(servingXr(retention), observed);
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    const oldKey = Object.keys(first.desired!.resources).find((k) => k.startsWith('scheduled-backup-202612111'))!;
    assert.ok(oldKey, 'the expired record stays while its object is removed');
    const removalKey = oldKey.replace('scheduled-backup-', 'backup-removal-');
    const job = desiredOf(first, removalKey)!;
    assert.equal(job['kind'], 'Job');
    const env = JSON.stringify(job);
    assert.match(env, /"name":"KEY","value":"orders\/orders-db-\d{12}\.dump"/);
    assert.match(env, /aws \$ep s3 rm/);

    const removed = asObserved(first).find((o) => (o['metadata'] as Obj)['name'] === (job['metadata'] as Obj)['name'])!;
    removed['status'] = { conditions: [{ type: 'Complete', status: 'True' }] };
    const second = call(servingXr(retention), [...observed, removed]);
    assert.equal(fatalOf(second), undefined, fatalOf(second)?.message);
    assert.equal(desiredOf(second, oldKey), undefined, 'the record goes after its object');
    assert.equal(desiredOf(second, removalKey), undefined);
  });

  test('never the newest Completed one, never a pinned one; expired failures go at once', () => {
    clock = new Date('2026-12-20T12:30:00Z');
    const observed = withBackups([
      { age: 30, phase: 'Completed', pinned: true },
      { age: 20, phase: 'Completed' },
      { age: 10, phase: 'Failed' },
      { age: 1.5, phase: 'Failed' },
    ]);
    const rsp = call(servingXr(retention), observed);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const kept = scheduledKeys(rsp);
    const key = (o: Obj) =>
      String(((o['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/composition-resource-name']);
    assert.ok(kept.includes(key(observed[0]!)), 'pinned');
    assert.ok(kept.includes(key(observed[1]!)), 'the newest Completed one, however old');
    assert.ok(!kept.includes(key(observed[2]!)), 'an expired failure holds nothing: gone');
    assert.ok(kept.includes(key(observed[3]!)), 'a recent failure stays');
    assert.deepEqual(
      Object.keys(rsp.desired!.resources).filter((k) => k.startsWith('backup-removal-')),
      [],
    );
  });

  test('property: whatever the records, retention never lets go of the newest Completed or a pinned one', () => {
    const record = fc.record({
      // Whole hours back (one slot each of the hourly schedule), so no two records share a slot.
      age: fc.integer({ min: 1, max: 40 * 24 }).map((hours) => hours / 24),
      phase: fc.constantFrom('Completed', 'Failed'),
      pinned: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(record, { minLength: 1, maxLength: 8, selector: (r) => Math.round(r.age * 24) }),
        (records) => {
          clock = new Date('2026-12-20T12:30:00Z');
          const observed = withBackups(records as never);
          const rsp = call(servingXr(retention), observed);
          assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
          const kept = new Set(Object.keys(rsp.desired!.resources));
          const completed = observed.filter((o) => (o['status'] as Obj)['phase'] === 'Completed');
          const newest = completed
            .sort((a, b) =>
              String((a['status'] as Obj)['completedAt']).localeCompare(String((b['status'] as Obj)['completedAt'])),
            )
            .pop();
          for (const o of observed) {
            const key = String(
              ((o['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/composition-resource-name'],
            );
            if (o === newest || (o['spec'] as Obj)['pinned']) assert.ok(kept.has(key), `${key} must stay`);
            // A Completed dump is only let go after its removal Job: never on the first call.
            if ((o['status'] as Obj)['phase'] === 'Completed')
              assert.ok(kept.has(key), `${key}: the object goes first`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('the newest record stays however old (or its slot would be taken again), and dumps stay while there is no store to remove them from', () => {
    clock = new Date('2026-12-19T12:30:00Z'); // a Saturday
    const weekly = { retentionDays: 3, schedule: '0 12 * * 0' }; // Sundays: the newest slot is 6 days back
    const observed = withBackups([
      { age: 13, phase: 'Completed' },
      { age: 6, phase: 'Failed' },
    ]);
    const rsp = call(servingXr(weekly), observed);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const keys = scheduledKeys(rsp);
    for (const o of observed) {
      const key = String(((o['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/composition-resource-name']);
      assert.ok(keys.includes(key), `${key} stays: the newest Completed, and the newest of all`);
    }
    assert.equal(keys.length, 2, 'and no slot is taken again');

    clock = new Date('2026-12-20T12:30:00Z');
    const noStore = databaseXr(
      { storageGB: 10, backup: { retentionDays: 7, schedule: '0 * * * *', objectStore: undefined } },
      { bare: true, status: { phase: 'Ready' } },
    );
    const old = withBackups([
      { age: 20, phase: 'Completed' },
      { age: 10, phase: 'Completed' },
    ]);
    const kept = call(noStore, old);
    assert.equal(fatalOf(kept), undefined, fatalOf(kept)?.message);
    assert.equal(scheduledKeys(kept).length, 2, 'nothing to remove the old dump with: its record stays');
  });

  test('the nothing-lost guard lets go of exactly the retired DatabaseBackups, nothing else', () => {
    const backup = { apiVersion: 'example.com/v1', kind: 'DatabaseBackup', metadata: { name: 'b' } };
    const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' } };
    const observed = new Map<string, Obj>([
      ['scheduled-backup-1', backup],
      ['statefulset', sts],
    ]);
    const keepSts = [{ key: 'statefulset', object: sts }];
    assert.throws(() => guardNothingLost({ resources: keepSts }, observed), /DatabaseBackup b, which holds data/);
    guardNothingLost({ resources: keepSts, retiring: [{ key: 'scheduled-backup-1', why: 'expired' }] }, observed);
    assert.throws(
      () =>
        guardNothingLost(
          {
            resources: [{ key: 'scheduled-backup-1', object: backup }],
            retiring: [{ key: 'statefulset', why: 'not a backup' }],
          },
          observed,
        ),
      /StatefulSet s, which holds data/,
    );
  });
});

describe('Database: CloudNativePG archives to the object store', () => {
  test('the Barman Cloud ObjectStore carries the retention and the store; the Cluster names it as its WAL archiver', async () => {
    const { answered, CNPG_CRD_OBJECT } = await import('../support/database.js');
    const store = { ...OBJECT_STORE, endpoint: 'https://minio.storage:9000', prefix: 'prod' };
    const rsp = call(
      databaseXr({ highAvailability: true, backup: { retentionDays: 14, objectStore: store } }),
      [],
      answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] }),
    );
    const objectStore = desiredOf(rsp, 'cnpg-object-store')!;
    assert.equal(objectStore['kind'], 'ObjectStore');
    assert.deepEqual(objectStore['spec'], {
      retentionPolicy: '14d',
      configuration: {
        destinationPath: 's3://team-a-backups/prod/orders/',
        endpointURL: 'https://minio.storage:9000',
        s3Credentials: {
          accessKeyId: { name: 'backup-store', key: 'AWS_ACCESS_KEY_ID' },
          secretAccessKey: { name: 'backup-store', key: 'AWS_SECRET_ACCESS_KEY' },
        },
        wal: { compression: 'gzip' },
        data: { compression: 'gzip' },
      },
    });
    const cluster = ((desiredOf(rsp, 'cnpg-cluster')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
    assert.deepEqual((cluster['spec'] as Obj)['plugins'], [
      {
        name: 'barman-cloud.cloudnative-pg.io',
        isWALArchiver: true,
        parameters: { barmanObjectName: (objectStore['metadata'] as Obj)['name'] },
      },
    ]);
  });

  // The plugin reads a region only from a Secret key: a store on AWS with no endpoint gets its region's.
  test('a store with no endpoint: the ObjectStore names S3 in the store region', async () => {
    const { answered, CNPG_CRD_OBJECT } = await import('../support/database.js');
    for (const [region, endpoint] of [
      ['eu-west-1', 'https://s3.eu-west-1.amazonaws.com'],
      ['cn-north-1', 'https://s3.cn-north-1.amazonaws.com.cn'],
    ]) {
      const rsp = call(
        databaseXr({ highAvailability: true, backup: { objectStore: { ...OBJECT_STORE, region } } }),
        [],
        answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] }),
      );
      const configuration = (desiredOf(rsp, 'cnpg-object-store')!['spec'] as Obj)['configuration'] as Obj;
      assert.equal(configuration['endpointURL'], endpoint);
    }
  });
});
