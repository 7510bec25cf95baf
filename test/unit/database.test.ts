import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ready, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { newPassword } from '../../src/passwords.js';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  call,
  claimXr,
  inner,
  observedObjectStatus,
  CNPG_CRD_OBJECT,
  databaseXr,
  desiredOf,
  fatalOf,
  k8sSecret,
  NAMESPACE,
  type Required,
  secretData,
  statusOf,
  storeCredentials,
  withObjectStore,
  earlierVersionBackupVolume,
  earlierVersionBucket,
} from '../support/database.js';
import { Loop } from '../support/loop.js';
import { buildRequest, runWithRequirements } from '../../src/render.js';
import { runFunction } from '../../src/function.js';

const AWS = { placement: 'aws', aws: { region: 'eu-west-1' } } as const;
const PASSWORD = /^[A-Za-z0-9]{32}$/;
const cnpgInstalled = answered({ 'cnpg-crd': [CNPG_CRD_OBJECT] });

const forProvider = (rsp: RunFunctionResponse, key = 'rds-instance') =>
  (desiredOf(rsp, key)!['spec'] as Obj)['forProvider'] as Obj;
const specOf = (rsp: RunFunctionResponse, key: string) => desiredOf(rsp, key)!['spec'] as Obj;

/** Calls the function `n` times, each time observing what the previous call desired. */
function feedBack(xr: Obj, n: number, required: Required = {}): RunFunctionResponse[] {
  const out: RunFunctionResponse[] = [];
  let observed: Obj[] = [];
  for (let i = 0; i < n; i++) {
    const rsp = call(xr, observed, required);
    assert.equal(fatalOf(rsp), undefined, `call ${i}: ${fatalOf(rsp)?.message}`);
    out.push(rsp);
    observed = asObserved(rsp);
  }
  return out;
}

function assertRefused(rsp: RunFunctionResponse, field: string, ...also: RegExp[]): string {
  const fatal = fatalOf(rsp);
  assert.ok(fatal, `expected a Fatal result, got ${JSON.stringify(rsp.results)}`);
  assert.ok(fatal.message.includes(field), `the message names ${field}: ${fatal.message}`);
  for (const re of also) assert.match(fatal.message, re);
  assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), [], 'nothing in desired state');
  assert.equal(rsp.desired?.composite, undefined, 'no desired composite either');
  assert.equal(rsp.requirements, undefined);
  return fatal.message;
}

// The provider-upjet-aws connection Secret of the RDS instance, as Crossplane returns it.
const RDS_HOST = 'team-a-orders-db.abc123xyz.eu-west-1.rds.amazonaws.com';
function providerSecret(password = 'Zr8Kd02mQpL4vW9xT6bN1cY7', port = '5432', host = RDS_HOST): Obj {
  return k8sSecret('orders-db-rds', NAMESPACE, {
    username: 'app',
    password,
    address: host,
    endpoint: `${host}:${port}`,
    port,
  });
}
function rdsStatus(ready: boolean, extra: Obj = {}, host = RDS_HOST, port = 5432): Obj {
  return {
    atProvider: { address: host, port, status: ready ? 'available' : 'creating', ...extra },
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'Available' : 'Creating' }],
  };
}

describe('Database: generated passwords are stable', () => {
  const cases: Array<[string, Obj, Required]> = [
    ['postgres', { engine: 'postgres' }, {}],
    ['mysql', { engine: 'mysql' }, {}],
    ['postgres HA (CloudNativePG)', { engine: 'postgres', highAvailability: true }, cnpgInstalled],
    ['postgres HA, operator not answered yet', { engine: 'postgres', highAvailability: true }, {}],
    ['mysql, no backups, Delete', { engine: 'mysql', backup: { enabled: false }, deletionPolicy: 'Delete' }, {}],
  ];
  for (const [name, spec, required] of cases) {
    test(`${name}: 100 calls fed their own desired state keep one password`, () => {
      const calls = feedBack(databaseXr(spec), 100, required);
      const first = secretData(desiredOf(calls[0]!, 'credentials'))['password']!;
      assert.match(first, PASSWORD);
      for (const [i, rsp] of calls.entries()) {
        const creds = secretData(desiredOf(rsp, 'credentials'));
        const conn = secretData(desiredOf(rsp, 'connection'));
        assert.equal(creds['password'], first, `call ${i}: credentials password changed`);
        assert.equal(conn['password'], first, `call ${i}: connection password changed`);
        assert.ok(conn['uri']!.includes(`:${first}@`), `call ${i}: uri carries the password`);
        assert.equal(creds['username'], 'app');
      }
      if (spec['highAvailability'] && required['cnpg-crd']) {
        const cluster = specOf(calls[99]!, 'cnpg-cluster');
        const manifest = (cluster['forProvider'] as Obj)['manifest'] as Obj;
        assert.deepEqual(((manifest['spec'] as Obj)['bootstrap'] as Obj)['initdb'], {
          database: 'orders',
          owner: 'app',
          secret: { name: 'orders-db-credentials' },
        });
      }
    });
  }

  test('claims mode: 100 calls through provider-kubernetes Objects keep one password', () => {
    let observed: Obj[] = [];
    let first: string | undefined;
    for (let i = 0; i < 100; i++) {
      const rsp = call(claimXr({ highAvailability: true }), observed, cnpgInstalled);
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      const creds = secretData(inner(desiredOf(rsp, 'credentials')));
      const conn = secretData(inner(desiredOf(rsp, 'connection')));
      first ??= creds['password'];
      assert.match(first!, PASSWORD);
      assert.equal(creds['password'], first, `call ${i}`);
      assert.equal(conn['password'], first, `call ${i}`);
      observed = asObserved(rsp, (_, obj) => observedObjectStatus(obj));
    }
  });

  // Found on a real node (test/e2e-real/claims.test.ts): a claim deleted under Retain kept its volume but lost
  // its credentials Secret (the Object wrapping it deleted what it wrapped), so the next Database of that name
  // would have started the kept data with a password the data does not know.
  test('claims mode under Retain: the credentials outlive the claim (their Object orphans them), owned by the data claim', () => {
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-orders-db-0', namespace: NAMESPACE, uid: 'pvc-uid-1' },
    };
    for (const [policy, orphaned] of [
      ['Retain', true],
      ['Delete', false],
    ] as const) {
      const rsp = call(claimXr({ deletionPolicy: policy }), [], answered({ 'data-claim': [claim] }));
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      const object = desiredOf(rsp, 'credentials')!;
      const spec = object['spec'] as Obj;
      assert.equal(spec['deletionPolicy'] === 'Orphan', orphaned, `${policy}: ${JSON.stringify(spec)}`);
      assert.equal(
        (spec['managementPolicies'] as string[]).some((p) => p === '*' || p === 'Delete'),
        !orphaned,
      );
      const owners = ((inner(object)!['metadata'] as Obj)['ownerReferences'] ?? []) as Obj[];
      assert.deepEqual(
        owners.map((o) => `${o['kind']}/${o['name']}/${o['uid']}`),
        orphaned ? ['PersistentVolumeClaim/data-orders-db-0/pvc-uid-1'] : [],
        `${policy}: the kept Secret goes when its data does`,
      );
    }
  });

  test('claims mode: a Database created again on a kept volume reads the kept credentials back', () => {
    const first = call(claimXr({}), [], answered({ 'kept-credentials': [] }));
    assert.equal(fatalOf(first), undefined, fatalOf(first)?.message);
    assert.ok(first.requirements?.resources?.['kept-credentials'], 'a new claim Database asks for a kept Secret');
    const kept = k8sSecret('orders-db-credentials', NAMESPACE, {
      username: 'app',
      password: 'kept-password-of-the-data',
    });
    const again = call(claimXr({}), [], answered({ 'kept-credentials': [kept] }));
    assert.equal(secretData(inner(desiredOf(again, 'credentials')))['password'], 'kept-password-of-the-data');
  });

  test('the password stays through spec changes (size, storage, backups, deletion policy)', () => {
    const xr = databaseXr({ engine: 'postgres' });
    let rsp = call(xr);
    const pw = secretData(desiredOf(rsp, 'credentials'))['password'];
    for (const spec of [
      { size: 'large' },
      { storageGB: 50 },
      { backup: { enabled: false } },
      { deletionPolicy: 'Delete' },
      { version: '17', storageGB: 60 },
    ]) {
      rsp = call({ ...xr, spec }, asObserved(rsp));
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      assert.equal(secretData(desiredOf(rsp, 'credentials'))['password'], pw, JSON.stringify(spec));
      assert.equal(secretData(desiredOf(rsp, 'connection'))['password'], pw, JSON.stringify(spec));
    }
  });

  test('a lost credentials Secret is rebuilt from the connection Secret, not regenerated', () => {
    const xr = databaseXr({});
    const first = call(xr);
    const pw = secretData(desiredOf(first, 'credentials'))['password'];
    const withoutCreds = asObserved(first).filter((o) => (o['metadata'] as Obj)['name'] !== 'orders-db-credentials');
    const again = call(xr, withoutCreds);
    assert.equal(secretData(desiredOf(again, 'credentials'))['password'], pw);
  });

  test('the password is never written into the workload itself', () => {
    const rsp = call(databaseXr({ engine: 'mysql' }));
    const pw = secretData(desiredOf(rsp, 'credentials'))['password']!;
    for (const key of ['statefulset', 'service', 'headless']) {
      assert.equal(
        JSON.stringify(desiredOf(rsp, key)).includes(pw),
        false,
        `${key} must reference the Secret, not embed the password`,
      );
    }
    assert.equal(JSON.stringify(rsp.results).includes(pw), false);
    assert.equal(JSON.stringify(statusOf(rsp)).includes(pw), false);
  });

  test('two new Databases get different passwords; the generator looks uniformly random', () => {
    const a = secretData(desiredOf(call(databaseXr({}, { name: 'orders' })), 'credentials'))['password'];
    const b = secretData(desiredOf(call(databaseXr({}, { name: 'orders' })), 'credentials'))['password'];
    const c = secretData(desiredOf(call(databaseXr({}, { name: 'billing' })), 'credentials'))['password'];
    assert.notEqual(a, b, 'the same Database created twice from nothing gets a fresh password');
    assert.notEqual(a, c);
    const seen = new Set<string>();
    const counts = new Map<string, number>();
    for (let i = 0; i < 500; i++) {
      const p = newPassword();
      assert.match(p, PASSWORD);
      seen.add(p);
      for (const ch of p) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    assert.equal(seen.size, 500, 'no repeats');
    // 16000 characters over 62 symbols: about 258 each, σ ≈ 16. A biased or tiny alphabet falls far outside.
    assert.equal(counts.size, 62, 'every letter and digit occurs');
    for (const [ch, n] of counts) assert.ok(n > 160 && n < 360, `character ${ch} occurs ${n} times`);
  });
});

describe('Database on AWS: the connection Secret comes from the provider', () => {
  const xr = databaseXr(AWS);

  test('without the provider Secret answered there is no connection Secret, and the function asks for it', () => {
    const rsp = call(xr);
    assert.equal(fatalOf(rsp), undefined);
    assert.equal(desiredOf(rsp, 'connection'), undefined);
    assert.deepEqual(rsp.requirements?.resources?.['rds-connection'], {
      apiVersion: 'v1',
      kind: 'Secret',
      matchName: 'orders-db-rds',
      namespace: NAMESPACE,
    });
    assert.equal(
      (specOf(rsp, 'rds-instance')['writeConnectionSecretToRef'] as Obj)['name'],
      'orders-db-rds',
      'asks for the Secret the instance writes',
    );
    assert.equal(statusOf(rsp)['connectionSecret'], undefined);

    const empty = call(xr, [], answered({ 'rds-connection': [] }));
    assert.equal(desiredOf(empty, 'connection'), undefined, 'an empty answer: the provider has not written it yet');
    assert.equal(statusOf(empty)['connectionSecret'], undefined);
  });

  test('once answered, its values match the provider Secret', () => {
    const pw = 'Zr8Kd02mQpL4vW9xT6bN1cY7';
    const rsp = call(xr, [], answered({ 'rds-connection': [providerSecret(pw)] }));
    const data = secretData(desiredOf(rsp, 'connection'));
    assert.deepEqual(data, {
      host: RDS_HOST,
      port: '5432',
      dbname: 'orders',
      username: 'app',
      password: pw,
      uri: `postgresql://app:${pw}@${RDS_HOST}:5432/orders`,
      'jdbc-uri': `jdbc:postgresql://${RDS_HOST}:5432/orders`,
      // No read replicas: reads go to the primary.
      'ro-host': RDS_HOST,
      'ro-port': '5432',
      'ro-uri': `postgresql://app:${pw}@${RDS_HOST}:5432/orders`,
    });
    assert.equal((desiredOf(rsp, 'connection')!['metadata'] as Obj)['name'], 'orders-db-connection');
    assert.equal((desiredOf(rsp, 'connection')!['metadata'] as Obj)['namespace'], NAMESPACE);
    assert.equal(statusOf(rsp)['connectionSecret'], 'orders-db-connection');
  });

  test('the same through the requirement round trip, for mysql, with the address the instance reports', () => {
    const my = databaseXr({ ...AWS, engine: 'mysql' });
    const first = runFunction(buildRequest(my));
    const inst = asObserved(first).map((o) =>
      o['kind'] === 'Instance' ? { ...o, status: rdsStatus(true, {}, RDS_HOST, 3306) } : o,
    );
    const rsp = runWithRequirements((r) => runFunction(r), buildRequest(my, inst), [
      providerSecret('pw0rd', '3306'),
      k8sSecret('other', NAMESPACE, { password: 'nope' }),
    ]);
    const data = secretData(desiredOf(rsp, 'connection'));
    assert.equal(data['host'], RDS_HOST);
    assert.equal(data['port'], '3306');
    assert.equal(data['password'], 'pw0rd');
    assert.equal(data['uri'], `mysql://app:pw0rd@${RDS_HOST}:3306/orders`);
    assert.equal(data['jdbc-uri'], `jdbc:mysql://${RDS_HOST}:3306/orders`);
  });

  test('a provider password with URI-reserved characters is escaped in uri, verbatim in password', () => {
    const pw = 'a@b:c/d?e#f%g h';
    const data = secretData(
      desiredOf(call(xr, [], answered({ 'rds-connection': [providerSecret(pw)] })), 'connection'),
    );
    assert.equal(data['password'], pw);
    assert.equal(data['uri'], `postgresql://app:${encodeURIComponent(pw)}@${RDS_HOST}:5432/orders`);
    assert.equal(new URL(data['uri']!).password, encodeURIComponent(pw));
  });

  for (const [label, withAddress] of [
    ['the instance reports its address', true],
    ['the instance reports nothing (yet, or any more)', false],
  ] as const) {
    test(`later, with the answer empty and our Secret observed, it is kept with the same data (${label})`, () => {
      const pw = 'Zr8Kd02mQpL4vW9xT6bN1cY7';
      const first = call(xr, [], answered({ 'rds-connection': [providerSecret(pw)] }));
      const before = desiredOf(first, 'connection')!;
      const observed = asObserved(first, (key) =>
        key === 'rds-instance' && withAddress ? rdsStatus(true) : undefined,
      );
      for (const required of [answered({ 'rds-connection': [] }), {} as Required]) {
        const later = call(xr, observed, required);
        assert.equal(fatalOf(later), undefined, fatalOf(later)?.message);
        const kept = desiredOf(later, 'connection');
        assert.ok(kept, 'the connection Secret stays desired');
        assert.deepEqual(secretData(kept), secretData(before));
        assert.equal((kept['metadata'] as Obj)['name'], 'orders-db-connection');
        assert.equal(kept['type'], before['type']);
        assert.equal(statusOf(later)['connectionSecret'], 'orders-db-connection');
      }
    });
  }
});

describe('Database: refusals are Fatal, name the field, and compose nothing', () => {
  test('storageGB shrink below the StatefulSet volume (20Gi → 10)', () => {
    const grown = call(databaseXr({ storageGB: 20 }));
    const sts = asObserved(grown).find((o) => o['kind'] === 'StatefulSet')!;
    const templates = (sts['spec'] as Obj)['volumeClaimTemplates'] as Obj[];
    assert.equal((((templates[0]!['spec'] as Obj)['resources'] as Obj)['requests'] as Obj)['storage'], '20Gi');
    const msg = assertRefused(
      call(databaseXr({ storageGB: 10 }), asObserved(grown)),
      'spec.storageGB',
      /never shrink/,
      /20/,
    );
    assert.match(msg, /\b10\b/);
  });

  test('storageGB shrink below the RDS allocatedStorage (50 → 40), from spec or from what AWS reports', () => {
    const fifty = call(databaseXr({ ...AWS, storageGB: 50 }));
    assertRefused(
      call(databaseXr({ ...AWS, storageGB: 40 }), asObserved(fifty)),
      'spec.storageGB',
      /never shrink/,
      /50/,
    );
    // RDS grew it (autoscaling, or by hand): the spec says 40, AWS says 50. 45 is no shrink of what was asked, and
    // the grown 50 is what is composed, so RDS is never asked to shrink.
    const forty = call(databaseXr({ ...AWS, storageGB: 40 }));
    const observed = asObserved(forty, (key) =>
      key === 'rds-instance' ? rdsStatus(true, { allocatedStorage: 50 }) : undefined,
    );
    const grown = call(databaseXr({ ...AWS, storageGB: 45 }), observed);
    assert.equal(fatalOf(grown), undefined, fatalOf(grown)?.message);
    assert.equal(forProvider(grown)['allocatedStorage'], 50);
    assertRefused(call(databaseXr({ ...AWS, storageGB: 30 }), observed), 'spec.storageGB', /never shrink/, /40/);
  });

  test('storageGB shrink of a CloudNativePG cluster', () => {
    const ha = call(databaseXr({ highAvailability: true, storageGB: 30 }), [], cnpgInstalled);
    assert.ok(desiredOf(ha, 'cnpg-cluster'));
    assertRefused(
      call(databaseXr({ highAvailability: true, storageGB: 25 }), asObserved(ha), cnpgInstalled),
      'spec.storageGB',
      /never shrink/,
    );
  });

  test('claims mode: storageGB shrink of a StatefulSet and of an RDS instance', () => {
    const sts = call(claimXr({ storageGB: 20 }));
    assertRefused(
      call(
        claimXr({ storageGB: 10 }),
        asObserved(sts, (_, o) => observedObjectStatus(o)),
      ),
      'spec.storageGB',
      /never shrink/,
    );
    const rds = call(claimXr({ ...AWS, storageGB: 50 }));
    assertRefused(call(claimXr({ ...AWS, storageGB: 40 }), asObserved(rds)), 'spec.storageGB', /never shrink/);
  });

  // BUG (src/blueprints/database/cluster.ts observedCnpgGB + src/claims.ts unwrap): in claims mode the
  // blueprint sees the unwrapped CloudNativePG Cluster, but observedCnpgGB still reads
  // spec.forProvider.manifest.spec.storage.size (the Object's path), finds nothing, and the shrink is
  // composed instead of refused.
  test('claims mode: storageGB shrink of a CloudNativePG cluster', () => {
    const ha = call(claimXr({ highAvailability: true, storageGB: 30 }), [], cnpgInstalled);
    assert.equal(inner(desiredOf(ha, 'cnpg-cluster'))?.['kind'], 'Cluster');
    const observed = asObserved(ha, (_, o) => observedObjectStatus(o));
    assertRefused(
      call(claimXr({ highAvailability: true, storageGB: 25 }), observed, cnpgInstalled),
      'spec.storageGB',
      /never shrink/,
    );
  });

  // The HA dump volume of an earlier version is sized by spec.storageGB and counted as observed
  // storage: with the operator missing (so no Cluster) a shrink is refused, not composed as a smaller
  // PersistentVolumeClaim request the API server would reject.
  test('storageGB shrink of an earlier version’s HA backup volume while CloudNativePG is not installed', () => {
    const missing = answered({ 'cnpg-crd': [] });
    const ha = call(databaseXr({ highAvailability: true, storageGB: 20 }), [earlierVersionBackupVolume(20)], missing);
    assert.ok(desiredOf(ha, 'backup-volume'));
    assert.equal(
      desiredOf(call(databaseXr({ highAvailability: true, storageGB: 20 }), [], missing), 'backup-volume'),
      undefined,
      'no new dump volume: backups go to the object store',
    );
    assertRefused(
      call(databaseXr({ highAvailability: true, storageGB: 10 }), asObserved(ha), missing),
      'spec.storageGB',
      /never shrink/,
    );
  });

  test('engine change', () => {
    const pg = call(databaseXr({ engine: 'postgres' }));
    assertRefused(
      call(databaseXr({ engine: 'mysql' }), asObserved(pg)),
      'spec.engine',
      /cannot be changed/,
      /postgres/,
    );
    const rds = call(databaseXr({ ...AWS, engine: 'mysql' }));
    assertRefused(
      call(databaseXr({ ...AWS, engine: 'postgres' }), asObserved(rds)),
      'spec.engine',
      /cannot be changed/,
    );
  });

  test('placement change: an observed rds-instance and placement cluster, and the other way round', () => {
    const rds = call(databaseXr(AWS));
    assertRefused(
      call(databaseXr({ placement: 'cluster' }), asObserved(rds)),
      'spec.placement',
      /aws/,
      /cannot be changed/,
    );
    const onlyInstance = asObserved(rds).filter((o) => o['kind'] === 'Instance');
    assertRefused(call(databaseXr({}), onlyInstance), 'spec.placement');
    const sts = call(databaseXr({}));
    assertRefused(call(databaseXr(AWS), asObserved(sts)), 'spec.placement', /cluster/);
  });

  test('placement aws without a region', () => {
    for (const spec of [
      { placement: 'aws' },
      { placement: 'aws', aws: {} },
      { placement: 'aws', aws: { instanceClass: 'db.t4g.large' } },
    ]) {
      assertRefused(call(databaseXr(spec)), 'spec.aws.region', /required/);
    }
    assertRefused(call(databaseXr({ placement: 'aws', aws: { region: 'Ireland' } })), 'spec.aws.region');
  });

  test('aws with storageGB below 20', () => {
    const msg = assertRefused(call(databaseXr({ ...AWS, storageGB: 19 })), 'spec.storageGB', /at least 20/);
    assert.match(msg, /19/);
    assert.equal(fatalOf(call(databaseXr({ ...AWS, storageGB: 20 }))), undefined);
  });

  test('a version the engine does not support, naming the allowed ones', () => {
    for (const spec of [
      { version: '13' },
      { engine: 'mysql', version: '17' },
      { engine: 'postgres', version: '8.4' },
      { ...AWS, version: '18' },
    ]) {
      assertRefused(call(databaseXr(spec)), 'spec.version', /14, 15, 16, 17/, /8\.0, 8\.4/);
    }
    assertRefused(call(databaseXr({ version: 'latest' })), 'spec.version');
    assertRefused(call(databaseXr({ engine: 'oracle' })), 'spec.engine', /"postgres", "mysql"/);
    assertRefused(call(databaseXr({ placement: 'gcp' })), 'spec.placement', /"cluster", "aws"/);
    assertRefused(call(databaseXr({ deletionPolicy: 'Orphan' })), 'spec.deletionPolicy', /"Retain", "Delete"/);
  });

  test('mysql with highAvailability in the cluster (fine on AWS: Multi-AZ)', () => {
    assertRefused(call(databaseXr({ engine: 'mysql', highAvailability: true })), 'spec.highAvailability', /postgres/);
    const rds = call(databaseXr({ ...AWS, engine: 'mysql', highAvailability: true }));
    assert.equal(fatalOf(rds), undefined);
    assert.equal(forProvider(rds)['multiAz'], true);
  });

  test('turning highAvailability on for an existing StatefulSet database, and off for a CloudNativePG one', () => {
    const single = call(databaseXr({}));
    assertRefused(
      call(databaseXr({ highAvailability: true }), asObserved(single), cnpgInstalled),
      'spec.highAvailability',
      /StatefulSet/,
    );
    const ha = call(databaseXr({ highAvailability: true }), [], cnpgInstalled);
    assertRefused(
      call(databaseXr({ highAvailability: false }), asObserved(ha)),
      'spec.highAvailability',
      /CloudNativePG/,
    );
  });

  test('a refusal is an InvalidSpec Fatal event; the next valid call composes normally', () => {
    const rsp = call(databaseXr({ ...AWS, storageGB: 5 }));
    const fatal = fatalOf(rsp)!;
    assert.equal(fatal.reason, 'InvalidSpec');
    assert.match(fatal.message, /^invalid spec: /);
    assert.deepEqual(rsp.conditions, []);
    assert.equal(fatalOf(call(databaseXr(AWS))), undefined);
  });
});

describe('Database on AWS: safe defaults', () => {
  test('Retain (the default): encrypted, private, protected, final snapshot, no Delete in management policies', () => {
    const rsp = call(databaseXr({ ...AWS, backup: { retentionDays: 12 } }), [earlierVersionBucket()]);
    const fp = forProvider(rsp);
    assert.equal(fp['storageEncrypted'], true);
    assert.equal(fp['publiclyAccessible'], false);
    assert.equal(fp['deletionProtection'], true);
    assert.equal(fp['skipFinalSnapshot'], false);
    assert.equal(typeof fp['finalSnapshotIdentifier'], 'string');
    assert.match(String(fp['finalSnapshotIdentifier']), /^[a-z][a-z0-9-]{0,254}$/);
    assert.doesNotMatch(String(fp['finalSnapshotIdentifier']), /--|-$/);
    assert.equal(fp['deleteAutomatedBackups'], false);
    assert.equal(fp['backupRetentionPeriod'], 12);
    assert.equal(fp['multiAz'], false);
    assert.equal(fp['autoGeneratePassword'], true, 'RDS uses the provider’s own password generation');
    assert.equal(fp['password'], undefined);
    for (const [key, res] of Object.entries(rsp.desired!.resources)) {
      const policies = ((res.resource as Obj)['spec'] as Obj)['managementPolicies'] as string[];
      assert.ok(Array.isArray(policies), `${key} has management policies`);
      assert.ok(!policies.includes('Delete') && !policies.includes('*'), `${key}: ${policies.join(',')}`);
      assert.ok(policies.includes('Create') && policies.includes('Update') && policies.includes('Observe'), key);
    }
    assert.equal((specOf(rsp, 'backup-bucket')['forProvider'] as Obj)['forceDestroy'], false);
  });

  test('Delete: everything may go, and says so', () => {
    const rsp = call(databaseXr({ ...AWS, deletionPolicy: 'Delete', highAvailability: true }));
    const fp = forProvider(rsp);
    assert.equal(fp['storageEncrypted'], true);
    assert.equal(fp['publiclyAccessible'], false);
    assert.equal(fp['deletionProtection'], false);
    // A last copy anyway (spec.backup.finalSnapshot defaults to true): RDS's final snapshot.
    assert.equal(fp['skipFinalSnapshot'], false);
    assert.match(String(fp['finalSnapshotIdentifier']), /^team-a-orders-db-final-[0-9a-f]{6}$/);
    assert.equal(fp['deleteAutomatedBackups'], true);
    assert.equal(fp['multiAz'], true);
    assert.equal(fp['backupRetentionPeriod'], 7);
    for (const res of Object.values(rsp.desired!.resources))
      assert.deepEqual(((res.resource as Obj)['spec'] as Obj)['managementPolicies'], ['*']);
  });

  test('an earlier version’s bucket stays private, versioned, encrypted and expiring; status names RDS backups, not it', () => {
    const rsp = call(databaseXr({ ...AWS, backup: { retentionDays: 9 } }), [earlierVersionBucket()]);
    assert.equal(
      (specOf(rsp, 'backup-bucket-versioning')['forProvider'] as Obj)['versioningConfiguration'] instanceof Object,
      true,
    );
    assert.deepEqual((specOf(rsp, 'backup-bucket-versioning')['forProvider'] as Obj)['versioningConfiguration'], {
      status: 'Enabled',
    });
    const pab = specOf(rsp, 'backup-bucket-public-access-block')['forProvider'] as Obj;
    for (const k of ['blockPublicAcls', 'blockPublicPolicy', 'ignorePublicAcls', 'restrictPublicBuckets'])
      assert.equal(pab[k], true, k);
    assert.match(JSON.stringify(specOf(rsp, 'backup-bucket-encryption')), /"sseAlgorithm":"AES256"/);
    const rule = ((specOf(rsp, 'backup-bucket-lifecycle')['forProvider'] as Obj)['rule'] as Obj[])[0]!;
    assert.deepEqual(rule['expiration'], [{ days: 9 }]);
    const bucket = desiredOf(rsp, 'backup-bucket')!;
    const name = String((bucket['metadata'] as Obj)['name']);
    assert.match(name, /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/);
    assert.equal(statusOf(rsp)['backup'], undefined, 'nothing holds a backup yet: no location is named');
    const restorable = '2026-12-02T01:05:00Z';
    const instance = asObserved(rsp).find((o) => o['kind'] === 'Instance')!;
    instance['status'] = { atProvider: { latestRestorableTime: restorable } };
    const later = call(databaseXr({ ...AWS, backup: { retentionDays: 9 } }), [earlierVersionBucket(), instance]);
    assert.deepEqual(statusOf(later)['backup'], {
      latestRestorableTime: restorable,
      location: 'rds-automated-backups:team-a-orders-db',
    });
    const health = later.conditions.find((c) => c.type === 'BackupHealthy')!;
    assert.equal(health.reason, 'AutomatedBackups');
    assert.match(health.message ?? '', /kept 9 days; restorable to 2026-12-02T01:05:00Z/);
  });

  test('multiAz follows highAvailability; instanceClass overrides size', () => {
    assert.equal(forProvider(call(databaseXr({ ...AWS, highAvailability: true })))['multiAz'], true);
    assert.equal(forProvider(call(databaseXr({ ...AWS, size: 'large' })))['instanceClass'], 'db.r7g.xlarge');
    assert.equal(
      forProvider(
        call(databaseXr({ ...AWS, size: 'large', aws: { region: 'eu-west-1', instanceClass: 'db.t4g.micro' } })),
      )['instanceClass'],
      'db.t4g.micro',
    );
  });

  test('an earlier version’s bucket outlives backup.enabled=false; no bucket is created any more', () => {
    const withBucket = call(databaseXr(AWS), [earlierVersionBucket()]);
    const off = call(databaseXr({ ...AWS, backup: { enabled: false } }), asObserved(withBucket));
    assert.equal(fatalOf(off), undefined);
    assert.ok(desiredOf(off, 'backup-bucket'));
    for (const backup of [{}, { enabled: false }]) {
      const fresh = call(databaseXr({ ...AWS, backup }));
      assert.equal(desiredOf(fresh, 'backup-bucket'), undefined, 'RDS keeps the backups itself');
    }
  });
});

describe('Database in the cluster: Retain keeps the volumes', () => {
  test('Retain: the StatefulSet retains its claims; HA objects are orphaned, not deleted', () => {
    const sts = call(databaseXr({}));
    assert.deepEqual(specOf(sts, 'statefulset')['persistentVolumeClaimRetentionPolicy'], {
      whenDeleted: 'Retain',
      whenScaled: 'Retain',
    });
    const ha = call(databaseXr({ highAvailability: true }), [earlierVersionBackupVolume(20)], cnpgInstalled);
    for (const key of ['cnpg-cluster', 'backup-volume']) {
      const policies = specOf(ha, key)['managementPolicies'] as string[];
      assert.ok(!policies.includes('Delete') && !policies.includes('*'), `${key}: ${policies.join(',')}`);
    }
    const del = call(databaseXr({ highAvailability: true, deletionPolicy: 'Delete' }), [], cnpgInstalled);
    assert.deepEqual(specOf(del, 'cnpg-cluster')['managementPolicies'], ['*']);
  });

  test('HA without the operator says so clearly', () => {
    const rsp = call(databaseXr({ highAvailability: true }), [], answered({ 'cnpg-crd': [] }));
    assert.equal(fatalOf(rsp), undefined);
    assert.equal(desiredOf(rsp, 'cnpg-cluster'), undefined);
    assert.match(String(statusOf(rsp)['message']), /CloudNativePG is not installed/);
    assert.equal(rsp.conditions[0]!.reason, 'OperatorMissing');
    assert.ok(rsp.results.some((r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'OperatorMissing'));
  });
});

/** A Loop whose calls answer the function's requirements, as Crossplane does within one reconcile. */
class DbLoop extends Loop {
  available: Obj[] = [storeCredentials()];
  override call(): RunFunctionResponse {
    const rsp = runWithRequirements(
      (r) => runFunction(r),
      buildRequest(this.xr, [...this.observed.values()]),
      this.available,
    );
    this.last = rsp;
    return rsp;
  }
  setStatus(key: string, status: Obj): void {
    const obj = this.observed.get(key);
    if (!obj) throw new Error(`no observed ${key}`);
    obj['status'] = status;
  }
  /** The StatefulSet controller has `ready` pods of the current spec. */
  stsReady(ready = 1): void {
    const generation = Number((this.observed.get('statefulset')!['metadata'] as Obj)['generation'] ?? 1);
    this.setStatus('statefulset', {
      observedGeneration: generation,
      replicas: 1,
      readyReplicas: ready,
      updatedReplicas: 1,
      currentRevision: 'r1',
      updateRevision: 'r1',
    });
  }
  phase(): unknown {
    return this.status()['phase'];
  }
}

describe('Database status: phase follows observed state and the previous status', () => {
  test('in the cluster: Provisioning → Ready → Degraded → Ready → Updating → Ready', () => {
    const loop = new DbLoop(databaseXr({}));
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Provisioning');
    assert.equal(loop.status()['ready'], false);
    assert.equal(loop.status()['message'], 'StatefulSet orders-db: not created yet');

    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Provisioning', 'still provisioning while the first rollout runs');
    assert.match(String(loop.status()['message']), /^StatefulSet orders-db: rollout pending/);

    loop.stsReady();
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Ready');
    assert.equal(loop.status()['ready'], true);
    assert.equal(
      loop.status()['message'],
      'postgres 17 accepts connections at orders-db.team-a.svc.cluster.local:5432',
    );
    // Issue 26: status.ready turns on one call, READY and the condition on the next (src/function.ts says why).
    assert.equal(loop.last!.conditions.length, 0);
    loop.apply(loop.call());
    assert.equal(loop.last!.conditions[0]!.reason, 'Available');
    assert.equal(loop.last!.desired!.composite!.ready, Ready.READY_TRUE);

    loop.stsReady(0);
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Degraded', 'was ready, now a pod is down with no change in flight');
    assert.equal(loop.status()['message'], 'StatefulSet orders-db: 0/1 replicas ready');
    assert.equal(loop.last!.desired!.composite!.ready, Ready.READY_TRUE, 'READY as the XR shows it, for one call');
    loop.apply(loop.call());
    assert.equal(loop.last!.desired!.composite!.ready, Ready.READY_FALSE);
    assert.equal(loop.last!.conditions[0]!.reason, 'Degraded');
    assert.ok(
      loop.last!.results.some((r) => r.severity === Severity.SEVERITY_NORMAL && r.reason === 'Degraded'),
      'an event on the change',
    );

    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Degraded', 'stays degraded, not back to Provisioning');
    assert.equal(loop.last!.results.length, 0, 'no repeated event');

    loop.stsReady();
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Ready');

    // A change the StatefulSet controller has not caught up with yet.
    loop.xr = { ...loop.xr, spec: withObjectStore({ size: 'medium' }) };
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Ready', 'the change is only applied at the end of this call');
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Updating');
    assert.match(String(loop.status()['message']), /rollout pending/);
    loop.apply(loop.call());
    assert.equal(loop.last!.conditions[0]!.reason, 'Updating');

    loop.setStatus('statefulset', {
      observedGeneration: 2,
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 0,
      currentRevision: 'r1',
      updateRevision: 'r2',
    });
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Updating', 'pods being replaced');

    loop.setStatus('statefulset', {
      observedGeneration: 2,
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 1,
      currentRevision: 'r2',
      updateRevision: 'r2',
    });
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Ready');
  });

  test('on AWS: Provisioning until the instance and our Secret exist, then Ready, Updating while AWS modifies, Degraded when it fails', () => {
    const loop = new DbLoop(databaseXr(AWS));
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Provisioning');
    assert.equal(loop.status()['message'], 'RDS instance team-a-orders-db: not created yet');

    loop.setStatus('rds-instance', {
      atProvider: { status: 'creating' },
      conditions: [{ type: 'Ready', status: 'False', reason: 'Creating' }],
    });
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Provisioning');
    assert.match(
      String(loop.status()['message']),
      /RDS instance team-a-orders-db: being created \(AWS status: creating\)/,
    );

    for (const key of loop.observed.keys())
      if (key !== 'rds-instance')
        loop.setStatus(key, { conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }] });
    loop.setStatus('rds-instance', rdsStatus(true));
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Provisioning');
    assert.match(String(loop.status()['message']), /waiting for provider-upjet-aws to write the connection Secret/);
    assert.equal(loop.status()['host'], RDS_HOST);
    assert.equal(loop.status()['endpoint'], `${RDS_HOST}:5432`);

    loop.available = [providerSecret()];
    loop.apply(loop.call());
    assert.equal(loop.status()['connectionSecret'], 'orders-db-connection');
    loop.apply(loop.call()); // the connection Secret is now observed, so it is ready
    assert.equal(loop.phase(), 'Ready');
    assert.equal(loop.status()['ready'], true);
    assert.equal(loop.status()['message'], `postgres 17 accepts connections at ${RDS_HOST}:5432`);

    loop.setStatus('rds-instance', {
      ...rdsStatus(false),
      atProvider: { address: RDS_HOST, port: 5432, status: 'modifying' },
    });
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Updating');
    assert.match(String(loop.status()['message']), /not ready \(AWS status: modifying\)/);

    loop.setStatus('rds-instance', {
      ...rdsStatus(false),
      atProvider: { address: RDS_HOST, port: 5432, status: 'storage-full' },
    });
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Degraded');
    assert.match(String(loop.status()['message']), /storage-full/);

    loop.setStatus('rds-instance', rdsStatus(true));
    loop.apply(loop.call());
    assert.equal(loop.phase(), 'Ready');
  });

  test('a previous status is read, not invented: a fresh XR with phase Ready that is not ready is Degraded', () => {
    const rsp = call(databaseXr({}, { status: { phase: 'Ready' } }));
    assert.equal(statusOf(rsp)['phase'], 'Degraded');
    const prov = call(databaseXr({}, { status: { phase: 'Provisioning' } }));
    assert.equal(statusOf(prov)['phase'], 'Provisioning');
  });

  test('live AWS facts already in the status are kept, beside where the instance lives', () => {
    const aws = { dbInstanceStatus: 'available', engineVersion: '17.2' };
    const rsp = call(databaseXr(AWS, { status: { phase: 'Ready', aws } }));
    assert.deepEqual(statusOf(rsp)['aws'], { ...aws, region: 'eu-west-1', providerConfigName: 'default' });
  });

  test('every desired resource carries a readiness verdict; growing a StatefulSet volume leaves its claim templates as they are', () => {
    const first = call(databaseXr({ storageGB: 20 }));
    for (const r of Object.values(first.desired!.resources)) assert.notEqual(r.ready, Ready.READY_UNSPECIFIED);
    // (The claim itself grows: test/unit/day2.test.ts.)
    const grown = call(databaseXr({ storageGB: 30 }), asObserved(first));
    assert.equal(fatalOf(grown), undefined);
    const templates = specOf(grown, 'statefulset')['volumeClaimTemplates'];
    assert.deepEqual(
      templates,
      (asObserved(first).find((o) => o['kind'] === 'StatefulSet')!['spec'] as Obj)['volumeClaimTemplates'],
      'claim templates are immutable',
    );
  });
});
