// Versions of an existing database: the default never upgrades it, a
// downgrade is refused, and an upgrade goes only where the engine can do it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Obj } from '../../src/kube.js';
import { asObserved, call, databaseXr, desiredOf, fatalOf, earlierVersionBucket } from '../support/database.js';

const image = (sts: Obj | undefined) =>
  ((((sts!['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[])[0]!['image'];
const forProvider = (inst: Obj | undefined) => (inst!['spec'] as Obj)['forProvider'] as Obj;

/** The observed state after a first call for this spec. */
function existing(spec: Obj): Obj[] {
  return asObserved(call(databaseXr(spec)));
}

describe('database versions', () => {
  test('without spec.version an existing database keeps the version it runs', () => {
    const observed = existing({ version: '16' });
    const rsp = call(databaseXr({}), observed);
    assert.equal(fatalOf(rsp)?.message, undefined);
    assert.equal(image(desiredOf(rsp, 'statefulset')), 'postgres:16');
    assert.equal(image(desiredOf(call(databaseXr({})), 'statefulset')), 'postgres:17', 'a new one gets the newest');
  });

  test('a downgrade is refused', () => {
    assert.match(
      fatalOf(call(databaseXr({ version: '15' }), existing({ version: '16' })))?.message ?? '',
      /spec\.version is 15 but the database runs 16; spec\.version cannot go down/,
    );
    assert.match(
      fatalOf(call(databaseXr({ engine: 'mysql', version: '8.0' }), existing({ engine: 'mysql', version: '8.4' })))
        ?.message ?? '',
      /cannot go down/,
    );
  });

  test('a postgres major upgrade in a StatefulSet is refused: the image cannot run pg_upgrade', () => {
    assert.match(
      fatalOf(call(databaseXr({ version: '17' }), existing({ version: '16' })))?.message ?? '',
      /needs pg_upgrade/,
    );
  });

  test('mysql 8.0 to 8.4 upgrades in place, behind a backup', () => {
    const at80 = existing({ engine: 'mysql', version: '8.0' });
    const waiting = call(databaseXr({ engine: 'mysql', version: '8.4' }), at80);
    assert.equal(fatalOf(waiting)?.message, undefined);
    assert.equal(image(desiredOf(waiting, 'statefulset')), 'mysql:8.0', 'not before its backup');
    assert.equal((desiredOf(waiting, 'pre-upgrade-8-4')!['metadata'] as Obj)['name'], 'orders-db-pre-8-4');
    const backedUp = asObserved(waiting, (key) => (key === 'pre-upgrade-8-4' ? { phase: 'Completed' } : undefined));
    const rsp = call(databaseXr({ engine: 'mysql', version: '8.4' }), backedUp);
    assert.equal(fatalOf(rsp)?.message, undefined);
    assert.equal(image(desiredOf(rsp, 'statefulset')), 'mysql:8.4');
  });

  test('RDS major upgrades are allowed explicitly, only while upgrading', () => {
    const aws = { placement: 'aws', aws: { region: 'eu-west-1' } };
    const before = call(databaseXr({ ...aws, version: '16' }));
    assert.equal(forProvider(desiredOf(before, 'rds-instance'))['allowMajorVersionUpgrade'], undefined);
    // First its pre-upgrade backup (test/unit/day2.test.ts has the whole gate); the version waits for it.
    const waiting = call(databaseXr({ ...aws, version: '17' }), asObserved(before));
    assert.equal(fatalOf(waiting)?.message, undefined);
    assert.equal(forProvider(desiredOf(waiting, 'rds-instance'))['engineVersion'], '16');
    const backedUp = asObserved(waiting, (key) => (key === 'pre-upgrade-17' ? { phase: 'Completed' } : undefined));
    const upgrade = call(databaseXr({ ...aws, version: '17' }), backedUp);
    assert.equal(fatalOf(upgrade)?.message, undefined);
    assert.equal(forProvider(desiredOf(upgrade, 'rds-instance'))['engineVersion'], '17');
    assert.equal(forProvider(desiredOf(upgrade, 'rds-instance'))['allowMajorVersionUpgrade'], true);
  });

  test('turning backups off on AWS keeps one day of RDS backups, and an earlier version’s bucket', () => {
    const aws = { placement: 'aws', aws: { region: 'eu-west-1' } };
    const first = call(databaseXr(aws), [earlierVersionBucket()]);
    const off = call(databaseXr({ ...aws, backup: { enabled: false } }), asObserved(first));
    assert.equal(fatalOf(off)?.message, undefined);
    assert.equal(
      forProvider(desiredOf(off, 'rds-instance'))['backupRetentionPeriod'],
      1,
      '0 would make RDS delete its automated backups',
    );
    assert.ok(desiredOf(off, 'backup-bucket'), 'whatever the bucket holds is not ours to delete: it stays');
  });
});
