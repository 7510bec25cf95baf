// Changes to a Database that runs, reported as they are: storage RDS grows by
// itself up to spec.maxStorageGB (and the shrink guard compares with what was
// asked, not with what autoscaling grew to), and the version that runs, read
// from what runs, with a version asked for and not yet running said plainly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  k8sSecret,
  statusOf,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';

const AWS = { engine: 'postgres', placement: 'aws', aws: { region: 'eu-west-1' } } as const;
const forProvider = (rsp: RunFunctionResponse) =>
  (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
const rdsSecret = answered({
  'rds-connection': [
    k8sSecret('orders-db-rds', 'team-a', { address: 'orders.rds', port: '5432', username: 'app', password: 'pw' }),
  ],
});

/** The instance as the provider reports it, with what AWS says (`atProvider`). */
function observedRds(spec: Obj, atProvider: Obj): Obj[] {
  return asObserved(call(databaseXr(spec), [], rdsSecret), (_key, obj) => {
    const s = healthyStatus(obj);
    if (obj['kind'] === 'Instance') s['atProvider'] = { ...(s['atProvider'] as Obj), ...atProvider };
    return s;
  });
}

describe('storage that grows by itself on AWS', () => {
  test('spec.maxStorageGB is RDS maxAllocatedStorage, and status.storage says what was asked, what there is and how far it may go', () => {
    const spec = { ...AWS, storageGB: 100, maxStorageGB: 400 };
    const rsp = call(databaseXr(spec), observedRds(spec, { allocatedStorage: 180 }), rdsSecret);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(forProvider(rsp)['maxAllocatedStorage'], 400);
    assert.equal(forProvider(rsp)['allocatedStorage'], 100);
    assert.deepEqual(statusOf(rsp)['storage'], { requestedGB: 100, capacityGB: 180, maxGB: 400 });
  });

  test('autoscaling grew the instance: the spec is not a shrink; a shrink below what was asked still is', () => {
    const spec = { ...AWS, storageGB: 100, maxStorageGB: 400 };
    const grown = observedRds(spec, { allocatedStorage: 180 });
    assert.equal(fatalOf(call(databaseXr({ ...spec, storageGB: 120 }), grown, rdsSecret)), undefined);
    assert.match(
      fatalOf(call(databaseXr({ ...spec, storageGB: 50 }), grown, rdsSecret))?.message ?? '',
      /spec\.storageGB is 50 but the database has 100; spec\.storageGB may grow but never shrink/,
    );
    // Without autoscaling, what RDS has is the floor (it was grown out of band).
    const plain = observedRds({ ...AWS, storageGB: 100 }, { allocatedStorage: 180 });
    assert.match(
      fatalOf(call(databaseXr({ ...AWS, storageGB: 120 }), plain, rdsSecret))?.message ?? '',
      /the database has 180/,
    );
  });

  test('bad input: a ceiling below spec.storageGB is refused naming the field; in the cluster it is a warning', () => {
    const rsp = call(databaseXr({ ...AWS, storageGB: 100, maxStorageGB: 50 }));
    assert.match(
      fatalOf(rsp)?.message ?? '',
      /spec\.maxStorageGB is 50; spec\.maxStorageGB must be at least spec\.storageGB \(100\)/,
    );
    assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), []);
    const cluster = call(databaseXr({ storageGB: 20, maxStorageGB: 40 }));
    assert.ok(cluster.results.some((r) => r.reason === 'FieldIgnored' && /placement aws/.test(r.message)));
  });
});

describe('the version that runs, not the one asked for', () => {
  test('RDS runs 16.4 while 17 is asked for: pending until the maintenance window, upgrading while RDS upgrades', () => {
    const running = observedRds({ ...AWS, version: '16' }, { engineVersionActual: '16.4' });
    const asked = call(databaseXr({ ...AWS, version: '17' }), running, rdsSecret);
    assert.equal(fatalOf(asked), undefined, fatalOf(asked)?.message);
    assert.deepEqual(statusOf(asked)['version'], { requested: '17', running: '16.4', pending: '17' });
    assert.match(
      String(statusOf(asked)['message']),
      /^postgres 16\.4 accepts connections at .*; version 17 is pending: RDS applies it in the instance's maintenance window \(postgres 16\.4 runs\)$/,
    );
    const upgrading = observedRds({ ...AWS, version: '16' }, { engineVersionActual: '16.4', status: 'upgrading' });
    const during = call(databaseXr({ ...AWS, version: '17' }), upgrading, rdsSecret);
    assert.match(String(statusOf(during)['message']), /upgrading postgres 16\.4 → 17/);
    // Done: it runs 17.2, nothing pending.
    const done = call(
      databaseXr({ ...AWS, version: '17' }),
      observedRds({ ...AWS, version: '17' }, { engineVersionActual: '17.2' }),
      rdsSecret,
    );
    assert.deepEqual(statusOf(done)['version'], { requested: '17', running: '17.2' });
    assert.match(String(statusOf(done)['message']), /^postgres 17\.2 accepts connections/);
  });

  test('a StatefulSet runs its image once the rollout is done; until then nothing is claimed', () => {
    const first = call(databaseXr({ version: '16' }));
    const rolling = asObserved(first, (_k, obj) => ({
      ...healthyStatus(obj),
      currentRevision: 'a',
      updateRevision: 'b',
    }));
    assert.deepEqual(statusOf(call(databaseXr({ version: '16' }), rolling))['version'], { requested: '16' });
    const done = asObserved(first, (_k, obj) => healthyStatus(obj));
    assert.deepEqual(statusOf(call(databaseXr({ version: '16' }), done))['version'], {
      requested: '16',
      running: '16',
    });
  });
});

describe('when RDS applies a change', () => {
  test('storage now, a version in the maintenance window, unless spec.maintenance says otherwise; a bad window is refused', () => {
    const spec = { ...AWS, version: '16', storageGB: 20 };
    const observed = observedRds(spec, { engineVersionActual: '16.4' });
    assert.equal(
      forProvider(call(databaseXr({ ...spec, storageGB: 40 }), observed, rdsSecret))['applyImmediately'],
      true,
    );
    const upgrade = call(
      databaseXr({ ...spec, version: '17', maintenance: { window: 'sun:03:00-sun:04:00' } }),
      observed,
      rdsSecret,
    );
    assert.equal(forProvider(upgrade)['applyImmediately'], false);
    assert.equal(forProvider(upgrade)['maintenanceWindow'], 'sun:03:00-sun:04:00');
    assert.match(
      String(statusOf(upgrade)['message']),
      /maintenance window sun:03:00-sun:04:00 \(postgres 16\.4 runs\)/,
    );
    const now = call(
      databaseXr({ ...spec, version: '17', maintenance: { applyImmediately: true } }),
      observed,
      rdsSecret,
    );
    assert.equal(forProvider(now)['applyImmediately'], true);
    const bad = call(databaseXr({ ...spec, maintenance: { window: 'sunday 3am' } }));
    assert.match(fatalOf(bad)?.message ?? '', /spec\.maintenance\.window is "sunday 3am"; it must match/);
  });
});
