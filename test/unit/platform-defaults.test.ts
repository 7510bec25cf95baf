// Platform policy in the Composition step's Input: what a composite gets when
// its own spec does not say. The spec wins over the platform, the platform
// over the built-in defaults; status.backup.objectStore says which store
// backups go to and who named it; a DatabaseBackup finds the same store; a
// wrong or unknown Input field is Fatal, naming it, with nothing composed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { Loop } from '../support/loop.js';
import {
  answered,
  asObserved,
  databaseXr,
  desiredOf,
  fatalOf,
  inner,
  NAMESPACE,
  type Required,
  statusOf,
} from '../support/database.js';

const PLATFORM_STORE = {
  bucket: 'platform-backups',
  region: 'eu-central-1',
  endpoint: 'http://minio.storage:9000',
  prefix: 'fleet',
  credentialsSecretRef: { name: 'platform-store' },
};
const OWN_STORE = { bucket: 'team-a-own', region: 'us-east-2', credentialsSecretRef: { name: 'own-store' } };

/** The Input a platform team writes, with `defaults`. */
const inputWith = (defaults: Obj, blueprint?: string): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  ...(blueprint ? { blueprint } : {}),
  defaults,
});

/** One call with a step Input. */
function callWith(input: Obj | undefined, xr: Obj, observed: Obj[] = [], required: Required = {}): RunFunctionResponse {
  return runFunction(buildRequest(xr, observed, [], input, required));
}

/** The two-line Database an application team writes (no store, no schedule). */
const twoLine = (spec: Obj = {}) => databaseXr({ engine: 'postgres', storageGB: 20, ...spec }, { bare: true });
const onAws = (aws: Obj = {}, spec: Obj = {}) =>
  databaseXr({ engine: 'postgres', storageGB: 20, placement: 'aws', ...(aws ? { aws } : {}), ...spec }, { bare: true });
const forProvider = (rsp: RunFunctionResponse) =>
  (desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['forProvider'] as Obj;
const backupHealthy = (rsp: RunFunctionResponse) => rsp.conditions.find((c) => c.type === 'BackupHealthy');

describe('platform defaults: the object store', () => {
  test('a two-line Database takes the platform store, and status says so (source platform)', () => {
    const rsp = callWith(inputWith({ database: { backup: { objectStore: PLATFORM_STORE } } }), twoLine());
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const store = (statusOf(rsp)['backup'] as Obj)['objectStore'];
    assert.deepEqual(store, { ...PLATFORM_STORE, source: 'platform' });
    assert.notEqual(backupHealthy(rsp)?.reason, 'NoObjectStore');
    assert.doesNotMatch(String(statusOf(rsp)['message']), /nowhere to go/);
  });

  test("the platform store's Secret, missing in the namespace, is said as the platform's, naming its Input field", () => {
    const input = inputWith({ database: { backup: { objectStore: PLATFORM_STORE } } });
    const first = callWith(input, twoLine());
    const rsp = callWith(input, twoLine(), [], answered({ 'backup-store-credentials': [] }));
    assert.equal(fatalOf(first), undefined);
    const warning = rsp.results.find((r) => r.reason === 'BackupCredentials');
    assert.match(
      warning?.message ?? '',
      /^Secret platform-store \(the platform's default store, defaults\.database\.backup\.objectStore\.credentialsSecretRef in the Composition\) does not exist in namespace team-a/,
    );
  });

  test('the Database names its own store: it wins, whole (no field of the platform store mixes in)', () => {
    const rsp = callWith(
      inputWith({ database: { backup: { objectStore: PLATFORM_STORE } } }),
      twoLine({ backup: { objectStore: OWN_STORE } }),
    );
    assert.deepEqual((statusOf(rsp)['backup'] as Obj)['objectStore'], { ...OWN_STORE, source: 'spec' });
  });

  test('neither names one: no store in status, BackupHealthy False NoObjectStore', () => {
    const rsp = callWith(inputWith({ database: { storageClassName: 'fast' } }), twoLine());
    assert.equal(((statusOf(rsp)['backup'] ?? {}) as Obj)['objectStore'], undefined);
    assert.equal(backupHealthy(rsp)?.reason, 'NoObjectStore');
  });

  test('a platform backup policy without a store: taken, and still NoObjectStore (nothing invented)', () => {
    const rsp = callWith(inputWith({ database: { backup: { retentionDays: 10 } } }), twoLine());
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(backupHealthy(rsp)?.reason, 'NoObjectStore');
  });

  test('a Database on AWS keeps its backups in RDS: the platform store is not said to be where they go', () => {
    const rsp = callWith(
      inputWith({ database: { backup: { objectStore: PLATFORM_STORE }, aws: { region: 'eu-west-1' } } }),
      onAws(),
    );
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.equal(((statusOf(rsp)['backup'] ?? {}) as Obj)['objectStore'], undefined);
  });
});

describe('platform defaults: schedule and retention, spec over platform over built-in', () => {
  const cases: Array<[string, Obj | undefined, Obj, string, number]> = [
    ['built in', undefined, {}, '03:00-04:00', 7],
    ['platform', { schedule: '30 5 * * *', retentionDays: 14 }, {}, '05:30-06:30', 14],
    [
      'spec',
      { schedule: '30 5 * * *', retentionDays: 14 },
      { schedule: '0 1 * * *', retentionDays: 3 },
      '01:00-02:00',
      3,
    ],
  ];
  for (const [who, platform, own, window, days] of cases)
    test(`${who}: RDS backup window ${window}, retention ${days} days`, () => {
      const defaults = { database: { aws: { region: 'eu-west-1' }, ...(platform ? { backup: platform } : {}) } };
      const rsp = callWith(inputWith(defaults), onAws({}, Object.keys(own).length ? { backup: own } : {}));
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      assert.equal(forProvider(rsp)['backupWindow'], window);
      assert.equal(forProvider(rsp)['backupRetentionPeriod'], days);
    });

  test('in the cluster, the platform retention is the CloudNativePG store retention', () => {
    const rsp = callWith(
      inputWith({ database: { backup: { retentionDays: 21, objectStore: PLATFORM_STORE } } }),
      twoLine({ highAvailability: true }),
      [],
      answered({ 'cnpg-crd': [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }] }),
    );
    const store = desiredOf(rsp, 'cnpg-object-store');
    assert.ok(store, 'an ObjectStore is composed from the platform store');
    const spec = store!['spec'] as Obj;
    assert.equal(spec['retentionPolicy'], '21d');
    assert.match(String((spec['configuration'] as Obj)['destinationPath']), /^s3:\/\/platform-backups\/fleet\//);
  });
});

describe('platform defaults: AWS settings', () => {
  test('region, ClusterProviderConfig, subnets, security groups and class come from the platform', () => {
    const aws = {
      region: 'eu-north-1',
      providerConfigName: 'platform-aws',
      subnetIds: ['subnet-0a', 'subnet-0b'],
      securityGroupIds: ['sg-0c'],
      instanceClass: 'db.r6g.large',
    };
    const rsp = callWith(inputWith({ database: { aws } }), onAws(undefined as never));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const fp = forProvider(rsp);
    assert.equal(fp['region'], 'eu-north-1');
    assert.equal(fp['instanceClass'], 'db.r6g.large');
    assert.deepEqual(fp['vpcSecurityGroupIds'], ['sg-0c']);
    assert.ok(fp['dbSubnetGroupNameRef'], 'a subnet group is referenced');
    assert.deepEqual(((desiredOf(rsp, 'rds-subnet-group')!['spec'] as Obj)['forProvider'] as Obj)['subnetIds'], [
      'subnet-0a',
      'subnet-0b',
    ]);
    assert.deepEqual((desiredOf(rsp, 'rds-instance')!['spec'] as Obj)['providerConfigRef'], {
      kind: 'ClusterProviderConfig',
      name: 'platform-aws',
    });
    assert.deepEqual(
      { region: (statusOf(rsp)['aws'] as Obj)['region'], pc: (statusOf(rsp)['aws'] as Obj)['providerConfigName'] },
      { region: 'eu-north-1', pc: 'platform-aws' },
    );
  });

  test("the spec's own AWS fields win, field by field; without either, the size picks the class and default the config", () => {
    const platform = inputWith({ database: { aws: { region: 'eu-north-1', instanceClass: 'db.r6g.large' } } });
    const own = callWith(platform, onAws({ region: 'us-west-2', instanceClass: 'db.t4g.micro' }));
    assert.equal(forProvider(own)['region'], 'us-west-2');
    assert.equal(forProvider(own)['instanceClass'], 'db.t4g.micro');
    const mixed = callWith(platform, onAws({ region: 'us-west-2' }));
    assert.equal(forProvider(mixed)['region'], 'us-west-2');
    assert.equal(forProvider(mixed)['instanceClass'], 'db.r6g.large');
    const builtIn = callWith(undefined, onAws({ region: 'us-west-2' }));
    assert.equal(forProvider(builtIn)['instanceClass'], 'db.t4g.small', 'spec.size small');
    assert.equal(((desiredOf(builtIn, 'rds-instance')!['spec'] as Obj)['providerConfigRef'] as Obj)['name'], 'default');
  });

  test('placement aws with no region anywhere is Fatal, saying the platform may set one', () => {
    const rsp = callWith(undefined, onAws());
    assert.match(
      fatalOf(rsp)?.message ?? '',
      /spec\.aws\.region is required with placement aws.*defaults\.database\.aws\.region/,
    );
  });

  test('a Database in the cluster takes no AWS settings from the platform', () => {
    const rsp = callWith(inputWith({ database: { aws: { region: 'eu-north-1' } } }), twoLine());
    assert.equal(fatalOf(rsp), undefined);
    assert.equal(statusOf(rsp)['aws'], undefined);
  });
});

describe('platform defaults: the data volume class', () => {
  const classOf = (rsp: RunFunctionResponse) =>
    (((desiredOf(rsp, 'statefulset')!['spec'] as Obj)['volumeClaimTemplates'] as Obj[])[0]!['spec'] as Obj)[
      'storageClassName'
    ];
  test('platform, spec, built in (the cluster default: none named)', () => {
    const platform = inputWith({ database: { storageClassName: 'fast' } });
    assert.equal(classOf(callWith(platform, twoLine())), 'fast');
    assert.equal(classOf(callWith(platform, twoLine({ storageClassName: 'slow' }))), 'slow');
    assert.equal(classOf(callWith(undefined, twoLine())), undefined);
  });
  test('a volume keeps the class it was made with when the platform default changes', () => {
    const first = callWith(inputWith({ database: { storageClassName: 'fast' } }), twoLine());
    const later = callWith(inputWith({ database: { storageClassName: 'faster' } }), twoLine(), asObserved(first));
    assert.equal(fatalOf(later), undefined);
    assert.equal(classOf(later), 'fast');
  });
  test('a CloudNativePG Cluster takes the class too', () => {
    const rsp = callWith(
      inputWith({ database: { storageClassName: 'fast' } }),
      twoLine({ highAvailability: true }),
      [],
      answered({ 'cnpg-crd': [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }] }),
    );
    // Composed through a provider-kubernetes Object (it outlives the Database under Retain).
    const cluster = inner(desiredOf(rsp, 'cnpg-cluster'))!;
    assert.deepEqual(((cluster['spec'] as Obj)['storage'] as Obj)['storageClass'], 'fast');
  });
});

describe('platform defaults: the Widget ingress class', () => {
  const widget = (spec: Obj): Obj => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'shop', namespace: NAMESPACE, uid: 'uid-shop' },
    spec: { color: 'blue', size: 1, host: 'shop.example.com', ...spec },
  });
  const classOf = (rsp: RunFunctionResponse) => (desiredOf(rsp, 'ingress')!['spec'] as Obj)['ingressClassName'];
  test('platform, spec, built in (the cluster default: none named)', () => {
    const platform = inputWith({ widget: { ingressClassName: 'nginx' } });
    assert.equal(classOf(callWith(platform, widget({}))), 'nginx');
    assert.equal(classOf(callWith(platform, widget({ ingressClassName: 'traefik' }))), 'traefik');
    assert.equal(classOf(callWith(undefined, widget({}))), undefined);
  });
});

describe('a DatabaseBackup finds the store its Database uses', () => {
  const backupXr: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: { name: 'orders-by-hand', namespace: NAMESPACE, uid: 'uid-backup' },
    spec: { databaseRef: { name: 'orders' } },
  };
  test("from the Database's status when the platform named it (its own Composition's Input is not the backup's)", () => {
    const db = callWith(inputWith({ database: { backup: { objectStore: PLATFORM_STORE } } }), twoLine());
    const published = { ...twoLine(), status: statusOf(db) };
    const rsp = callWith(undefined, backupXr, [], answered({ database: [published] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const job = Object.values(rsp.desired!.resources).find((r) => (r.resource as Obj)['kind'] === 'Job');
    assert.ok(job, `a dump Job is composed (status: ${String(statusOf(rsp)['message'])})`);
    const upload = (((job!.resource as Obj)['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const env = ((upload['containers'] as Obj[])[0]!['env'] as Obj[]).map((e) => [
      e['name'],
      e['value'] ?? ((e['valueFrom'] as Obj)['secretKeyRef'] as Obj)['name'],
    ]);
    const said = Object.fromEntries(env);
    assert.equal(said['BUCKET'], 'platform-backups');
    assert.equal(said['KEY'], 'fleet/orders/orders-by-hand.dump');
    assert.equal(said['S3_ENDPOINT'], 'http://minio.storage:9000');
    assert.equal(said['AWS_REGION'], 'eu-central-1');
    assert.equal(said['AWS_ACCESS_KEY_ID'], 'platform-store');
  });
  test('a Database that has not published its store yet: the backup waits (Pending), composing nothing', () => {
    const rsp = callWith(undefined, backupXr, [], answered({ database: [twoLine()] }));
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(Object.keys(rsp.desired!.resources), []);
    assert.equal(statusOf(rsp)['phase'], 'Pending');
  });
});

describe('the Input is checked against its CRD: a wrong or unknown field is Fatal, naming it', () => {
  const bad: Array<[string, Obj, RegExp]> = [
    ['a typo at the top', { defautls: {} }, /input\.defautls is not a known field/],
    [
      'a typo inside the store',
      { defaults: { database: { backup: { objectStore: { ...PLATFORM_STORE, bukket: 'x' } } } } },
      /input\.defaults\.database\.backup\.objectStore\.bukket is not a known field/,
    ],
    [
      'an invalid bucket name',
      { defaults: { database: { backup: { objectStore: { ...PLATFORM_STORE, bucket: 'Not_A_Bucket' } } } } },
      /input\.defaults\.database\.backup\.objectStore\.bucket is "Not_A_Bucket"; it must match/,
    ],
    [
      'a store without credentials',
      { defaults: { database: { backup: { objectStore: { bucket: 'abc' } } } } },
      /input\.defaults\.database\.backup\.objectStore\.credentialsSecretRef is required/,
    ],
    [
      'retention as a string',
      { defaults: { database: { backup: { retentionDays: '14' } } } },
      /input\.defaults\.database\.backup\.retentionDays is "14"; it must be a whole number/,
    ],
    [
      'a schedule cron cannot read',
      { defaults: { database: { backup: { schedule: '61 3 * * *' } } } },
      /input\.defaults\.database\.backup\.schedule is "61 3 \* \* \*"/,
    ],
    [
      'an unknown region',
      { defaults: { database: { aws: { region: 'mars' } } } },
      /input\.defaults\.database\.aws\.region is "mars"; it must match/,
    ],
    [
      'a default naming both a store and a provision',
      {
        defaults: {
          database: { backup: { objectStore: PLATFORM_STORE, provision: { aws: { region: 'eu-west-1' } } } },
        },
      },
      /input\.defaults\.database\.backup\.provision and input\.defaults\.database\.backup\.objectStore are both set/,
    ],
    [
      'a provision in an unknown region',
      { defaults: { database: { backup: { provision: { aws: { region: 'eu-westt-1' } } } } } },
      /input\.defaults\.database\.backup\.provision\.aws\.region is "eu-westt-1"; it must match/,
    ],
    [
      'a provision without a region',
      { defaults: { database: { backup: { provision: { aws: { providerConfigName: 'default' } } } } } },
      /input\.defaults\.database\.backup\.provision\.aws\.region is required/,
    ],
    [
      'a typo inside a provision',
      { defaults: { database: { backup: { provision: { aws: { region: 'eu-west-1', bucket: 'mine' } } } } } },
      /input\.defaults\.database\.backup\.provision\.aws\.bucket is not a known field/,
    ],
    [
      'a bucket name S3 refuses (two periods side by side)',
      { defaults: { database: { backup: { objectStore: { ...PLATFORM_STORE, bucket: 'team..backups' } } } } },
      /input\.defaults\.database\.backup\.objectStore\.bucket is "team\.\.backups"; it must not have two periods/,
    ],
    [
      'a bucket name that looks like an IP address',
      { defaults: { database: { backup: { objectStore: { ...PLATFORM_STORE, bucket: '192.168.5.4' } } } } },
      /input\.defaults\.database\.backup\.objectStore\.bucket is "192\.168\.5\.4"; it must not look like an IP address/,
    ],
    [
      'a requeue settled sooner than changing',
      { requeue: { settledSeconds: 10 } },
      /input\.requeue\.settledSeconds is 10, shorter than changingSeconds \(15\)/,
    ],
    ['a requeue typo', { requeue: { settledSecond: 120 } }, /input\.requeue\.settledSecond/],
    [
      'a Widget typo',
      { defaults: { widget: { ingresClassName: 'nginx' } } },
      /input\.defaults\.widget\.ingresClassName/,
    ],
  ];
  for (const [what, fields, said] of bad)
    test(what, () => {
      const input = { apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', ...fields };
      const first = callWith(undefined, twoLine({ backup: { objectStore: OWN_STORE } }));
      // On a Database that exists: Fatal, and nothing of it in desired state to be mistaken for a partial answer.
      const rsp = callWith(input, twoLine({ backup: { objectStore: OWN_STORE } }), asObserved(first));
      const fatal = fatalOf(rsp);
      assert.equal(fatal?.reason, 'InvalidInput');
      assert.match(fatal?.message ?? '', said);
      assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}), []);
    });
});

describe('platform requeue: how soon Crossplane calls again (the response TTL)', () => {
  const ttl = (rsp: RunFunctionResponse) => Number(rsp.meta?.ttl?.seconds);
  const requeue = (r: Obj): Obj => ({ apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', requeue: r });
  const widget: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'shop', namespace: NAMESPACE, uid: 'u-1' },
    spec: { image: 'shop:1', size: 2 },
  };

  /** A Widget through creation to settled: the TTL of each call. */
  function ttls(input?: Obj): { creating: number; turning: number; settled: number } {
    const loop = new Loop(widget, input);
    const creating = ttl(loop.call());
    loop.apply();
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call());
    loop.settle();
    const turning = loop.call();
    loop.apply(turning);
    const settled = loop.call();
    assert.equal(loop.status()['ready'], true, String(loop.status()['message']));
    return { creating, turning: ttl(turning), settled: ttl(settled) };
  }

  test('built in: 15 s while changing, 2 s on the call that turns ready, 60 s settled', () => {
    assert.deepEqual(ttls(), { creating: 15, turning: 2, settled: 60 });
  });

  test("the platform's intervals, the short call kept short", () => {
    assert.deepEqual(ttls(requeue({ settledSeconds: 300, changingSeconds: 30 })), {
      creating: 30,
      turning: 2,
      settled: 300,
    });
  });

  test('a changing interval under the built-in short ones caps them', () => {
    assert.deepEqual(ttls(requeue({ changingSeconds: 1, settledSeconds: 5 })), { creating: 1, turning: 1, settled: 5 });
  });
});
