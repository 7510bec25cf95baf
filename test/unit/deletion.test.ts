// What deleting a Database keeps, for each placement and policy: the RDS
// instance's final snapshot (spec.backup.finalSnapshot, default true, under
// Delete; always under Retain), and in the cluster the backups already in the
// store; status.deletion says it while the Database lives, an event says it
// once, and what is composed validates against the real CRDs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { finalSnapshotIdentifier } from '../../src/blueprints/lifecycle/placements/rds.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import {
  asObserved,
  call,
  CNPG_CRD_OBJECT,
  answered,
  completedBackup,
  databaseXr,
  desiredOf,
  fatalOf,
  statusOf,
} from '../support/database.js';
import { validateObject } from '../support/schemas.js';

const AWS = { engine: 'postgres', placement: 'aws', aws: { region: 'eu-west-1' } } as const;
const forProvider = (rsp: RunFunctionResponse, key = 'rds-instance') =>
  (desiredOf(rsp, key)!['spec'] as Obj)['forProvider'] as Obj;
const deletion = (rsp: RunFunctionResponse) => statusOf(rsp)['deletion'] as Obj;
const events = (rsp: RunFunctionResponse, reason: string) =>
  rsp.results.filter((r) => r.severity === Severity.SEVERITY_NORMAL && r.reason === reason);
/** What RDS accepts as a DB snapshot identifier (CreateDBSnapshot, DeleteDBInstance's FinalDBSnapshotIdentifier). */
const RDS_SNAPSHOT_ID = /^[A-Za-z](?!.*--)[A-Za-z0-9-]{0,254}$/;

/** The same XR again, with the status the last answer gave it (what Crossplane writes back). */
function again(xr: Obj, rsp: RunFunctionResponse): Obj {
  return { ...xr, status: statusOf(rsp) };
}

function assertValid(rsp: RunFunctionResponse, key: string): void {
  const problems = validateObject(desiredOf(rsp, key)!);
  assert.deepEqual(problems, [], `${key}: ${JSON.stringify(problems)}`);
}

describe('deletion on AWS: the final snapshot', () => {
  test('Delete keeps a final snapshot by default: skipFinalSnapshot false, a valid stable identifier, said in status and once as an event', () => {
    const xr = databaseXr({ ...AWS, deletionPolicy: 'Delete' });
    const rsp = call(xr);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const fp = forProvider(rsp);
    assert.equal(fp['deletionProtection'], false, 'Delete must be able to delete');
    assert.equal(fp['skipFinalSnapshot'], false);
    const id = String(fp['finalSnapshotIdentifier']);
    assert.match(id, RDS_SNAPSHOT_ID);
    assert.doesNotMatch(id, /-$/);
    assert.deepEqual((desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['managementPolicies'], ['*']);
    assertValid(rsp, 'rds-instance');

    const said = deletion(rsp);
    assert.equal(said['policy'], 'Delete');
    assert.equal(said['finalSnapshot'], id);
    assert.match(String(said['keeps']), new RegExp(`RDS first takes final snapshot ${id}, which stays in AWS`));
    assert.match(String(said['keeps']), /spec\.restore\.fromSnapshot\.identifier team-a-orders-db-final-/);
    assert.equal(events(rsp, 'DeletionKeeps').length, 1);

    // The next reconcile: the same identifier, and the event is not said again.
    const next = call(again(xr, rsp), asObserved(rsp));
    assert.equal(forProvider(next)['finalSnapshotIdentifier'], id);
    assert.equal(events(next, 'DeletionKeeps').length, 0);
  });

  test('the identifier is unique per Database (a re-created one under the same name) and per generation, within RDS limits', () => {
    const owner = (uid: string, name = 'orders') => ({ owner: { kind: 'Database', name, namespace: 'team-a', uid } });
    const first = finalSnapshotIdentifier(owner('uid-1'));
    assert.notEqual(finalSnapshotIdentifier(owner('uid-2')), first, 'a re-created Database would collide');
    assert.equal(finalSnapshotIdentifier(owner('uid-1')), first, 'stable');
    const long = owner('uid-1', 'a-very-long-database-name-that-fills-the-whole-rds-identifier-x');
    const ids = [0, 1, 2, 3].map((g) => finalSnapshotIdentifier(long, g));
    assert.equal(new Set(ids).size, 4, `generations collide: ${ids.join(', ')}`);
    for (const id of ids) {
      assert.match(id, RDS_SNAPSHOT_ID);
      assert.ok(id.length <= 255 && !id.endsWith('-'), id);
    }
  });

  test('Delete with spec.backup.finalSnapshot false: no final snapshot, and status says nothing stays', () => {
    const rsp = call(databaseXr({ ...AWS, deletionPolicy: 'Delete', backup: { finalSnapshot: false } }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const fp = forProvider(rsp);
    assert.equal(fp['skipFinalSnapshot'], true);
    assert.equal(fp['finalSnapshotIdentifier'], undefined);
    assertValid(rsp, 'rds-instance');
    const said = deletion(rsp);
    assert.equal(said['finalSnapshot'], undefined);
    assert.match(String(said['keeps']), /spec\.backup\.finalSnapshot false: .* with no final snapshot/);
    assert.match(events(rsp, 'DeletionKeeps')[0]?.message ?? '', /no final snapshot/);
  });

  test('Retain is as it was: deletion protection, a final snapshot identifier, no Delete; status says the instance stays', () => {
    const rsp = call(databaseXr({ ...AWS, backup: { finalSnapshot: false } }));
    const fp = forProvider(rsp);
    assert.equal(fp['deletionProtection'], true);
    assert.equal(fp['skipFinalSnapshot'], false, 'Retain ignores finalSnapshot: false (nothing is deleted)');
    assert.match(String(fp['finalSnapshotIdentifier']), RDS_SNAPSHOT_ID);
    assert.equal(fp['deleteAutomatedBackups'], false);
    assert.ok(!((desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['managementPolicies'] as string[]).includes('Delete'));
    assertValid(rsp, 'rds-instance');
    assert.equal(deletion(rsp)['policy'], 'Retain');
    assert.match(
      String(deletion(rsp)['keeps']),
      /^Retain: deleting this Database leaves RDS instance team-a-orders-db in AWS/,
    );
  });

  test("the platform's default (the Input) turns it off; the Database's own spec wins over it", () => {
    const input = {
      apiVersion: 'platform.fn.example.com/v1beta1',
      kind: 'Input',
      defaults: { database: { backup: { finalSnapshot: false } } },
    };
    const withInput = (spec: Obj) => runFunction(buildRequest(databaseXr(spec), [], [], input));
    const off = withInput({ ...AWS, deletionPolicy: 'Delete' });
    assert.equal(fatalOf(off), undefined, fatalOf(off)?.message);
    assert.equal(forProvider(off)['skipFinalSnapshot'], true);
    const own = withInput({ ...AWS, deletionPolicy: 'Delete', backup: { finalSnapshot: true } });
    assert.equal(forProvider(own)['skipFinalSnapshot'], false);
    assert.ok(forProvider(own)['finalSnapshotIdentifier']);
  });

  test('read replicas never ask for a final snapshot (RDS refuses one for a replica)', () => {
    const rsp = call(databaseXr({ ...AWS, deletionPolicy: 'Delete', replicas: 1 }));
    const replica = forProvider(rsp, 'rds-replica-1');
    assert.equal(replica['skipFinalSnapshot'], true);
    assert.equal(replica['finalSnapshotIdentifier'], undefined);
    assert.match(String(deletion(rsp)['keeps']), /and its read replicas/);
  });
});

/** The observed state after `rsp`, with a Completed scheduled DatabaseBackup of the Database. */
function withCompletedBackup(rsp: RunFunctionResponse): Obj[] {
  const backup = completedBackup('orders-db-202612020300');
  (backup['metadata'] as Obj)['annotations'] = { [RESOURCE_NAME_ANNOTATION]: 'scheduled-backup-202612020300' };
  return [...asObserved(rsp), backup];
}

describe('deletion in the cluster: what stays in the store', () => {
  test('StatefulSet, Delete with backups on: the newest Completed backup is named; no backup is claimed at deletion', () => {
    const xr = databaseXr({ deletionPolicy: 'Delete' });
    const first = call(xr);
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    assert.match(String(deletion(first)['keeps']), /none has completed yet, so nothing would be kept now/);
    const rsp = call(again(xr, first), withCompletedBackup(first));
    const said = deletion(rsp);
    assert.equal(said['policy'], 'Delete');
    assert.deepEqual(said['lastBackup'], {
      name: 'orders-db-202612020300',
      location: 's3://team-a-backups/orders/orders-db-202612020300.dump',
      completedAt: '2026-12-02T03:01:12Z',
    });
    const keeps = String(said['keeps']);
    assert.match(keeps, /deletes StatefulSet orders-db and its data volume/);
    assert.match(
      keeps,
      /no backup is taken at that moment \(Crossplane runs no function while a Database is deleted\)/,
    );
    assert.match(keeps, /its dumps in bucket \S+ .*stay/);
    assert.match(keeps, /make a DatabaseBackup just before deleting/);
    // The sentence changed (a backup now exists): said once, naming it; the next call says nothing.
    assert.match(events(rsp, 'DeletionKeeps')[0]?.message ?? '', /\(now DatabaseBackup orders-db-202612020300\)$/);
    const next = call(again(xr, rsp), withCompletedBackup(rsp));
    assert.equal(events(next, 'DeletionKeeps').length, 0);
  });

  test('StatefulSet, Delete with finalSnapshot false, and with backups off: said as they are', () => {
    const off = call(databaseXr({ deletionPolicy: 'Delete', backup: { finalSnapshot: false } }));
    assert.match(String(deletion(off)['keeps']), /no last copy is kept on purpose/);
    assert.equal(deletion(off)['lastBackup'], undefined);
    const none = call(databaseXr({ deletionPolicy: 'Delete', backup: { enabled: false } }));
    assert.match(String(deletion(none)['keeps']), /backups are off, so nothing of its data is kept/);
  });

  test('StatefulSet, Retain: the volume and its credentials stay', () => {
    const rsp = call(databaseXr({}));
    assert.match(
      String(deletion(rsp)['keeps']),
      /^Retain: deleting this Database keeps the data volume of StatefulSet orders-db/,
    );
  });

  test('CloudNativePG, Delete with backups on: its base backups and WAL archive stay in the store', () => {
    const rsp = call(
      databaseXr({ deletionPolicy: 'Delete', highAvailability: true }),
      [],
      answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] }),
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const keeps = String(deletion(rsp)['keeps']);
    assert.match(keeps, /deletes CloudNativePG Cluster orders-db and its volumes/);
    assert.match(keeps, /its base backups and WAL archive in bucket \S+/);
  });
});
