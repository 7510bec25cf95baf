// The final snapshot a Database under deletionPolicy Delete asks for, replayed
// against moto's server with the real SDK: the RDS instance made from what
// the function composes (forProvider), deleted the way provider-upjet-aws
// deletes it (skipFinalSnapshot false: DeleteDBInstance with
// FinalDBSnapshotIdentifier), and the snapshot found afterwards. With
// spec.backup.finalSnapshot false, the deletion skips it and none exists. A
// Database made again with spec.restore.fromSnapshot is restored from it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CreateDBInstanceCommand,
  DeleteDBInstanceCommand,
  DescribeDBSnapshotsCommand,
  RDSClient,
  RestoreDBInstanceFromDBSnapshotCommand,
} from '@aws-sdk/client-rds';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { call, databaseXr, desiredOf, fatalOf, statusOf } from '../support/database.js';
import { type Moto, motoSkipReason, startMoto } from '../support/moto.js';

const skip = motoSkipReason();
const region = 'eu-west-1';
const AWS = { engine: 'postgres', placement: 'aws', aws: { region } } as const;

const forProvider = (rsp: RunFunctionResponse) =>
  (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;

describe('the final snapshot, against moto', { skip }, () => {
  let moto: Moto;
  let rds: RDSClient;
  before(async () => {
    moto = await startMoto();
    rds = new RDSClient({
      region,
      endpoint: moto.endpoint,
      credentials: { accessKeyId: 'AKIAFINALSNAPSHOT01', secretAccessKey: 'not-a-real-secret' },
    });
  });
  after(async () => {
    rds?.destroy();
    await moto?.stop();
  });

  /** CreateDBInstance from the composed parameters, then DeleteDBInstance as the provider asks for it. */
  async function createThenDelete(fp: Obj): Promise<void> {
    await rds.send(
      new CreateDBInstanceCommand({
        DBInstanceIdentifier: String(fp['identifier']),
        Engine: String(fp['engine']),
        EngineVersion: String(fp['engineVersion']),
        DBInstanceClass: String(fp['instanceClass']),
        AllocatedStorage: Number(fp['allocatedStorage']),
        StorageType: String(fp['storageType']),
        StorageEncrypted: Boolean(fp['storageEncrypted']),
        MultiAZ: Boolean(fp['multiAz']),
        PubliclyAccessible: Boolean(fp['publiclyAccessible']),
        DBName: String(fp['dbName']),
        MasterUsername: String(fp['username']),
        MasterUserPassword: 'generated-by-the-provider',
        BackupRetentionPeriod: Number(fp['backupRetentionPeriod']),
        DeletionProtection: Boolean(fp['deletionProtection']),
      }),
    );
    const skipFinal = fp['skipFinalSnapshot'] === true;
    await rds.send(
      new DeleteDBInstanceCommand({
        DBInstanceIdentifier: String(fp['identifier']),
        SkipFinalSnapshot: skipFinal,
        ...(skipFinal ? {} : { FinalDBSnapshotIdentifier: String(fp['finalSnapshotIdentifier']) }),
        DeleteAutomatedBackups: Boolean(fp['deleteAutomatedBackups']),
      }),
    );
  }

  async function snapshotsOf(identifier: string) {
    const out = await rds.send(new DescribeDBSnapshotsCommand({ DBInstanceIdentifier: identifier }));
    return out.DBSnapshots ?? [];
  }

  test('Delete (finalSnapshot by default): RDS accepts the deletion with the composed identifier, and the snapshot exists after it', async () => {
    const rsp = call(databaseXr({ ...AWS, deletionPolicy: 'Delete' }, { name: 'ledger', uid: 'uid-ledger-1' }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const fp = forProvider(rsp);
    assert.equal(fp['skipFinalSnapshot'], false);
    await createThenDelete(fp);
    const snapshots = await snapshotsOf(String(fp['identifier']));
    const kept = snapshots.find((s) => s.DBSnapshotIdentifier === fp['finalSnapshotIdentifier']);
    assert.ok(kept, `no snapshot ${String(fp['finalSnapshotIdentifier'])}: ${JSON.stringify(snapshots)}`);
    assert.equal(kept.Engine, 'postgres');
    assert.equal(kept.AllocatedStorage, 20);
    // What status said would be kept is what is there.
    assert.equal((statusOf(rsp)['deletion'] as Obj)['finalSnapshot'], kept.DBSnapshotIdentifier);

    // The Database made again under the same name (a new uid): its final snapshot does not collide with the first.
    const again = forProvider(
      call(databaseXr({ ...AWS, deletionPolicy: 'Delete' }, { name: 'ledger', uid: 'uid-ledger-2' })),
    );
    assert.equal(again['identifier'], fp['identifier']);
    assert.notEqual(again['finalSnapshotIdentifier'], fp['finalSnapshotIdentifier']);
    await createThenDelete(again);
    const both = (await snapshotsOf(String(fp['identifier']))).map((s) => s.DBSnapshotIdentifier).sort();
    assert.deepEqual(both, [fp['finalSnapshotIdentifier'], again['finalSnapshotIdentifier']].sort());

    // Made again from the first final snapshot (spec.restore.fromSnapshot), as status.deletion told the user:
    // what the function composes is restored by RDS (the provider restores an instance with snapshotIdentifier
    // through RestoreDBInstanceFromDBSnapshot), and the instance carries the snapshot's database.
    const restored = call(
      databaseXr(
        { ...AWS, deletionPolicy: 'Delete', restore: { fromSnapshot: { identifier: kept.DBSnapshotIdentifier } } },
        { name: 'ledger', uid: 'uid-ledger-3' },
      ),
    );
    assert.equal(fatalOf(restored), undefined, fatalOf(restored)?.message);
    const rfp = forProvider(restored);
    assert.equal(rfp['snapshotIdentifier'], kept.DBSnapshotIdentifier);
    const made = await rds.send(
      new RestoreDBInstanceFromDBSnapshotCommand({
        DBInstanceIdentifier: String(rfp['identifier']),
        DBSnapshotIdentifier: String(rfp['snapshotIdentifier']),
        DBInstanceClass: String(rfp['instanceClass']),
        MultiAZ: Boolean(rfp['multiAz']),
        PubliclyAccessible: Boolean(rfp['publiclyAccessible']),
        DeletionProtection: Boolean(rfp['deletionProtection']),
      }),
    );
    assert.equal(made.DBInstance?.Engine, 'postgres');
    assert.equal(made.DBInstance?.DBName, fp['dbName'], 'the database of the deleted Database comes back');
    // A snapshot that is not there: RDS refuses, and the instance's state is how the Database learns it.
    await assert.rejects(
      rds.send(
        new RestoreDBInstanceFromDBSnapshotCommand({
          DBInstanceIdentifier: 'team-a-nothing-db',
          DBSnapshotIdentifier: 'team-a-nothing-db-final-000000',
          DBInstanceClass: String(rfp['instanceClass']),
        }),
      ),
      /DBSnapshotNotFound|not found/i,
    );
  });

  test('Delete with finalSnapshot false: the deletion skips it and no snapshot is left', async () => {
    const rsp = call(
      databaseXr({ ...AWS, deletionPolicy: 'Delete', backup: { finalSnapshot: false } }, { name: 'scratch' }),
    );
    const fp = forProvider(rsp);
    assert.equal(fp['skipFinalSnapshot'], true);
    await createThenDelete(fp);
    assert.deepEqual(await snapshotsOf(String(fp['identifier'])), []);
  });
});
