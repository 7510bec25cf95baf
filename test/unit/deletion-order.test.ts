// Deletion order with Crossplane's Usages (issue 32): a DatabaseRestore holds
// its Database while the Database builds it, a DatabaseBackup while it is
// taken, and a Database the bucket made for its backups; each Usage names the
// holder in its reason (Crossplane's webhook says it in the refusal), is
// composed only where the cluster serves Usages, is kept while that answer is
// not in, and goes once the holder is done. Under real Crossplane (with its
// webhooks): test/e2e/database-backup.test.ts, database-aws.test.ts and
// claims.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ready, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { BUCKET_HOLD_KEY, HOLD_KEY, USAGES } from '../../src/blueprints/lifecycle/deletion-order.js';
import { STORE_KEYS } from '../../src/blueprints/lifecycle/object-store.js';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  beforeMigrationBackup,
  call,
  claimXr,
  completedBackup,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
  statusOf,
  withObjectStore,
  USAGE_CRD_OBJECT,
} from '../support/database.js';
import { assertValidObject } from '../support/schemas.js';

const fatal = (rsp: RunFunctionResponse) => fatalOf(rsp)?.message ?? '';
const specOf = (obj: Obj | undefined) => (obj?.['spec'] ?? {}) as Obj;

describe('a DatabaseRestore holds its Database while the Database builds it', () => {
  const restoreXr: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseRestore',
    metadata: { name: 'orders-undo', namespace: NAMESPACE, uid: 'uid-undo' },
    spec: { databaseRef: { name: 'orders' }, fromBackup: { name: 'orders-db-202612020300' } },
  };
  const db = (status: Obj = {}): Obj => ({
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name: 'orders', namespace: NAMESPACE, uid: 'uid-orders' },
    spec: withObjectStore({ engine: 'postgres', storageGB: 20 }),
    status,
  });
  const restoring = db({
    restore: { name: 'orders-undo', phase: 'Restoring', instance: 'orders-db-r1', message: 'restoring orders' },
  });
  const backup = completedBackup('orders-db-202612020300', 'orders');

  test('Restoring: one Usage of the Database, naming this restore and the instance it builds; no replay', () => {
    const first = call(restoreXr);
    assert.ok(first.requirements?.resources?.[USAGES], 'asks whether the cluster serves Usages');
    assert.equal(desiredOf(first, HOLD_KEY), undefined, 'nothing before the answers are in');

    const rsp = call(
      restoreXr,
      [],
      answered({ database: [restoring], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const usage = desiredOf(rsp, HOLD_KEY)!;
    assert.ok(usage, 'the Usage is composed');
    assert.equal(usage['apiVersion'], 'protection.crossplane.io/v1beta1');
    assert.equal(usage['kind'], 'Usage');
    assert.equal((usage['metadata'] as Obj)['namespace'], NAMESPACE);
    assert.deepEqual(specOf(usage)['of'], {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      resourceRef: { name: 'orders' },
    });
    assert.equal(specOf(usage)['by'], undefined, 'by reason: the refusal says it');
    assert.match(String(specOf(usage)['reason']), /^DatabaseRestore orders-undo is restoring it into orders-db-r1: /);
    assert.equal(specOf(usage)['replayDeletion'], false, 'a refused deletion is never carried out later');
    assertValidObject(usage);
    // It never holds the restore up: ready once it exists (Crossplane without webhooks never says it is).
    const again = call(
      restoreXr,
      asObserved(rsp),
      answered({ database: [restoring], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    assert.equal(again.desired?.resources[HOLD_KEY]?.ready, Ready.READY_TRUE);
    assert.equal(statusOf(again)['phase'], 'Restoring');
  });

  test('a Database not read as it is on a call (not answered, or refused) keeps what holds it; one gone, nothing', () => {
    const made = call(
      restoreXr,
      [],
      answered({ database: [restoring], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    const unknown = call(restoreXr, asObserved(made), answered({ [USAGES]: [USAGE_CRD_OBJECT] }));
    assert.deepEqual(desiredOf(unknown, HOLD_KEY), desiredOf(made, HOLD_KEY));
    const refused = { ...restoring, spec: { engine: 'postgres' } };
    const judged = call(
      restoreXr,
      asObserved(made),
      answered({ database: [refused], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    assert.deepEqual(desiredOf(judged, HOLD_KEY), desiredOf(made, HOLD_KEY), 'kept while refused');
    const gone = call(
      restoreXr,
      asObserved(made),
      answered({ database: [], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    assert.equal(desiredOf(gone, HOLD_KEY), undefined);
  });

  test('Pending, Switched, Failed: nothing held', () => {
    for (const status of [
      {},
      { restores: [{ name: 'orders-undo', instance: 'orders-db-r1', switchedAt: '2026-12-02T04:00:00Z' }] },
      { restore: { name: 'orders-undo', phase: 'Failed', instance: 'orders-db-r1', message: 'the load failed' } },
    ]) {
      const rsp = call(
        restoreXr,
        [],
        answered({ database: [db(status)], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
      );
      assert.equal(fatalOf(rsp), undefined, fatal(rsp));
      assert.equal(desiredOf(rsp, HOLD_KEY), undefined, `phase ${String(statusOf(rsp)['phase'])}`);
    }
  });

  test('a cluster that serves no Usages is sent none; one composed before is kept until the answer is in', () => {
    const none = call(restoreXr, [], answered({ database: [restoring], backup: [backup], [USAGES]: [] }));
    assert.equal(fatalOf(none), undefined, fatal(none));
    assert.equal(desiredOf(none, HOLD_KEY), undefined);

    const made = call(
      restoreXr,
      [],
      answered({ database: [restoring], backup: [backup], [USAGES]: [USAGE_CRD_OBJECT] }),
    );
    const observed = asObserved(made);
    const unanswered = call(restoreXr, observed, answered({ database: [restoring], backup: [backup] }));
    assert.deepEqual(desiredOf(unanswered, HOLD_KEY), desiredOf(made, HOLD_KEY), 'kept as it was, no flap');
  });
});

describe('a DatabaseBackup holds its Database while it is taken', () => {
  const backupXr = beforeMigrationBackup;
  const db = databaseXr({ engine: 'postgres', version: '16', storageGB: 20 });
  /** The dump pod of attempt 1 as the kubelet reports it. */
  const pod = (phase: string, job = 'orders-before-migration-a1'): Obj => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${job}-x1`, namespace: NAMESPACE, labels: { 'batch.kubernetes.io/job-name': job } },
    status: { phase },
  });

  test('held while its dump pod runs, not while it waits to start, and not once Completed or Failed', () => {
    const starting = call(backupXr(), [], answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT] }));
    assert.equal(fatalOf(starting), undefined, fatal(starting));
    assert.equal(desiredOf(starting, HOLD_KEY), undefined, 'no Job yet: nothing reads the Database');
    const unscheduled = call(
      backupXr({ phase: 'Running' }),
      asObserved(starting),
      answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT], pod: [pod('Pending')] }),
    );
    assert.equal(desiredOf(unscheduled, HOLD_KEY), undefined, 'a pod that cannot start holds nothing');
    const taking = call(
      backupXr({ phase: 'Running' }),
      asObserved(starting),
      answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT], pod: [pod('Running')] }),
    );
    assert.equal(fatalOf(taking), undefined, fatal(taking));
    const usage = desiredOf(taking, HOLD_KEY)!;
    assert.ok(usage, 'held while the dump runs');
    assert.equal((usage['metadata'] as Obj)['name'], 'orders-before-migration-backup-holds-orders');
    assert.match(String(specOf(usage)['reason']), /^DatabaseBackup orders-before-migration is taking a backup of it/);
    assert.equal(specOf(usage)['replayDeletion'], false);
    assertValidObject(usage);

    for (const phase of ['Completed', 'Failed']) {
      const done = call(
        backupXr({ phase, message: phase }),
        asObserved(taking),
        answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT], pod: [pod('Running')] }),
      );
      assert.equal(fatalOf(done), undefined, fatal(done));
      assert.equal(desiredOf(done, HOLD_KEY), undefined, `${phase}: the Database is free again`);
    }
  });

  test('a Database gone or refused is held by nothing; one not looked up yet keeps its Usage', () => {
    const taking = call(
      backupXr({ phase: 'Running' }),
      [],
      answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT], pod: [pod('Running')] }),
    );
    assert.ok(desiredOf(taking, HOLD_KEY));
    const gone = call(backupXr({ phase: 'Running' }), asObserved(taking), answered({ database: [], [USAGES]: [] }));
    assert.equal(desiredOf(gone, HOLD_KEY), undefined);
    // Refused: it cannot be backed up (a Database in the cluster with no store), so nothing reads it.
    const storeless = databaseXr({ engine: 'postgres', storageGB: 20 }, { bare: true });
    const refused = call(backupXr({ phase: 'Running' }), asObserved(taking), answered({ database: [storeless] }));
    assert.match(String(statusOf(refused)['message']), /cannot be backed up/);
    assert.equal(desiredOf(refused, HOLD_KEY), undefined);
    const unknown = call(backupXr({ phase: 'Running' }), asObserved(taking));
    assert.ok(desiredOf(unknown, HOLD_KEY), 'kept until the Database is known');
  });

  test('claims: the Usage of the Database claim travels in an Object to the claim namespace; a restore of the same name has its own', () => {
    const claimBackup: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'XDatabaseBackup',
      metadata: {
        name: 'orders-before-migration-x7k2p',
        uid: 'uid-x-backup',
        labels: { 'crossplane.io/claim-name': 'orders-before-migration', 'crossplane.io/claim-namespace': NAMESPACE },
      },
      spec: { databaseRef: { name: 'orders' }, pinned: true },
      status: { phase: 'Running' },
    };
    // The Job is named after the composite.
    const running = pod('Running', 'orders-before-migration-x7k2p-a1');
    const rsp = call(claimBackup, [], answered({ database: [db], [USAGES]: [USAGE_CRD_OBJECT], pod: [running] }));
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const object = desiredOf(rsp, HOLD_KEY)!;
    assert.equal(object['kind'], 'Object', 'a cluster-scoped composite composes namespaced objects through Objects');
    const usage = ((object['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
    assert.equal((usage['metadata'] as Obj)['namespace'], NAMESPACE);
    assert.deepEqual(specOf(usage)['of'], {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      resourceRef: { name: 'orders' },
    });
    assert.match(String(specOf(usage)['reason']), /^DatabaseBackup orders-before-migration is taking/);
    assertValidObject(usage);
    // A DatabaseRestore named as the backup: its own Usage name.
    assert.notEqual((usage['metadata'] as Obj)['name'], 'orders-before-migration-restore-holds-orders');
    assert.equal((usage['metadata'] as Obj)['name'], 'orders-before-migration-backup-holds-orders');
  });
});

describe('a Database holds the bucket made for its backups', () => {
  const provisioned = { engine: 'postgres', storageGB: 20, backup: { provision: { aws: { region: 'eu-west-1' } } } };

  test('namespaced: a Usage of the Bucket, replaying a deletion refused meanwhile', () => {
    const rsp = call(databaseXr(provisioned, { bare: true }), [], answered({ [USAGES]: [USAGE_CRD_OBJECT] }));
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const bucket = desiredOf(rsp, STORE_KEYS.bucket)!;
    const usage = desiredOf(rsp, BUCKET_HOLD_KEY)!;
    assert.ok(usage, 'the Bucket is held');
    assert.deepEqual(specOf(usage)['of'], {
      apiVersion: 's3.aws.m.upbound.io/v1beta1',
      kind: 'Bucket',
      resourceRef: { name: (bucket['metadata'] as Obj)['name'] },
    });
    assert.match(String(specOf(usage)['reason']), /^Database orders keeps its backups in it/);
    assert.equal(specOf(usage)['replayDeletion'], false, 'a deletion refused long ago is never carried out later');
    assertValidObject(usage);
    const none = call(databaseXr(provisioned, { bare: true }), [], answered({ [USAGES]: [] }));
    assert.equal(desiredOf(none, BUCKET_HOLD_KEY), undefined, 'no Usages served, none sent');
  });

  test('claims: a ClusterUsage of the cluster-scoped Bucket, by the name it has there', () => {
    const rsp = call(claimXr(provisioned, { bare: true }), [], answered({ [USAGES]: [USAGE_CRD_OBJECT] }));
    assert.equal(fatalOf(rsp), undefined, fatal(rsp));
    const bucket = desiredOf(rsp, STORE_KEYS.bucket)!;
    const usage = desiredOf(rsp, BUCKET_HOLD_KEY)!;
    assert.match(String(bucket['apiVersion']), /^s3\.aws\.upbound\.io\//, 'the cluster-scoped twin');
    assert.equal(usage['kind'], 'ClusterUsage', 'a namespaced Usage finds only objects of its namespace');
    assert.equal((usage['metadata'] as Obj)['namespace'], undefined);
    assert.deepEqual(specOf(usage)['of'], {
      apiVersion: bucket['apiVersion'],
      kind: 'Bucket',
      resourceRef: { name: (bucket['metadata'] as Obj)['name'] },
    });
    assertValidObject(usage);
  });
});
