// A store made for one Database's backups (spec.backup.provision, or the
// platform's provision in the Input): the S3 bucket, its settings and the IAM
// user, policy and access key it composes, each validated against the real
// provider-upjet-aws CRDs; which store wins (spec objectStore, spec
// provision, the platform's, nothing) and status.backup.objectStore's
// source; Retain and Delete; the waits until bucket, key and Secret are
// there; and that nothing of it is ever dropped once made.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type RunFunctionResponse, Status } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
import { runFunction } from '../../src/function.js';
import { bucketNameFor, expiryDays, STORE_KEYS } from '../../src/blueprints/lifecycle/object-store.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { guardNothingLost } from '../../src/safety.js';
import {
  answered,
  asObserved,
  CNPG_CRD_OBJECT,
  databaseXr,
  desiredOf,
  fatalOf,
  k8sSecret,
  NAMESPACE,
  type Required,
  statusOf,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';
import { validateObject } from '../support/schemas.js';

const clock = new Date('2026-12-02T03:05:00Z');
const restore = setClock(() => clock);
after(restore);

const PROVISION = { aws: { region: 'eu-west-1', providerConfigName: 'backups' } };
const PLATFORM_STORE = {
  bucket: 'platform-backups',
  region: 'eu-central-1',
  credentialsSecretRef: { name: 'platform-store' },
};
const OWN_STORE = { bucket: 'team-a-own', region: 'us-east-2', credentialsSecretRef: { name: 'own-store' } };
const STORE_MRS = Object.values(STORE_KEYS);

const input = (backup: Obj): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  defaults: { database: { backup } },
});
function callWith(step: Obj | undefined, xr: Obj, observed: Obj[] = [], required: Required = {}): RunFunctionResponse {
  return runFunction(buildRequest(xr, observed, [], step, required));
}
/** The two-line Database, with what else a case needs; it has served since November. */
function db(spec: Obj = {}, opts: { status?: Obj; uid?: string; name?: string; namespace?: string } = {}): Obj {
  const xr = databaseXr({ engine: 'postgres', storageGB: 20, ...spec }, { bare: true, ...opts });
  (xr['metadata'] as Obj)['creationTimestamp'] = '2026-11-01T00:00:00Z';
  return xr;
}
const specOf = (rsp: RunFunctionResponse, key: string) => desiredOf(rsp, key)?.['spec'] as Obj;
const forProvider = (rsp: RunFunctionResponse, key: string) => specOf(rsp, key)['forProvider'] as Obj;
const condition = (rsp: RunFunctionResponse, type: string) => rsp.conditions.find((c) => c.type === type);
const storeOf = (rsp: RunFunctionResponse) =>
  ((statusOf(rsp)['backup'] ?? {}) as Obj)['objectStore'] as Obj | undefined;
const keys = (rsp: RunFunctionResponse) => Object.keys(rsp.desired?.resources ?? {});
const readyMr = { conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }] };
const notReadyMr = { conditions: [{ type: 'Ready', status: 'False', reason: 'Creating' }] };

/** The access key's connection Secret as provider-upjet-aws writes it (a stand-in's values). */
function keySecret(name: string): Obj {
  return k8sSecret(name, NAMESPACE, {
    username: 'AKIASTANDIN0000001',
    password: 'stand-in-secret-0123456789',
    'attribute.secret': 'stand-in-secret-0123456789',
  });
}

/**
 * The observed state after `rsp`: everything healthy except the store's
 * managed resources, which get `store(key)` (no status: not ready yet).
 */
function observe(rsp: RunFunctionResponse, store: (key: string) => Obj | undefined = () => undefined): Obj[] {
  const out = asObserved(rsp, (key, obj) =>
    (STORE_MRS as string[]).includes(key) ? store(key) : key.startsWith('scheduled-') ? undefined : healthyStatus(obj),
  );
  for (const o of out) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
  return out;
}

describe('a store made for a Database: what it composes', () => {
  const rsp = callWith(undefined, db({ backup: { provision: PROVISION } }));

  test('nine managed resources of provider-upjet-aws, each valid against its real CRD, in the namespace', () => {
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    for (const key of STORE_MRS) {
      const obj = desiredOf(rsp, key);
      assert.ok(obj, `${key} is composed`);
      assert.match(String(obj['apiVersion']), /^(s3|iam)\.aws\.m\.upbound\.io\/v1beta1$/);
      assert.equal((obj['metadata'] as Obj)['namespace'], NAMESPACE);
      assert.deepEqual(validateObject(obj), [], `${key} validates`);
      assert.deepEqual(specOf(rsp, key)['providerConfigRef'], { kind: 'ClusterProviderConfig', name: 'backups' });
    }
    assert.deepEqual(
      STORE_MRS.map((k) => desiredOf(rsp, k)!['kind']),
      [
        'Bucket',
        'BucketVersioning',
        'BucketPublicAccessBlock',
        'BucketServerSideEncryptionConfiguration',
        'BucketLifecycleConfiguration',
        'User',
        'Policy',
        'UserPolicyAttachment',
        'AccessKey',
      ],
    );
  });

  test('the bucket: a valid S3 name said as its external name, in the asked region, never force-destroyed', () => {
    const bucket = desiredOf(rsp, STORE_KEYS.bucket)!;
    const name = String((bucket['metadata'] as Obj)['name']);
    assert.match(name, /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/);
    assert.ok(name.startsWith('team-a-orders-backups-'), name);
    assert.equal(((bucket['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/external-name'], name);
    assert.equal(forProvider(rsp, STORE_KEYS.bucket)['region'], 'eu-west-1');
    assert.equal(forProvider(rsp, STORE_KEYS.bucket)['forceDestroy'], false);
  });

  test('versioning on, every public-access block on, AES256 by default', () => {
    assert.deepEqual(forProvider(rsp, STORE_KEYS.versioning)['versioningConfiguration'], { status: 'Enabled' });
    const block = forProvider(rsp, STORE_KEYS.publicAccessBlock);
    for (const f of ['blockPublicAcls', 'blockPublicPolicy', 'ignorePublicAcls', 'restrictPublicBuckets'])
      assert.equal(block[f], true, f);
    const rule = (forProvider(rsp, STORE_KEYS.encryption)['rule'] as Obj[])[0]!;
    assert.equal((rule['applyServerSideEncryptionByDefault'] as Obj)['sseAlgorithm'], 'AES256');
    const bucket = String((desiredOf(rsp, STORE_KEYS.bucket)!['metadata'] as Obj)['name']);
    for (const k of [STORE_KEYS.versioning, STORE_KEYS.publicAccessBlock, STORE_KEYS.encryption, STORE_KEYS.lifecycle])
      assert.deepEqual(forProvider(rsp, k)['bucketRef'], { name: bucket }, k);
  });

  test('the lifecycle expires objects and noncurrent versions, never sooner than retentionDays + 1', () => {
    const rule = (forProvider(rsp, STORE_KEYS.lifecycle)['rule'] as Obj[])[0]!;
    const days = ((rule['expiration'] as Obj[])[0]!['days'] as number) ?? 0;
    const noncurrent = (rule['noncurrentVersionExpiration'] as Obj[])[0]!['noncurrentDays'] as number;
    // Built-in retention 7, a daily schedule: 7 + 1 + the one-day gap.
    assert.equal(days, 9);
    assert.equal(noncurrent, 9);
    assert.equal(rule['status'], 'Enabled');
    // A weekly schedule: the newest backup is a week old before the next one; it must not expire first.
    assert.equal(expiryDays({ backup: { schedule: '0 3 * * 0', retentionDays: 3 } } as never), 3 + 1 + 7);
    assert.equal(expiryDays({ backup: { schedule: '0 3 1 * *', retentionDays: 35 } } as never), 35 + 1 + 31);
    for (const retentionDays of [1, 7, 14, 35])
      assert.ok(expiryDays({ backup: { schedule: '*/15 * * * *', retentionDays } } as never) >= retentionDays + 1);
  });

  test('the IAM policy allows that bucket only: listing it, and objects in the Database folder', () => {
    const bucket = String((desiredOf(rsp, STORE_KEYS.bucket)!['metadata'] as Obj)['name']);
    const doc = JSON.parse(String(forProvider(rsp, STORE_KEYS.policy)['policy'])) as {
      Statement: Array<{ Effect: string; Action: string[]; Resource: string[]; Condition?: Obj }>;
    };
    const resources = doc.Statement.flatMap((s) => s.Resource);
    assert.deepEqual(resources, [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/orders/*`]);
    assert.ok(doc.Statement.every((s) => s.Effect === 'Allow'));
    const actions = doc.Statement.flatMap((s) => s.Action).sort();
    assert.deepEqual(actions, [
      's3:AbortMultipartUpload',
      's3:DeleteObject',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
    ]);
    assert.deepEqual(doc.Statement[0]!.Condition, { StringLikeIfExists: { 's3:prefix': ['orders/*'] } });
  });

  test('user, attachment and access key reference each other; the key writes its Secret in the namespace', () => {
    const user = String((desiredOf(rsp, STORE_KEYS.user)!['metadata'] as Obj)['name']);
    const policy = String((desiredOf(rsp, STORE_KEYS.policy)!['metadata'] as Obj)['name']);
    assert.deepEqual(forProvider(rsp, STORE_KEYS.attachment), {
      userRef: { name: user },
      policyArnRef: { name: policy },
    });
    assert.deepEqual(forProvider(rsp, STORE_KEYS.accessKey), { userRef: { name: user } });
    assert.deepEqual(specOf(rsp, STORE_KEYS.accessKey)['writeConnectionSecretToRef'], {
      name: 'orders-db-backup-store-key',
    });
  });

  test('under Retain (the default) nothing of it may be deleted; under Delete all of it, the bucket only when empty', () => {
    for (const key of STORE_MRS)
      assert.deepEqual(specOf(rsp, key)['managementPolicies'], ['Observe', 'Create', 'Update', 'LateInitialize'], key);
    const del = callWith(undefined, db({ deletionPolicy: 'Delete', backup: { provision: PROVISION } }));
    for (const key of STORE_MRS) assert.deepEqual(specOf(del, key)['managementPolicies'], ['*'], key);
    assert.equal(forProvider(del, STORE_KEYS.bucket)['forceDestroy'], false);
  });

  test('the bucket name: stable, unique per Database, valid for any namespace and name, read back once made', () => {
    const owner = (name: string, namespace: string, uid: string) => ({ kind: 'Database', name, namespace, uid });
    const a = bucketNameFor(owner('orders', 'team-a', 'uid-1'));
    assert.equal(a, bucketNameFor(owner('orders', 'team-a', 'uid-1')));
    assert.notEqual(a, bucketNameFor(owner('orders', 'team-a', 'uid-2')), 'made again after a Retain: a new bucket');
    assert.notEqual(a, bucketNameFor(owner('orders', 'team-b', 'uid-1')));
    const long = bucketNameFor(owner('o'.repeat(60), `xn--${'n'.repeat(58)}`, 'uid-3'));
    assert.ok(long.length <= 63 && !long.startsWith('xn--') && /^[a-z0-9][a-z0-9-]*[a-z0-9]$/.test(long), long);
    // Made under one name: the bucket keeps it, whatever the function would compute now.
    const seen = observe(rsp).map((o) =>
      o['kind'] === 'Bucket'
        ? {
            ...o,
            metadata: {
              ...(o['metadata'] as Obj),
              annotations: {
                ...((o['metadata'] as Obj)['annotations'] as Obj),
                'crossplane.io/external-name': 'made-earlier-bucket',
              },
            },
          }
        : o,
    );
    const again = callWith(undefined, db({ backup: { provision: PROVISION } }), seen);
    assert.equal(
      ((desiredOf(again, STORE_KEYS.bucket)!['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/external-name'],
      'made-earlier-bucket',
    );
  });
});

describe('which store backups go to: spec objectStore, spec provision, the platform, nothing', () => {
  const platformStore = input({ objectStore: PLATFORM_STORE });
  const platformProvision = input({ provision: { aws: { region: 'eu-north-1' } } });
  const cases: Array<
    [string, Obj | undefined, Obj, 'spec' | 'platform' | 'provisioned' | undefined, string | undefined]
  > = [
    [
      'spec objectStore over spec provision',
      platformProvision,
      { objectStore: OWN_STORE, provision: PROVISION },
      'spec',
      undefined,
    ],
    ['spec provision over the platform store', platformStore, { provision: PROVISION }, 'provisioned', 'eu-west-1'],
    [
      'spec provision over the platform provision',
      platformProvision,
      { provision: PROVISION },
      'provisioned',
      'eu-west-1',
    ],
    ['the platform store', platformStore, {}, 'platform', undefined],
    ['the platform provision', platformProvision, {}, 'provisioned', 'eu-north-1'],
    ['spec objectStore over the platform provision', platformProvision, { objectStore: OWN_STORE }, 'spec', undefined],
    ['nothing', undefined, {}, undefined, undefined],
  ];
  for (const [what, step, backup, source, region] of cases)
    test(what, () => {
      const rsp = callWith(step, db({ backup }));
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      const bucket = desiredOf(rsp, STORE_KEYS.bucket);
      assert.equal(bucket !== undefined, source === 'provisioned', 'a bucket is made exactly when provisioned');
      if (region) assert.equal(forProvider(rsp, STORE_KEYS.bucket)['region'], region);
      if (source === 'provisioned') {
        // Asked for, not there yet: not published, BackupHealthy says what it waits for.
        assert.equal(storeOf(rsp), undefined);
        assert.equal(condition(rsp, 'BackupHealthy')?.reason, 'ObjectStoreProvisioning');
      } else if (source) assert.equal(storeOf(rsp)?.['source'], source);
      else assert.equal(condition(rsp, 'BackupHealthy')?.reason, 'NoObjectStore');
      if (what.startsWith('spec objectStore over spec provision'))
        assert.ok(rsp.results.some((r) => r.reason === 'FieldIgnored' && /spec\.backup\.provision/.test(r.message)));
    });

  test('provision with backups off makes nothing', () => {
    const rsp = callWith(undefined, db({ backup: { enabled: false, provision: PROVISION } }));
    assert.equal(desiredOf(rsp, STORE_KEYS.bucket), undefined);
  });

  test('on AWS, RDS keeps the backups: a provision in the spec is said to be unused, the platform one is not made', () => {
    const aws = { placement: 'aws', aws: { region: 'eu-west-1' } };
    const own = callWith(undefined, db({ ...aws, backup: { provision: PROVISION } }));
    assert.equal(fatalOf(own), undefined, fatalOf(own)?.message);
    assert.equal(desiredOf(own, STORE_KEYS.bucket), undefined);
    assert.ok(own.results.some((r) => r.reason === 'FieldIgnored' && /RDS keeps the backups/.test(r.message)));
    const platform = callWith(platformProvision, db(aws));
    assert.equal(desiredOf(platform, STORE_KEYS.bucket), undefined);
  });

  test('a bad region in the spec is Fatal naming the field, and nothing is dropped', () => {
    const first = callWith(undefined, db({ backup: { provision: PROVISION } }));
    const rsp = callWith(undefined, db({ backup: { provision: { aws: { region: 'mars' } } } }), observe(first));
    assert.match(fatalOf(rsp)?.message ?? '', /spec\.backup\.provision\.aws\.region is "mars"; it must match/);
    assert.deepEqual(keys(rsp), []);
  });
});

describe('a made store: the Database waits for it, backups do not', () => {
  const spec = { backup: { provision: PROVISION } };
  const serving = (status: Obj = {}) => db(spec, { status: { phase: 'Ready', ...status } });

  test('bucket, then access key, then its Secret: BackupHealthy False naming each; the database is Ready meanwhile', () => {
    const first = callWith(undefined, serving());
    const none = callWith(undefined, serving(), observe(first));
    assert.equal(condition(none, 'DatabaseReady')?.status, Status.STATUS_CONDITION_TRUE, 'it serves: Ready');
    assert.equal(statusOf(none)['phase'], 'Ready');
    assert.equal(condition(none, 'BackupHealthy')?.status, Status.STATUS_CONDITION_FALSE);
    assert.match(condition(none, 'BackupHealthy')?.message ?? '', /Bucket team-a-orders-backups-\w+ is not ready/);
    assert.deepEqual(
      keys(none).filter((k) => k.startsWith('scheduled-backup-')),
      [],
      'no backup while the store is being made',
    );

    const bucketOnly = callWith(
      undefined,
      serving(),
      observe(none, (k) => (k === STORE_KEYS.accessKey ? notReadyMr : readyMr)),
    );
    assert.match(
      condition(bucketOnly, 'BackupHealthy')?.message ?? '',
      /AccessKey team-a-orders-backups-\w+-key is not ready/,
    );
    assert.equal(storeOf(bucketOnly), undefined);

    const keyReady = observe(none, () => readyMr);
    const noSecret = callWith(undefined, serving(), keyReady, answered({ 'store-access-key-secret': [] }));
    assert.match(
      condition(noSecret, 'BackupHealthy')?.message ?? '',
      /Secret orders-db-backup-store-key \(the access key's connection Secret\) is not written yet/,
    );
    assert.deepEqual(
      keys(noSecret).filter((k) => k.startsWith('scheduled-backup-')),
      [],
    );

    const there = callWith(
      undefined,
      serving(),
      keyReady,
      answered({
        'store-access-key-secret': [keySecret('orders-db-backup-store-key')],
        'backup-store-credentials': [keySecret('orders-db-backup-store-key')],
      }),
    );
    assert.equal(fatalOf(there), undefined, fatalOf(there)?.message);
    const store = storeOf(there)!;
    assert.equal(store['source'], 'provisioned');
    assert.equal(store['region'], 'eu-west-1');
    assert.match(String(store['bucket']), /^team-a-orders-backups-/);
    assert.deepEqual(store['credentialsSecretRef'], { name: 'orders-db-backup-store-key' });
    assert.notEqual(condition(there, 'BackupHealthy')?.reason, 'ObjectStoreProvisioning');
    assert.equal(
      there.results.some((r) => r.reason === 'BackupCredentials'),
      false,
      'username and password are the keys a made store has',
    );
    assert.equal(keys(there).filter((k) => k.startsWith('scheduled-backup-')).length, 1, 'the due backup is taken');
  });

  test("a DatabaseBackup finds the made store in the Database's status, and its Job reads the key's Secret", () => {
    const first = callWith(undefined, serving());
    const there = callWith(
      undefined,
      serving(),
      observe(first, () => readyMr),
      answered({ 'store-access-key-secret': [keySecret('orders-db-backup-store-key')] }),
    );
    const published = { ...serving(), status: statusOf(there) };
    const backupXr: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: { name: 'orders-by-hand', namespace: NAMESPACE, uid: 'uid-backup' },
      spec: { databaseRef: { name: 'orders' } },
    };
    const rsp = callWith(undefined, backupXr, [], answered({ database: [published] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const job = Object.values(rsp.desired!.resources).find((r) => (r.resource as Obj)['kind'] === 'Job');
    assert.ok(job, `a dump Job is composed (status: ${String(statusOf(rsp)['message'])})`);
    const pod = (((job!.resource as Obj)['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const env = Object.fromEntries(
      ((pod['containers'] as Obj[])[0]!['env'] as Obj[]).map((e) => [
        e['name'],
        e['value'] ?? (e['valueFrom'] as Obj)['secretKeyRef'],
      ]),
    );
    assert.match(String(env['BUCKET']), /^team-a-orders-backups-/);
    assert.equal(env['AWS_REGION'], 'eu-west-1');
    assert.equal(env['S3_ENDPOINT'], undefined, 'AWS S3 itself');
    assert.deepEqual(env['AWS_ACCESS_KEY_ID'], { name: 'orders-db-backup-store-key', key: 'username' });
    assert.deepEqual(env['AWS_SECRET_ACCESS_KEY'], { name: 'orders-db-backup-store-key', key: 'password' });

    // Not published yet: the DatabaseBackup waits.
    const early = callWith(undefined, backupXr, [], answered({ database: [serving()] }));
    assert.equal(statusOf(early)['phase'], 'Pending');
    assert.deepEqual(keys(early), []);
  });

  test('once published, the store stays where backups go even when a resource reports not ready for a while', () => {
    const first = callWith(undefined, serving());
    const there = callWith(
      undefined,
      serving(),
      observe(first, () => readyMr),
      answered({ 'store-access-key-secret': [keySecret('orders-db-backup-store-key')] }),
    );
    const later = callWith(
      undefined,
      serving({ backup: statusOf(there)['backup'] }),
      observe(first, () => notReadyMr),
    );
    assert.equal(storeOf(later)?.['source'], 'provisioned');
  });

  test('CloudNativePG: the Barman Cloud ObjectStore reads the key under the provider names', () => {
    const ha = { ...spec, highAvailability: true };
    const cnpg = (observed: Obj[] = [], extra: Obj = {}) =>
      callWith(
        undefined,
        db(ha, { status: { phase: 'Ready' } }),
        observed,
        answered({ 'cnpg-crd': [CNPG_CRD_OBJECT], ...extra }),
      );
    const first = cnpg();
    assert.equal(desiredOf(first, 'cnpg-object-store'), undefined, 'no ObjectStore before the store is there');
    const there = cnpg(
      observe(first, () => readyMr),
      { 'store-access-key-secret': [keySecret('orders-db-backup-store-key')] },
    );
    const os = desiredOf(there, 'cnpg-object-store');
    assert.ok(os, 'the ObjectStore once the store is there');
    const creds = ((os['spec'] as Obj)['configuration'] as Obj)['s3Credentials'] as Obj;
    assert.deepEqual(creds['accessKeyId'], { name: 'orders-db-backup-store-key', key: 'username' });
    assert.deepEqual(creds['secretAccessKey'], { name: 'orders-db-backup-store-key', key: 'password' });
    assert.deepEqual(validateObject(os), []);
  });
});

describe('a made store is never dropped', () => {
  const first = callWith(undefined, db({ backup: { provision: PROVISION } }));
  const made = observe(first, () => readyMr);
  const changes: Array<[string, Obj | undefined, Obj]> = [
    ['the spec names its own store', undefined, { backup: { objectStore: OWN_STORE } }],
    ['the provision is removed', undefined, {}],
    ['the platform names a store instead', input({ objectStore: PLATFORM_STORE }), {}],
    ['backups are turned off', undefined, { backup: { enabled: false, provision: PROVISION } }],
    ['Retain becomes Delete', undefined, { deletionPolicy: 'Delete', backup: { provision: PROVISION } }],
  ];
  for (const [what, step, spec] of changes)
    test(`${what}: every part of it stays composed, as made`, () => {
      const rsp = callWith(step, db(spec), made);
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      for (const key of STORE_MRS) {
        assert.ok(desiredOf(rsp, key), `${key} stays`);
        assert.equal(forProvider(rsp, key)['region'] ?? 'eu-west-1', 'eu-west-1');
      }
      const plan = { resources: keys(rsp).map((key) => ({ key, object: {} })) };
      const observed = new Map(
        made.map((o) => [
          String(((o['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/composition-resource-name']),
          o,
        ]),
      );
      assert.doesNotThrow(() => guardNothingLost(plan, observed));
    });

  test('the guard itself refuses a plan that leaves the bucket out (and only the bucket: the rest holds no data)', () => {
    const observed = new Map(
      made
        .filter((o) => ['Bucket', 'User', 'AccessKey'].includes(String(o['kind'])))
        .map((o) => [
          String(((o['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/composition-resource-name']),
          o,
        ]),
    );
    assert.throws(
      () => guardNothingLost({ resources: [] }, observed),
      /it would delete Bucket team-a-orders-backups-\w+, which holds data/,
    );
  });
});
