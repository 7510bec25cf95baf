// Changes to a Database that runs, reported as they are: storage RDS grows by
// itself up to spec.maxStorageGB (and the shrink guard compares with what was
// asked, not with what autoscaling grew to), and the version that runs, read
// from what runs, with a version asked for and not yet running said plainly.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
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
import { parseDf } from '../../src/blueprints/lifecycle/placements/volume-usage.js';
import { nextSize } from '../../src/blueprints/lifecycle/placements/auto-growth.js';
import { healthyStatus } from '../support/observed-state.js';
import { restrictedViolations } from '../support/pod-security.js';
import { validateObject } from '../support/schemas.js';

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

/** The observed state with the pre-upgrade backup for `version` (17 unless said) in `phase` (none when undefined). */
const withBackup = (observed: Obj[], phase?: string, failureReason?: string, version = '17'): Obj[] => {
  const rest = observed.filter((o) => o['kind'] !== 'DatabaseBackup');
  if (!phase) return rest;
  const suffix = version.replace(/\./g, '-');
  return [
    ...rest,
    {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: {
        name: `orders-db-pre-${suffix}`,
        namespace: 'team-a',
        annotations: { 'crossplane.io/composition-resource-name': `pre-upgrade-${suffix}` },
      },
      spec: { databaseRef: { name: 'orders' }, pinned: true },
      status: { phase, ...(failureReason ? { failureReason } : {}) },
    },
  ];
};

describe('storage that grows by itself on AWS', () => {
  test('spec.maxStorageGB is RDS maxAllocatedStorage, and status.storage says what was asked, what there is and how far it may go', () => {
    const spec = { ...AWS, storageGB: 100, maxStorageGB: 400 };
    const rsp = call(databaseXr(spec), observedRds(spec, { allocatedStorage: 180 }), rdsSecret);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(forProvider(rsp)['maxAllocatedStorage'], 400);
    // What RDS grew to is composed as the floor: asking for 100 would ask RDS to shrink.
    assert.equal(forProvider(rsp)['allocatedStorage'], 180);
    assert.deepEqual(statusOf(rsp)['storage'], {
      requestedGB: 100,
      capacityGB: 180,
      maxGB: 400,
      message:
        'RDS grew the storage to 180 GB, past spec.storageGB 100: 180 GB is the floor now (RDS never shrinks storage)',
    });
  });

  test('spec.maxStorageGB removed after RDS grew the disk: no Fatal, the grown size stays the floor, and status says so', () => {
    const before = { ...AWS, storageGB: 100, maxStorageGB: 400 };
    const grown = observedRds(before, { allocatedStorage: 180 });
    const { maxStorageGB: _gone, ...after } = before;
    const rsp = call(databaseXr(after), grown, rdsSecret);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(forProvider(rsp)['allocatedStorage'], 180, 'RDS is not asked to shrink');
    assert.equal(forProvider(rsp)['maxAllocatedStorage'], undefined, 'autoscaling is off');
    const storage = statusOf(rsp)['storage'] as Obj;
    assert.equal(storage['capacityGB'], 180);
    assert.match(String(storage['message']), /180 GB is the floor now/);
    // The reconcile after, reading back what was applied (allocatedStorage 180, no ceiling): still no Fatal.
    const applied = asObserved(rsp, (_key, obj) => {
      const s = healthyStatus(obj);
      if (obj['kind'] === 'Instance') s['atProvider'] = { ...(s['atProvider'] as Obj), allocatedStorage: 180 };
      return s;
    });
    const next = call(databaseXr(after), applied, rdsSecret);
    assert.equal(fatalOf(next), undefined, fatalOf(next)?.message);
    assert.equal(forProvider(next)['allocatedStorage'], 180);
    // Raising spec.storageGB past the floor grows it; lowering it below what was asked is still refused.
    assert.equal(
      forProvider(call(databaseXr({ ...after, storageGB: 200 }), applied, rdsSecret))['allocatedStorage'],
      200,
    );
    assert.match(
      fatalOf(call(databaseXr({ ...after, storageGB: 90 }), applied, rdsSecret))?.message ?? '',
      /spec\.storageGB is 90 but the database has 100; spec\.storageGB may grow but never shrink/,
    );
  });

  test('autoscaling grew the instance: the spec is not a shrink; a shrink below what was asked still is', () => {
    const spec = { ...AWS, storageGB: 100, maxStorageGB: 400 };
    const grown = observedRds(spec, { allocatedStorage: 180 });
    assert.equal(fatalOf(call(databaseXr({ ...spec, storageGB: 120 }), grown, rdsSecret)), undefined);
    assert.match(
      fatalOf(call(databaseXr({ ...spec, storageGB: 50 }), grown, rdsSecret))?.message ?? '',
      /spec\.storageGB is 50 but the database has 100; spec\.storageGB may grow but never shrink/,
    );
    // Without autoscaling (grown out of band), what RDS has is the floor composed; the spec is not refused.
    const plain = observedRds({ ...AWS, storageGB: 100 }, { allocatedStorage: 180 });
    const rsp = call(databaseXr({ ...AWS, storageGB: 120 }), plain, rdsSecret);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(forProvider(rsp)['allocatedStorage'], 180);
  });

  test('bad input: a ceiling below spec.storageGB is refused naming the field; in the cluster it is a warning', () => {
    const rsp = call(databaseXr({ ...AWS, storageGB: 100, maxStorageGB: 50 }));
    assert.match(
      fatalOf(rsp)?.message ?? '',
      /spec\.maxStorageGB is 50; spec\.maxStorageGB must be at least spec\.storageGB \(100\)/,
    );
    assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), []);
    // RDS grows no smaller than 20 GiB: the XRD's rule, mirrored with the same words.
    const small = call(databaseXr({ ...AWS, storageGB: 20, maxStorageGB: 10 }));
    assert.match(
      fatalOf(small)?.message ?? '',
      /spec\.maxStorageGB is 10; spec\.maxStorageGB must be at least 20 with placement aws \(the RDS minimum\)/,
    );
    // In the cluster, a StatefulSet and CloudNativePG alike grow their volumes by itself: nothing is ignored.
    for (const placement of [{}, { highAvailability: true }]) {
      const rsp = call(databaseXr({ storageGB: 20, maxStorageGB: 40, ...placement }));
      assert.ok(!rsp.results.some((r) => r.reason === 'FieldIgnored'), JSON.stringify(placement));
    }
  });
});

describe('the version that runs, not the one asked for', () => {
  test('RDS runs 16.4 while 17 is asked for: pending until the maintenance window, upgrading while RDS upgrades', () => {
    // (Its pre-upgrade backup is Completed: what is asked for is the instance's to do now.)
    const running = withBackup(observedRds({ ...AWS, version: '16' }, { engineVersionActual: '16.4' }), 'Completed');
    const asked = call(databaseXr({ ...AWS, version: '17' }), running, rdsSecret);
    assert.equal(fatalOf(asked), undefined, fatalOf(asked)?.message);
    assert.deepEqual(statusOf(asked)['version'], { requested: '17', running: '16.4', pending: '17' });
    assert.match(
      String(statusOf(asked)['message']),
      /^postgres 16\.4 accepts connections at .*; version 17 is pending: RDS applies it in the instance's maintenance window \(postgres 16\.4 runs\)$/,
    );
    const upgrading = withBackup(
      observedRds({ ...AWS, version: '16' }, { engineVersionActual: '16.4', status: 'upgrading' }),
      'Completed',
    );
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

  test('RDS for MySQL with read replicas: a major upgrade moves the replicas first, the primary only once every replica runs it; PostgreSQL moves the primary, its replicas with it', () => {
    const MYSQL = { engine: 'mysql', placement: 'aws', aws: { region: 'eu-west-1' }, replicas: 2 } as const;
    /** As the provider reports them: the primary and each replica (rds-replica-1, -2) running what AWS says. */
    const observedAt = (setTo: string, primary: string, replicas: string[]) =>
      withBackup(
        asObserved(call(databaseXr({ ...MYSQL, version: setTo }), [], rdsSecret), (key, obj) => {
          const s = healthyStatus(obj);
          const i = /^rds-replica-(\d+)$/.exec(key)?.[1];
          const actual = key === 'rds-instance' ? primary : i ? replicas[Number(i) - 1] : undefined;
          if (actual !== undefined) {
            const { engineVersionActual: _none, ...atProvider } = (s['atProvider'] ?? {}) as Obj;
            s['atProvider'] = actual ? { ...atProvider, engineVersionActual: actual } : atProvider;
          }
          return s;
        }),
        'Completed',
        undefined,
        '8.4',
      );
    const replicaFp = (rsp: RunFunctionResponse, i: number) =>
      (desiredOf(rsp, `rds-replica-${i}`)!['spec'] as Obj)['forProvider'] as Obj;
    const ask = (observed: Obj[]) => call(databaseXr({ ...MYSQL, version: '8.4' }), observed, rdsSecret);

    // Nothing runs 8.4: the replicas are asked to, the primary stays set to 8.0.
    const first = ask(observedAt('8.0', '8.0.39', ['8.0.39', '8.0.39']));
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    assert.equal(forProvider(first)['engineVersion'], '8.0');
    assert.equal(forProvider(first)['allowMajorVersionUpgrade'], undefined);
    for (const i of [1, 2]) {
      assert.equal(replicaFp(first, i)['engineVersion'], '8.4');
      assert.equal(replicaFp(first, i)['allowMajorVersionUpgrade'], true);
      assert.deepEqual(validateObject(desiredOf(first, `rds-replica-${i}`)!), []);
    }
    assert.match(
      String(statusOf(first)['message']),
      /; upgrading the read replicas first, as RDS for MySQL requires: 0 of 2 run 8\.4; then the primary \(mysql 8\.0\.39 runs\)$/,
    );
    // One replica upgraded: still the primary waits.
    const half = ask(observedAt('8.0', '8.0.39', ['8.4.3', '8.0.39']));
    assert.equal(forProvider(half)['engineVersion'], '8.0');
    assert.equal(replicaFp(half, 1)['allowMajorVersionUpgrade'], undefined, 'replica 1 runs 8.4');
    assert.equal(replicaFp(half, 2)['allowMajorVersionUpgrade'], true);
    assert.match(String(statusOf(half)['message']), /1 of 2 run 8\.4/);
    // Every replica runs 8.4: the primary moves, and once set to move it is never set back.
    const both = ask(observedAt('8.0', '8.0.39', ['8.4.3', '8.4.3']));
    assert.equal(forProvider(both)['engineVersion'], '8.4');
    assert.equal(forProvider(both)['allowMajorVersionUpgrade'], true);
    assert.match(String(statusOf(both)['message']), /version 8\.4 is pending: RDS applies it/);
    // A replica RDS has not made yet (no engineVersionActual) runs nothing: the primary waits for it too.
    const unmade = ask(observedAt('8.0', '8.0.39', ['8.4.3', '']));
    assert.equal(forProvider(unmade)['engineVersion'], '8.0');
    assert.match(String(statusOf(unmade)['message']), /1 of 2 run 8\.4/);
    const set = ask(observedAt('8.4', '8.0.39', ['8.4.3', '8.0.39']));
    assert.equal(forProvider(set)['engineVersion'], '8.4', 'a replica seen behind again does not set the primary back');

    // PostgreSQL: RDS upgrades the replicas with their source; the primary moves at once, replicas name no version.
    const PG = { ...AWS, replicas: 1 };
    const pgObserved = withBackup(
      asObserved(call(databaseXr({ ...PG, version: '16' }), [], rdsSecret), (_key, obj) => {
        const s = healthyStatus(obj);
        s['atProvider'] = { ...(s['atProvider'] as Obj), engineVersionActual: '16.4' };
        return s;
      }),
      'Completed',
    );
    const pg = call(databaseXr({ ...PG, version: '17' }), pgObserved, rdsSecret);
    assert.equal(forProvider(pg)['engineVersion'], '17');
    assert.equal(replicaFp(pg, 1)['engineVersion'], undefined);
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
    const observed = withBackup(observedRds(spec, { engineVersionActual: '16.4' }), 'Completed');
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

describe('a major upgrade behind a backup', () => {
  const at16 = { ...AWS, version: '16', storageGB: 20 };
  test('RDS: a pinned DatabaseBackup first; the version moves only once it is Completed, and the backup stays', () => {
    const running = observedRds(at16, { engineVersionActual: '16.4' });
    const first = call(databaseXr({ ...AWS, version: '17', storageGB: 20 }), running, rdsSecret);
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    assert.equal(forProvider(first)['engineVersion'], '16');
    assert.equal(forProvider(first)['allowMajorVersionUpgrade'], undefined);
    const backup = desiredOf(first, 'pre-upgrade-17')!;
    assert.equal((backup['metadata'] as Obj)['name'], 'orders-db-pre-17');
    assert.deepEqual(backup['spec'], { databaseRef: { name: 'orders' }, pinned: true });
    assert.match(
      String(statusOf(first)['message']),
      /the upgrade of postgres 16 to 17 waits for its backup orders-db-pre-17 \(Pending\)/,
    );
    assert.equal(statusOf(first)['ready'], true, 'the database still serves');

    const failed = call(
      databaseXr({ ...AWS, version: '17', storageGB: 20 }),
      withBackup(running, 'Failed', 'snapshot quota'),
      rdsSecret,
    );
    assert.equal(forProvider(failed)['engineVersion'], '16');
    assert.ok(failed.results.some((r) => r.reason === 'UpgradeBlocked' && /snapshot quota/.test(r.message)));

    const done = call(
      databaseXr({ ...AWS, version: '17', storageGB: 20 }),
      withBackup(running, 'Completed'),
      rdsSecret,
    );
    assert.equal(forProvider(done)['engineVersion'], '17');
    assert.equal(forProvider(done)['allowMajorVersionUpgrade'], true);
    assert.equal(forProvider(done)['applyImmediately'], false, 'the version waits for the maintenance window');
    // Set to 17 while RDS still runs 16.4 (the window has not come): still allowed, still waiting for the window.
    const set = withBackup(
      observedRds({ ...AWS, version: '17', storageGB: 20 }, { engineVersionActual: '16.4' }),
      'Completed',
    );
    const meanwhile = call(databaseXr({ ...AWS, version: '17', storageGB: 20 }), set, rdsSecret);
    assert.equal(forProvider(meanwhile)['allowMajorVersionUpgrade'], true);
    assert.equal(forProvider(meanwhile)['applyImmediately'], false);
    assert.ok(desiredOf(done, 'pre-upgrade-17'), 'the backup stays composed');
    // Upgraded: the backup still stays (it holds a backup), and nothing waits any more.
    const upgraded = withBackup(
      observedRds({ ...AWS, version: '17', storageGB: 20 }, { engineVersionActual: '17.2' }),
      'Completed',
    );
    const after = call(databaseXr({ ...AWS, version: '17', storageGB: 20 }), upgraded, rdsSecret);
    assert.ok(desiredOf(after, 'pre-upgrade-17'));
    assert.doesNotMatch(String(statusOf(after)['message']), /waits/);
  });

  test('property: whatever the order in which the backup is observed, the version moves only with a Completed backup', () => {
    const running = observedRds(at16, { engineVersionActual: '16.4' });
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(undefined, 'Pending', 'Running', 'Failed', 'Completed'), { maxLength: 8 }),
        (phases) => {
          for (const phase of phases) {
            const rsp = call(
              databaseXr({ ...AWS, version: '17', storageGB: 20 }),
              withBackup(running, phase),
              rdsSecret,
            );
            assert.equal(fatalOf(rsp), undefined);
            assert.equal(forProvider(rsp)['engineVersion'], phase === 'Completed' ? '17' : '16');
            assert.ok(desiredOf(rsp, 'pre-upgrade-17'), 'the backup is always asked for, and never dropped');
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('read replicas', () => {
  test('CloudNativePG: the primary and a standby per replica; reads through -ro; where writes go, and a failover said once', () => {
    const spec = { engine: 'postgres', storageGB: 20, highAvailability: true, replicas: 3 };
    const crd = answered({
      'cnpg-crd': [
        {
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name: 'clusters.postgresql.cnpg.io' },
        },
      ],
    });
    const first = call(databaseXr(spec), [], crd);
    const manifest = ((desiredOf(first, 'cnpg-cluster')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
    assert.equal((manifest['spec'] as Obj)['instances'], 4);
    const primaryAt = (pod: string, since: string) =>
      asObserved(first, (_k, obj) => {
        const s = healthyStatus(obj);
        const atProvider = s['atProvider'] as Obj;
        if (atProvider['manifest'])
          (atProvider['manifest'] as Obj)['status'] = {
            phase: 'Cluster in healthy state',
            currentPrimary: pod,
            currentPrimaryTimestamp: since,
          };
        return s;
      });
    const ready = call(databaseXr(spec), primaryAt('orders-db-1', '2026-12-02T01:00:00Z'), crd);
    assert.equal(statusOf(ready)['primary'], 'orders-db-1');
    assert.equal(statusOf(ready)['readEndpoint'], 'orders-db-ro.team-a.svc.cluster.local:5432');
    const secret = desiredOf(ready, 'connection');
    assert.equal(
      Buffer.from(String((secret!['data'] as Obj)['ro-host']), 'base64').toString(),
      'orders-db-ro.team-a.svc.cluster.local',
    );
    // CloudNativePG promoted a standby: said once, by the call that sees it.
    const moved = call(
      databaseXr(spec, { status: statusOf(ready) }),
      primaryAt('orders-db-2', '2026-12-02T05:00:00Z'),
      crd,
    );
    assert.equal(statusOf(moved)['primary'], 'orders-db-2');
    assert.equal(statusOf(moved)['lastFailover'], '2026-12-02T05:00:00Z');
    assert.ok(moved.results.some((r) => r.reason === 'Failover' && /from orders-db-1 to orders-db-2/.test(r.message)));
    const again = call(
      databaseXr(spec, { status: statusOf(moved) }),
      primaryAt('orders-db-2', '2026-12-02T05:00:00Z'),
      crd,
    );
    assert.ok(!again.results.some((r) => r.reason === 'Failover'));
  });

  test('RDS: replica instances of the primary, with no user, database or password of their own; reads go to one once it is ready; turned down, they go', () => {
    const spec = { ...AWS, storageGB: 20, replicas: 2 };
    const rsp = call(databaseXr(spec), observedRds({ ...AWS, storageGB: 20 }, {}), rdsSecret);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const replica = desiredOf(rsp, 'rds-replica-1')!;
    const fp = (replica['spec'] as Obj)['forProvider'] as Obj;
    assert.deepEqual(fp['replicateSourceDbRef'], { name: 'orders-db' });
    assert.equal(fp['identifier'], 'team-a-orders-db-ro1');
    for (const field of ['username', 'dbName', 'passwordSecretRef', 'autoGeneratePassword'])
      assert.equal(fp[field], undefined, `${field} is the primary's`);
    assert.deepEqual((replica['spec'] as Obj)['managementPolicies'], ['Observe', 'Create', 'Update', 'Delete']);
    assert.ok(desiredOf(rsp, 'rds-replica-2'));
    // Until a replica is ready, reads go to the primary.
    const data = desiredOf(rsp, 'connection')!['data'] as Obj;
    assert.equal(
      Buffer.from(String(data['ro-host']), 'base64').toString(),
      Buffer.from(String(data['host']), 'base64').toString(),
    );
    const withReplicas = asObserved(rsp, (key, obj) => {
      const s = healthyStatus(obj);
      if (key.startsWith('rds-replica-')) (s['atProvider'] as Obj)['address'] = `${key}.rds`;
      return s;
    });
    const reading = call(databaseXr(spec), withReplicas, rdsSecret);
    const ro = Buffer.from(String((desiredOf(reading, 'connection')!['data'] as Obj)['ro-host']), 'base64').toString();
    assert.equal(ro, 'rds-replica-1.rds');
    assert.equal(statusOf(reading)['readEndpoint'], 'rds-replica-1.rds:5432');
    // Turned down to none: copies go, nothing refused.
    const down = call(databaseXr({ ...spec, replicas: 0 }), withReplicas, rdsSecret);
    assert.equal(fatalOf(down), undefined, fatalOf(down)?.message);
    assert.equal(desiredOf(down, 'rds-replica-1'), undefined);
    assert.ok(desiredOf(down, 'rds-instance'), 'the primary stays');
  });

  test('a Database in a StatefulSet has no replicas: refused naming the field and what would do', () => {
    const rsp = call(databaseXr({ storageGB: 20, replicas: 1 }));
    assert.match(
      fatalOf(rsp)?.message ?? '',
      /spec\.replicas is 1; spec\.replicas needs highAvailability \(CloudNativePG\) in the cluster/,
    );
  });
});

describe('a StatefulSet volume that grows', () => {
  const claim = (requested: number, capacity: number, conditions: Obj[] = [], allocated?: string): Obj => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data-orders-db-0', namespace: 'team-a', uid: 'uid-pvc' },
    spec: { storageClassName: 'standard', resources: { requests: { storage: `${requested}Gi` } } },
    status: {
      phase: 'Bound',
      capacity: { storage: `${capacity}Gi` },
      conditions,
      ...(allocated ? { allocatedResourceStatuses: { storage: allocated } } : {}),
    },
  });
  const storageClass = (expands: boolean): Obj => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'standard' },
    provisioner: 'example.com/stand-in',
    allowVolumeExpansion: expands,
  });
  /** Observed as a cluster has it: everything healthy, Services with their cluster IP. */
  const healthy = (rsp: RunFunctionResponse): Obj[] =>
    asObserved(rsp, (_k, obj) => healthyStatus(obj)).map((o) =>
      o['kind'] === 'Service' ? { ...o, spec: { clusterIP: '10.96.0.10', ...(o['spec'] as Obj) } } : o,
    );
  const running = healthy(call(databaseXr({ storageGB: 20 })));
  const ask = (spec: Obj, pvc: Obj, cls: Obj, observed: Obj[] = running) =>
    call(databaseXr({ storageGB: 20, ...spec }), observed, answered({ 'data-claim': [pvc], 'storage-class': [cls] }));

  test('the claim is grown through an Object that may only observe and update it; the StatefulSet is untouched', () => {
    const rsp = ask({ storageGB: 40 }, claim(20, 20), storageClass(true));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const resize = desiredOf(rsp, 'volume-resize')!;
    assert.equal(resize['kind'], 'Object');
    assert.deepEqual((resize['spec'] as Obj)['managementPolicies'], ['Observe', 'Update']);
    assert.deepEqual(((resize['spec'] as Obj)['forProvider'] as Obj)['manifest'], {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-orders-db-0', namespace: 'team-a' },
      spec: { resources: { requests: { storage: '40Gi' } } },
    });
    const templates = ((desiredOf(rsp, 'statefulset')!['spec'] as Obj)['volumeClaimTemplates'] as Obj[])[0]!;
    assert.equal((((templates['spec'] as Obj)['resources'] as Obj)['requests'] as Obj)['storage'], '20Gi');
    assert.equal(statusOf(rsp)['phase'], 'Updating');
    assert.equal(statusOf(rsp)['ready'], true, 'it serves while the volume grows');
    assert.equal(statusOf(rsp)['message'], 'volume data-orders-db-0: 20Gi → 40Gi (requested)');
    assert.deepEqual(statusOf(rsp)['storage'], { requestedGB: 40, capacityGB: 20 });
    const storageResized = rsp.conditions.find((c) => c.type === 'StorageResized');
    assert.equal(storageResized?.reason, 'Resizing');
  });

  test('the resize as its controllers report it, a restart only when allowed, and done', () => {
    const observed = healthy(ask({ storageGB: 40 }, claim(20, 20), storageClass(true)));
    const node = ask({ storageGB: 40 }, claim(40, 20, [], 'NodeResizePending'), storageClass(true), observed);
    assert.equal(statusOf(node)['message'], 'volume data-orders-db-0: 20Gi → 40Gi (NodeResizePending)');
    const pending = claim(40, 20, [{ type: 'FileSystemResizePending', status: 'True' }]);
    const waits = ask({ storageGB: 40 }, pending, storageClass(true), observed);
    assert.match(
      String(statusOf(waits)['message']),
      /set spec\.maintenance\.allowRestart to let the function restart it/,
    );
    const template = (rsp: RunFunctionResponse) =>
      (((desiredOf(rsp, 'statefulset')!['spec'] as Obj)['template'] as Obj)['metadata'] as Obj)['annotations'];
    assert.equal(template(waits), undefined, 'no restart unless allowed');
    // Pending a moment only (a driver that grows file systems online): no restart yet.
    const brief = claim(40, 20, [
      { type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date().toISOString() },
    ]);
    const online = ask({ storageGB: 40, maintenance: { allowRestart: true } }, brief, storageClass(true), observed);
    assert.equal(template(online), undefined);
    const restarts = ask({ storageGB: 40, maintenance: { allowRestart: true } }, pending, storageClass(true), observed);
    assert.deepEqual(template(restarts), { 'function-platform.dev/restarted-for-size': '40Gi' });
    const done = ask({ storageGB: 40 }, claim(40, 40), storageClass(true), observed);
    assert.equal(statusOf(done)['phase'], 'Ready');
    assert.deepEqual(statusOf(done)['storage'], { requestedGB: 40, capacityGB: 40 });
    assert.equal(done.conditions.find((c) => c.type === 'StorageResized')?.reason, 'Resized');
    assert.ok(desiredOf(done, 'volume-resize'), 'the resize Object stays');
  });

  // Found under real Crossplane: the first call of each reconcile has no answer to the requirements yet.
  test('before the claim is read, a resize Object composed earlier stays as it was', () => {
    const observed = healthy(ask({ storageGB: 40 }, claim(20, 20), storageClass(true)));
    const first = call(databaseXr({ storageGB: 40 }), observed);
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    assert.deepEqual(
      desiredOf(first, 'volume-resize'),
      desiredOf(ask({ storageGB: 40 }, claim(20, 20), storageClass(true)), 'volume-resize'),
    );
  });

  test('a class that cannot expand changes nothing, and says which class and sizes; a shrink below the claim is refused', () => {
    const rsp = ask({ storageGB: 40 }, claim(20, 20), storageClass(false));
    assert.equal(fatalOf(rsp), undefined);
    assert.equal(desiredOf(rsp, 'volume-resize'), undefined);
    const c = rsp.conditions.find((x) => x.type === 'StorageResized');
    assert.equal(c?.reason, 'ExpansionNotAllowed');
    assert.match(
      c?.message ?? '',
      /StorageClass standard does not allow volume expansion: volume data-orders-db-0 stays at 20Gi, spec\.storageGB asks 40Gi/,
    );
    assert.ok(rsp.results.some((r) => r.reason === 'ExpansionNotAllowed'));
    const shrink = ask({ storageGB: 30 }, claim(40, 40), storageClass(true));
    assert.match(
      fatalOf(shrink)?.message ?? '',
      /spec\.storageGB is 30 but volume data-orders-db-0 has 40Gi; spec\.storageGB may grow but never shrink/,
    );
  });
});

/** The CloudNativePG CRD, as Crossplane answers the cnpg-crd requirement where the operator is installed. */
const CNPG_CRD: Obj = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clusters.postgresql.cnpg.io' },
};
/** A bound claim of Cluster orders-db, of `gb` GiB, as the operator names it. */
const cnpgClaim = (name: string, gb: number): Obj => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'team-a', labels: { 'cnpg.io/cluster': 'orders-db' } },
  spec: { storageClassName: 'standard' },
  status: { phase: 'Bound', capacity: { storage: `${gb}Gi` } },
});
/** StorageClass standard, expanding volumes or not. */
const standardClass = (allowVolumeExpansion = true): Obj => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: 'standard' },
  provisioner: 'example.com/stand-in',
  allowVolumeExpansion,
});
const KIB_PER_GIB = 1024 * 1024;
/** A measuring pod of `claim` that finished: df -Pk of a file system of `sizeGB` (as XFS makes it) `percent` used. */
const measuringPod = (claim: string, sizeGB: number, percent: number, finishedAt = '2026-12-03T10:00:00Z'): Obj => {
  const blocks = Math.round(sizeGB * KIB_PER_GIB * 0.9995);
  const used = Math.floor((blocks * percent) / 100);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${claim}-usage-${Date.parse(finishedAt)}`,
      namespace: 'team-a',
      labels: { 'function-platform.dev/measures': claim },
    },
    status: {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'measure',
          state: {
            terminated: {
              exitCode: 0,
              finishedAt,
              message: `Filesystem     1024-blocks    Used Available Capacity Mounted on\n/dev/loop3 ${blocks} ${used} ${blocks - used} ${percent}% /data\n`,
            },
          },
        },
      ],
    },
  };
};

describe('a StatefulSet volume that grows by itself (spec.maxStorageGB)', () => {
  // The function's clock: before the measurements below, which a growth asked now must not predate.
  let restoreClock = () => {};
  before(() => {
    restoreClock = setClock(() => new Date('2026-12-03T09:00:00Z'));
  });
  after(() => restoreClock());
  const claim = (requested: number, capacity: number): Obj => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data-orders-db-0', namespace: 'team-a', uid: 'uid-pvc' },
    spec: { storageClassName: 'standard', resources: { requests: { storage: `${requested}Gi` } } },
    status: { phase: 'Bound', capacity: { storage: `${capacity}Gi` } },
  });
  const standard = standardClass();
  const measured = (sizeGB: number, percent: number, at?: string) =>
    measuringPod('data-orders-db-0', sizeGB, percent, at);
  const healthy = (rsp: RunFunctionResponse): Obj[] =>
    asObserved(rsp, (_k, obj) => healthyStatus(obj)).map((o) =>
      o['kind'] === 'Service' ? { ...o, spec: { clusterIP: '10.96.0.10', ...(o['spec'] as Obj) } } : o,
    );
  const SPEC = { storageGB: 20, maxStorageGB: 40 };
  const running = healthy(call(databaseXr(SPEC)));
  const ask = (pvc: Obj, pods: Obj[], spec: Obj = SPEC, observed: Obj[] = running) =>
    call(
      databaseXr(spec),
      observed,
      answered({ 'data-claim': [pvc], 'storage-class': [standard], 'usage-pods': pods }),
    );
  const resizeTo = (rsp: RunFunctionResponse) =>
    (
      (
        ((desiredOf(rsp, 'volume-resize')?.['spec'] as Obj | undefined)?.['forProvider'] as Obj | undefined)?.[
          'manifest'
        ] as Obj | undefined
      )?.['spec'] as Obj | undefined
    )?.['resources'];

  test('a CronJob measures the live data claim on the database node, read-only, under the restricted profile', () => {
    const rsp = ask(claim(20, 20), []);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const cron = desiredOf(rsp, 'usage')!;
    assert.equal(cron['kind'], 'CronJob');
    const spec = cron['spec'] as Obj;
    assert.match(String(spec['schedule']), /^[0-4]-59\/5 \* \* \* \*$/, 'every 5 minutes, offset by the name');
    assert.equal(spec['concurrencyPolicy'], 'Forbid');
    assert.equal(spec['successfulJobsHistoryLimit'], 1, 'the last measurement stays readable');
    const pod = ((((spec['jobTemplate'] as Obj)['spec'] as Obj)['template'] as Obj)['spec'] ?? {}) as Obj;
    assert.deepEqual(pod['volumes'], [
      { name: 'data', persistentVolumeClaim: { claimName: 'data-orders-db-0', readOnly: true } },
    ]);
    const affinity = (
      ((pod['affinity'] as Obj)['podAffinity'] as Obj)['requiredDuringSchedulingIgnoredDuringExecution'] as Obj[]
    )[0]!;
    assert.equal(affinity['topologyKey'], 'kubernetes.io/hostname');
    // The server pods the affinity names are the ones the client Service selects.
    assert.deepEqual(
      (affinity['labelSelector'] as Obj)['matchLabels'],
      (desiredOf(rsp, 'service')!['spec'] as Obj)['selector'],
    );
    assert.equal(pod['automountServiceAccountToken'], false);
    assert.equal((pod['securityContext'] as Obj)['runAsNonRoot'], true);
    const container = (pod['containers'] as Obj[])[0]!;
    assert.deepEqual(container['command'], ['sh', '-c', 'df -Pk /data > /dev/termination-log']);
    assert.deepEqual(rsp.requirements?.resources?.['usage-pods']?.matchLabels?.labels, {
      'function-platform.dev/measures': 'data-orders-db-0',
    });
    // Without a ceiling nothing grows by itself, and nothing is measured.
    const plain = call(databaseXr({ storageGB: 20 }), running, answered({ 'data-claim': [claim(20, 20)] }));
    assert.equal(desiredOf(plain, 'usage'), undefined);
    assert.equal(plain.requirements?.resources?.['usage-pods'], undefined);
  });

  test('past growAtPercent it grows by a step, says so once, and records it; below, nothing changes', () => {
    const quiet = ask(claim(20, 20), [measured(20, 79)]);
    assert.equal(desiredOf(quiet, 'volume-resize'), undefined);
    assert.equal((statusOf(quiet)['storage'] as Obj)['usedPercent'], 79);

    const rsp = ask(claim(20, 20), [measured(20, 50, '2026-12-03T09:55:00Z'), measured(20, 84)]);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.deepEqual(resizeTo(rsp), { requests: { storage: '25Gi' } }, '20 GiB and 25 %');
    const notice = rsp.results.find((r) => r.reason === 'AutoGrown');
    assert.equal(notice?.severity, Severity.SEVERITY_NORMAL);
    assert.match(notice?.message ?? '', /volume data-orders-db-0 is 84% used .* growing it 20Gi → 25Gi by itself/);
    const storage = statusOf(rsp)['storage'] as Obj;
    assert.equal(storage['requestedGB'], 25);
    assert.equal(storage['capacityGB'], 20);
    assert.equal(storage['maxGB'], 40);
    assert.equal(storage['usedPercent'], 84, 'the newest measurement');
    assert.equal(storage['measuredAt'], '2026-12-03T10:00:00Z');
    assert.equal((storage['lastAutoGrowth'] as Obj)['toGB'], 25);
    // Recorded on the claim itself, through the resize Object.
    const manifest = ((desiredOf(rsp, 'volume-resize')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
    const recorded = ((manifest['metadata'] as Obj)['annotations'] as Obj)['function-platform.dev/last-auto-growth'];
    assert.deepEqual(JSON.parse(String(recorded)), storage['lastAutoGrowth']);
    assert.equal(statusOf(rsp)['ready'], true, 'it serves while the volume grows');
  });

  test('the grown size is the floor: no shrink asked, no growth again on a measurement from before it', () => {
    const first = ask(claim(20, 20), [measured(20, 84)]);
    const observed = healthy(first);
    // The claim grew; the file system was measured before it did (still 20 GiB, still 84 %).
    const after = ask(claim(25, 25), [measured(20, 84)], SPEC, observed);
    assert.equal(fatalOf(after), undefined, fatalOf(after)?.message);
    assert.deepEqual(resizeTo(after), { requests: { storage: '25Gi' } }, 'not grown again');
    assert.ok(!after.results.some((r) => r.reason === 'AutoGrown'));
    assert.equal((statusOf(after)['storage'] as Obj)['requestedGB'], 25);
    // Measured again on the grown file system, past the threshold: the next step.
    const again = ask(claim(25, 25), [measured(25, 90, '2026-12-03T10:10:00Z')], SPEC, observed);
    assert.deepEqual(resizeTo(again), { requests: { storage: '32Gi' } });
    // spec.maxStorageGB taken away: the grown volume stays the floor (recorded on the resize Object).
    const without = ask(claim(25, 25), [], { storageGB: 20 }, observed);
    assert.equal(fatalOf(without), undefined, fatalOf(without)?.message);
    assert.deepEqual(resizeTo(without), { requests: { storage: '25Gi' } });
  });

  test('a growth asked stands until the claim shows it: the Object keeps asking, said once, the time kept', () => {
    const first = ask(claim(20, 20), [measured(20, 84)]);
    const asked = healthy(first);
    // The provider has not applied it yet: the claim still asks 20Gi, the same measurement is read again.
    const later = ask(claim(20, 20), [measured(20, 84)], SPEC, asked);
    assert.deepEqual(resizeTo(later), { requests: { storage: '25Gi' } }, 'not taken back to 20Gi');
    assert.ok(!later.results.some((r) => r.reason === 'AutoGrown'), 'said once');
    assert.deepEqual(
      (statusOf(later)['storage'] as Obj)['lastAutoGrowth'],
      (statusOf(first)['storage'] as Obj)['lastAutoGrowth'],
    );
  });

  test('a volume whose capacity is more than it asked (a provisioner that rounds up) grows from what it has', () => {
    const rsp = ask(claim(20, 30), [measured(30, 85)]);
    assert.deepEqual(resizeTo(rsp), { requests: { storage: '38Gi' } }, '30 GiB and 25 %');
  });

  test('at the ceiling: a warning, and nothing changes', () => {
    const observed = healthy(ask(claim(36, 36), [measured(36, 90)], { storageGB: 20, maxStorageGB: 40 }));
    const full = ask(claim(40, 40), [measured(40, 93)], SPEC, observed);
    assert.equal(fatalOf(full), undefined, fatalOf(full)?.message);
    assert.deepEqual(resizeTo(full), { requests: { storage: '40Gi' } });
    const warning = full.results.find((r) => r.reason === 'StorageNearlyFull');
    assert.equal(warning?.severity, Severity.SEVERITY_WARNING);
    assert.match(warning?.message ?? '', /93% used .* at spec\.maxStorageGB \(40Gi\): it grows no further by itself/);
    assert.equal(statusOf(full)['ready'], true, 'a full disk is said, the database still serves');
  });

  test('one step: 25 % by default, at least 1 GiB, never past the ceiling', () => {
    assert.equal(nextSize(20, 25, 100), 25);
    assert.equal(nextSize(1, 25, 20), 2);
    assert.equal(nextSize(38, 25, 40), 40);
    assert.equal(nextSize(10, 100, 100), 20);
  });

  test("df's answer read as df computes it; anything else is no measurement", () => {
    assert.deepEqual(
      parseDf(
        'Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/loop0 1038336 880000 158336 85% /data',
        't',
      ),
      { sizeGB: 0.99, usedGB: 0.84, usedPercent: 85, at: 't' },
    );
    assert.equal(parseDf('df: /data: No such file or directory', 't'), undefined);
    assert.equal(parseDf('', 't'), undefined);
  });
});

describe('a CloudNativePG Database that grows', () => {
  test('the Cluster asks for more; its claims, as the operator grows them, say how far it is', () => {
    const spec = { engine: 'postgres', storageGB: 20, highAvailability: true };
    const observed = asObserved(call(databaseXr(spec), [], answered({ 'cnpg-crd': [CNPG_CRD] })), (_k, obj) =>
      healthyStatus(obj),
    );
    const grow = (claims: Obj[], status?: Obj, expands = true) =>
      call(
        databaseXr({ ...spec, storageGB: 40 }, status ? { status } : {}),
        observed,
        answered({ 'cnpg-crd': [CNPG_CRD], 'cnpg-claims': claims, 'cnpg-storage-class': [standardClass(expands)] }),
      );
    const sizeOf = (rsp: RunFunctionResponse) =>
      ((((desiredOf(rsp, 'cnpg-cluster')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj)['spec'] as Obj)[
        'storage'
      ];
    // The StorageClass preflight (as the StatefulSet's): a class that cannot expand keeps the size composed.
    const refused = grow([cnpgClaim('orders-db-1', 20), cnpgClaim('orders-db-2', 20)], undefined, false);
    assert.equal(fatalOf(refused), undefined, fatalOf(refused)?.message);
    assert.deepEqual(sizeOf(refused), { size: '20Gi' });
    const c = refused.conditions.find((x) => x.type === 'StorageResized');
    assert.equal(c?.reason, 'ExpansionNotAllowed');
    assert.match(
      c?.message ?? '',
      /^StorageClass standard does not allow volume expansion: Cluster orders-db stays at 20Gi, spec\.storageGB asks 40Gi/,
    );
    assert.ok(refused.results.some((r) => r.reason === 'ExpansionNotAllowed'));
    // Before the class is read (the first call of a reconcile), nothing grows either.
    const unread = call(
      databaseXr({ ...spec, storageGB: 40 }),
      observed,
      answered({ 'cnpg-crd': [CNPG_CRD], 'cnpg-claims': [cnpgClaim('orders-db-1', 20)] }),
    );
    assert.deepEqual(sizeOf(unread), { size: '20Gi' });
    assert.ok(JSON.stringify(unread.requirements).includes('"standard"'), 'the StorageClass is asked for');
    const half = grow([cnpgClaim('orders-db-1', 40), cnpgClaim('orders-db-2', 20)]);
    assert.equal(fatalOf(half), undefined, fatalOf(half)?.message);
    const manifest = ((desiredOf(half, 'cnpg-cluster')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
    assert.deepEqual((manifest['spec'] as Obj)['storage'], { size: '40Gi' });
    assert.equal(statusOf(half)['phase'], 'Updating');
    assert.equal(statusOf(half)['message'], 'volumes of Cluster orders-db: 20Gi → 40Gi (1 of 2 grown)');
    assert.deepEqual(statusOf(half)['storage'], { requestedGB: 40, capacityGB: 20 });
    // A new standby's claim, not bound yet, has no size to count.
    const unbound = { ...cnpgClaim('orders-db-3', 0), status: { phase: 'Pending' } };
    // The status the half-way call wrote is what the next one reads (issue 26: Resized is said of volumes that grew).
    const done = grow([cnpgClaim('orders-db-1', 40), cnpgClaim('orders-db-2', 40), unbound], statusOf(half));
    assert.equal(statusOf(done)['phase'], 'Ready');
    assert.equal(done.conditions.find((c) => c.type === 'StorageResized')?.reason, 'Resized');
    // A Cluster made at its size was never resized: nothing is said of it.
    const fresh = call(
      databaseXr(spec),
      observed,
      answered({ 'cnpg-crd': [CNPG_CRD], 'cnpg-claims': [cnpgClaim('orders-db-1', 20)] }),
    );
    assert.equal(
      fresh.conditions.find((c) => c.type === 'StorageResized'),
      undefined,
    );
  });
});

describe('a CloudNativePG Database that grows by itself (spec.maxStorageGB)', () => {
  let restoreClock = () => {};
  before(() => {
    restoreClock = setClock(() => new Date('2026-12-03T09:00:00Z'));
  });
  after(() => restoreClock());
  const SPEC = { engine: 'postgres', storageGB: 20, maxStorageGB: 40, highAvailability: true };
  const measured = (sizeGB: number, percent: number, at?: string) => measuringPod('orders-db-1', sizeGB, percent, at);
  /** The Cluster (and the rest) as composed by `rsp`, healthy, its primary orders-db-1. */
  const observedFrom = (rsp: RunFunctionResponse) =>
    asObserved(rsp, (_k, obj) => {
      const s = healthyStatus(obj);
      const manifest = (s['atProvider'] as Obj)['manifest'] as Obj | undefined;
      if (manifest) manifest['status'] = { phase: 'Cluster in healthy state', currentPrimary: 'orders-db-1' };
      return s;
    });
  const first = observedFrom(call(databaseXr(SPEC), [], answered({ 'cnpg-crd': [CNPG_CRD] })));
  const ask = (claims: number[], pods: Obj[], observed = first, spec: Obj = SPEC, expands = true) =>
    call(
      databaseXr(spec),
      observed,
      answered({
        'cnpg-crd': [CNPG_CRD],
        'cnpg-claims': claims.map((gb, i) => cnpgClaim(`orders-db-${i + 1}`, gb)),
        'cnpg-storage-class': [standardClass(expands)],
        'usage-pods': pods,
      }),
    );
  const manifestOf = (rsp: RunFunctionResponse) =>
    ((desiredOf(rsp, 'cnpg-cluster')!['spec'] as Obj)['forProvider'] as Obj)['manifest'] as Obj;
  const sizeOf = (rsp: RunFunctionResponse) => ((manifestOf(rsp)['spec'] as Obj)['storage'] as Obj)['size'];

  test("a CronJob measures the primary's claim on the primary's node, as CloudNativePG's user, under the restricted profile", () => {
    const rsp = ask([20, 20], []);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const cron = desiredOf(rsp, 'usage')!;
    assert.deepEqual(validateObject(cron), []);
    const pod = (((((cron['spec'] as Obj)['jobTemplate'] as Obj)['spec'] as Obj)['template'] as Obj)['spec'] ??
      {}) as Obj;
    assert.deepEqual(restrictedViolations(pod), []);
    assert.deepEqual(pod['volumes'], [
      { name: 'data', persistentVolumeClaim: { claimName: 'orders-db-1', readOnly: true } },
    ]);
    const affinity = (
      ((pod['affinity'] as Obj)['podAffinity'] as Obj)['requiredDuringSchedulingIgnoredDuringExecution'] as Obj[]
    )[0]!;
    assert.deepEqual((affinity['labelSelector'] as Obj)['matchLabels'], { 'cnpg.io/instanceName': 'orders-db-1' });
    const container = (pod['containers'] as Obj[])[0]!;
    assert.equal(container['image'], 'ghcr.io/cloudnative-pg/postgresql:17', "the Cluster's own image");
    assert.equal((pod['securityContext'] as Obj)['runAsUser'], 26);
    assert.deepEqual(rsp.requirements?.resources?.['usage-pods']?.matchLabels?.labels, {
      'function-platform.dev/measures': 'orders-db-1',
    });
    // Before the operator names a primary, there is nothing to measure.
    const unnamed = call(databaseXr(SPEC), [], answered({ 'cnpg-crd': [CNPG_CRD] }));
    assert.equal(desiredOf(unnamed, 'usage'), undefined);
    // Without a ceiling, nothing is measured.
    const plain = ask([20, 20], [], first, { ...SPEC, maxStorageGB: undefined });
    assert.equal(desiredOf(plain, 'usage'), undefined);
  });

  test('past growAtPercent the Cluster asks a step more, said once and recorded on it; grown, that size is the floor', () => {
    assert.equal(sizeOf(ask([20, 20], [measured(20, 79)])), '20Gi', 'below the threshold nothing changes');
    const rsp = ask([20, 20], [measured(20, 84)]);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(sizeOf(rsp), '25Gi', '20 GiB and 25 %');
    const notice = rsp.results.find((r) => r.reason === 'AutoGrown');
    assert.equal(notice?.severity, Severity.SEVERITY_NORMAL);
    assert.match(
      notice?.message ?? '',
      /^volume orders-db-1 \(the primary of Cluster orders-db\) is 84% used .* growing it 20Gi → 25Gi by itself \(spec\.maxStorageGB 40\)$/,
    );
    const storage = statusOf(rsp)['storage'] as Obj;
    assert.deepEqual(
      { ...storage, lastAutoGrowth: undefined },
      {
        requestedGB: 25,
        capacityGB: 20,
        maxGB: 40,
        usedGB: 16.79,
        usedPercent: 84,
        measuredAt: '2026-12-03T10:00:00Z',
        lastAutoGrowth: undefined,
      },
    );
    assert.deepEqual(storage['lastAutoGrowth'], {
      at: '2026-12-03T09:00:00.000Z',
      fromGB: 20,
      toGB: 25,
      usedPercent: 84,
    });
    const recorded = (manifestOf(rsp)['metadata'] as Obj)['annotations'] as Obj;
    assert.deepEqual(JSON.parse(String(recorded['function-platform.dev/last-auto-growth'])), storage['lastAutoGrowth']);
    assert.equal(statusOf(rsp)['phase'], 'Updating', 'Updating while the operator grows the claims');

    // The operator grew both claims; the measurement is still the one from before the growth.
    const grown = observedFrom(rsp);
    const after = ask([25, 25], [measured(20, 84)], grown);
    assert.equal(fatalOf(after), undefined, fatalOf(after)?.message);
    assert.equal(sizeOf(after), '25Gi', 'no growth again on a measurement from before it, and no shrink back');
    assert.ok(!after.results.some((r) => r.reason === 'AutoGrown'), 'said once');
    assert.equal(statusOf(after)['phase'], 'Ready');
    // A full-size measurement, but taken before the growth was asked (09:00): it grows nothing again.
    const early = ask([25, 25], [measured(25, 90, '2026-12-03T08:30:00Z')], grown);
    assert.equal(sizeOf(early), '25Gi');
    assert.ok(!early.results.some((r) => r.reason === 'AutoGrown'));
    // Measured after it, past the threshold again: the next step, from 25.
    assert.equal(sizeOf(ask([25, 25], [measured(25, 90, '2026-12-03T09:30:00Z')], grown)), '32Gi');
    // The ceiling taken away, or spec.storageGB left under the grown size: nothing flips back, nothing is refused.
    const removed = ask([25, 25], [], grown, { ...SPEC, maxStorageGB: undefined });
    assert.equal(fatalOf(removed), undefined, fatalOf(removed)?.message);
    assert.equal(sizeOf(removed), '25Gi');
    // A user who raises spec.storageGB past it takes over.
    assert.equal(sizeOf(ask([25, 25], [], grown, { ...SPEC, storageGB: 30 })), '30Gi');
  });

  test('at the ceiling a warning and no change; a class that cannot expand keeps the size and says it would have grown', () => {
    const at40 = { ...SPEC, storageGB: 40 };
    const full = ask(
      [40, 40],
      [measured(40, 90)],
      observedFrom(call(databaseXr(at40), [], answered({ 'cnpg-crd': [CNPG_CRD] }))),
      at40,
    );
    assert.equal(sizeOf(full), '40Gi');
    const warning = full.results.find((r) => r.reason === 'StorageNearlyFull');
    assert.equal(warning?.severity, Severity.SEVERITY_WARNING);
    assert.match(
      warning?.message ?? '',
      /is 90% used .* and at spec\.maxStorageGB \(40Gi\): it grows no further by itself/,
    );
    const stuck = ask([20, 20], [measured(20, 90)], first, SPEC, false);
    assert.equal(fatalOf(stuck), undefined, fatalOf(stuck)?.message);
    assert.equal(sizeOf(stuck), '20Gi');
    assert.ok(!stuck.results.some((r) => r.reason === 'AutoGrown'));
    assert.match(
      stuck.conditions.find((c) => c.type === 'StorageResized')?.message ?? '',
      /^StorageClass standard does not allow volume expansion: Cluster orders-db stays at 20Gi, though its primary's volume is past spec\.storage\.growAtPercent and would grow by itself to 25Gi/,
    );
    assert.equal((statusOf(stuck)['storage'] as Obj)['lastAutoGrowth'], undefined);
  });
});

// Issue 26: `StorageResized=True Resized: volume data-payments-db-0 has 5Gi` on a brand-new Database.
describe('StorageResized says only what happened', () => {
  test('a new StatefulSet volume at the size asked: no StorageResized; once grown: Resized', () => {
    const xr = databaseXr({ engine: 'postgres', storageGB: 5 });
    const observed = asObserved(call(xr), (_k, obj) => healthyStatus(obj));
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-orders-db-0', namespace: 'team-a' },
      spec: { storageClassName: 'standard', resources: { requests: { storage: '5Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '5Gi' } },
    };
    const cls = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'standard' },
      allowVolumeExpansion: true,
    };
    const fresh = call(xr, observed, answered({ 'data-claim': [claim], 'storage-class': [cls] }));
    assert.equal(fatalOf(fresh), undefined, fatalOf(fresh)?.message);
    assert.equal(
      fresh.conditions.find((c) => c.type === 'StorageResized'),
      undefined,
      'nothing was resized',
    );
    assert.deepEqual(statusOf(fresh)['storage'], { requestedGB: 5, capacityGB: 5 }, 'the size is still reported');
  });
});
