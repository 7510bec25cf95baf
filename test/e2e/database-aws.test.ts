// A Database on AWS under the Crossplane that users run. The managed
// resources Crossplane composes must be accepted by provider-upjet-aws's real
// CRDs (from ../shared/crds). No AWS and no provider runs here: a stand-in for
// provider-upjet-aws, named so below, then writes their status and the
// instance's connection Secret the way the provider does, and the Database
// must become ready from that alone.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import type { Json } from '../support/apiserver.js';
import { applyManifest, type ControlPlane, controlPlaneSkipReason, secretData } from '../support/control-plane.js';
import { controlPlaneForSuite, ensureNamespace, eventually, readyAndSynced } from '../support/e2e.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { finishJobPod } from '../support/kwok-kubelet.js';
import { STAND_IN_PASSWORD, standInAddress, standInProviderUpjetAws } from '../support/stand-in-upjet-aws.js';

const skip = controlPlaneSkipReason('e2e: a Database on AWS under real Crossplane');
const NS = 'team-a';
const UPJET_CRDS = join(repoRoot, '..', 'shared', 'crds', 'provider-upjet-aws');
const ADDRESS = standInAddress(NS);

let cp: ControlPlane;
const database = (name = 'orders') =>
  cp.client.getObj({ apiVersion: 'example.com/v1', kind: 'Database', metadata: { name, namespace: NS } });

/** The composed resources, as Crossplane recorded them on the XR. */
async function composed(name = 'orders'): Promise<Json[]> {
  const refs: Json[] = (await database(name))?.['spec']?.['crossplane']?.['resourceRefs'] ?? [];
  const out: Json[] = [];
  for (const r of refs) {
    const obj = await cp.client.getObj({
      apiVersion: r['apiVersion'],
      kind: r['kind'],
      metadata: { name: r['name'], namespace: NS },
    });
    if (obj) out.push(obj);
  }
  return out;
}

describe('a Database on AWS under real Crossplane', { skip }, () => {
  before(async () => {
    // Crossplane's webhooks on, as its Helm chart runs them: the Database holds the bucket made for it.
    cp = await controlPlaneForSuite({ webhooks: true });
    await ensureNamespace(cp, NS);
    // The namespaced managed resources' CRDs, installed by Crossplane's package manager from the
    // stand-in provider packages the Configuration's dependencies resolved to.
    for (const file of readdirSync(UPJET_CRDS).filter((f) => /^(rds|s3|iam)\.aws\.m\.upbound\.io_/.test(f))) {
      const crd = parse(readFileSync(join(UPJET_CRDS, file), 'utf8')) as Json;
      await cp.client.waitEstablished(String(crd['metadata']['name']));
    }
  });
  after(async () => {
    await cp?.stop();
  });

  test('every managed resource is accepted by its real CRD, and the Database says which one it waits for', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'database', 'aws.yaml')]);
    const objs = await eventually('the instance composed', async () => {
      const db = await database();
      const all = await composed();
      const synced = db?.['status']?.['conditions']?.find((c: Json) => c['type'] === 'Synced');
      return synced && all.some((o) => o['kind'] === 'Instance') ? all : undefined;
    });
    // The reconcile after the one that created the instance observes it, and says what it waits for.
    const db = await eventually('the Database names the instance it waits for', async () => {
      const d = await database();
      return /^RDS instance team-a-orders-db: being created/.test(String(d?.['status']?.['message'])) ? d : undefined;
    });
    assert.equal(
      db?.['status']?.['conditions']?.find((c: Json) => c['type'] === 'Synced')?.['status'],
      'True',
      'Crossplane applied everything: the CRDs accepted it',
    );
    assert.equal(db?.['status']?.['ready'], false);
    const kinds = objs.map((o) => `${o['apiVersion']} ${o['kind']}`).sort();
    // RDS keeps the backups (automated, point in time): no bucket that nothing would write to.
    assert.deepEqual(kinds, ['rds.aws.m.upbound.io/v1beta1 Instance']);
  });

  test('with the stand-in provider reporting them available, the Database is Ready with its connection Secret built', async () => {
    await standInProviderUpjetAws(cp.client, await composed());
    const db = await eventually(
      'the Database Ready',
      async () => {
        const d = await database();
        return readyAndSynced(d) && d?.['status']?.['phase'] === 'Ready' ? d : undefined;
      },
      90_000,
    );
    assert.equal(db['status']['endpoint'], `${ADDRESS}:5432`);
    const connection = await secretData(cp.client, NS, 'orders-db-connection');
    assert.equal(connection?.['host']?.toString(), ADDRESS);
    assert.equal(connection?.['password']?.toString(), STAND_IN_PASSWORD);
    assert.match(
      connection?.['uri']?.toString() ?? '',
      new RegExp(`^postgresql://app:${STAND_IN_PASSWORD}@${ADDRESS.replace(/\./g, '\\.')}:5432/`),
    );
    // The backups RDS keeps, mirrored from what the provider observes.
    assert.equal(db['status']['backup']['location'], 'rds-automated-backups:team-a-orders-db');
    assert.match(String(db['status']['backup']['latestRestorableTime']), /^\d{4}-\d\d-\d\dT/);
    assert.equal(
      db['status']['conditions'].find((c: Json) => c['type'] === 'BackupHealthy')?.['reason'],
      'AutomatedBackups',
    );
  });

  test('a DatabaseBackup of it is an RDS Snapshot the real CRD accepts; Completed once the provider says available', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'databasebackup', 'before-migration.yaml')]);
    const ref = {
      apiVersion: 'rds.aws.m.upbound.io/v1beta1',
      kind: 'Snapshot',
      metadata: { name: 'orders-before-migration', namespace: NS },
    };
    const snapshot = await eventually('the Snapshot composed', () => cp.client.getObj(ref));
    assert.equal(snapshot['spec']['forProvider']['dbInstanceIdentifier'], 'team-a-orders-db');
    assert.equal(snapshot['spec']['forProvider']['region'], 'eu-west-1');
    const backup = () =>
      cp.client.getObj({
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: { name: 'orders-before-migration', namespace: NS },
      });
    assert.equal((await backup())?.['status']?.['method'], 'rds-snapshot');
    // Stand-in for provider-upjet-aws: AWS reports the snapshot available.
    await standInProviderUpjetAws(cp.client, [snapshot]);
    const done = await eventually('the DatabaseBackup Completed', async () => {
      const b = await backup();
      return b?.['status']?.['phase'] === 'Completed' ? b : undefined;
    });
    assert.equal(done['status']['restorable'], true);
    assert.equal(done['status']['sizeBytes'], 20 * 2 ** 30);
    assert.match(String(done['status']['location']), /^rds-snapshot:orders-before-migration$/);
  });

  test('a drill asked of the snapshot: a scratch RDS instance the real CRD accepts, counted once available, Passed, then deleted', async (t) => {
    const backupName = 'orders-before-migration';
    const request = 'check-1';
    const scratch = `${backupName}-drill-${request}`;
    const job = `${backupName}-verify-${request}`;
    const at = (apiVersion: string, kind: string, name: string) => ({
      apiVersion,
      kind,
      metadata: { name, namespace: NS },
    });
    const verification = (result: string) =>
      eventually(`drill ${request} ${result}`, async () => {
        const b = await cp.client.getObj(at('example.com/v1', 'DatabaseBackup', backupName));
        const v = b?.['status']?.['verification'];
        return v?.['request'] === request && v?.['result'] === result ? (v as Json) : undefined;
      });
    const gone = (apiVersion: string, kind: string, name: string) =>
      eventually(`${kind} ${name} deleted`, async () =>
        (await cp.client.getObj(at(apiVersion, kind, name))) === undefined ? true : undefined,
      );
    const started = Date.now();
    await cp.kubectl([
      'patch',
      'databasebackup',
      backupName,
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { verification: { requested: request } } }),
    ]);
    const instance = await eventually(`scratch Instance ${scratch}`, () =>
      cp.client.getObj(at('rds.aws.m.upbound.io/v1beta1', 'Instance', scratch)),
    );
    const fp = instance['spec']['forProvider'];
    assert.equal(fp['snapshotIdentifier'], 'orders-before-migration');
    assert.match(String(fp['identifier']), /^team-a-orders-before-migration-drill-[0-9a-f]{8}$/);
    assert.equal(fp['skipFinalSnapshot'], true);
    assert.equal(instance['metadata']['labels']['function-platform.dev/scratch'], 'drill');
    const password = await eventually(`password Secret ${scratch}-password`, () =>
      cp.client.getObj(at('v1', 'Secret', `${scratch}-password`)),
    );
    assert.equal(password['data'], undefined, 'composed empty: the provider writes the password');
    await verification('Running');
    assert.equal(await cp.client.getObj(at('batch/v1', 'Job', job)), undefined, 'not counted before it is available');

    // PROVIDER STAND-IN: AWS made the instance from the snapshot; its connection Secret written.
    await standInProviderUpjetAws(cp.client, [instance]);
    const count = await eventually(`count Job ${job}`, () => cp.client.getObj(at('batch/v1', 'Job', job)));
    const env = count['spec']['template']['spec']['containers'][0]['env'] as Json[];
    assert.deepEqual(env.find((e) => e['name'] === 'HOST')?.['valueFrom'], {
      secretKeyRef: { name: `${scratch}-rds`, key: 'address' },
    });
    // KUBELET STAND-IN: the count's container exits with its counts.
    await finishJobPod(cp.client, NS, job, { messages: { verify: '{"tables":2,"rows":10000,"seconds":4}' } });
    const v = await verification('Passed');
    t.diagnostic(`request to Passed: ${Date.now() - started} ms; status.verification ${JSON.stringify(v)}`);
    assert.equal(v['tables'], 2);
    assert.equal(v['rows'], 10000);
    await gone('rds.aws.m.upbound.io/v1beta1', 'Instance', scratch);
    await gone('v1', 'Secret', `${scratch}-password`);
    await gone('batch/v1', 'Job', job);
    assert.ok(await cp.client.getObj(at('rds.aws.m.upbound.io/v1beta1', 'Snapshot', backupName)), 'the snapshot stays');
  });
  test('in the cluster with spec.backup.provision: the store is accepted by its CRDs, waited for, then used by a backup Job', async () => {
    const NAME = 'ledger';
    const get = (apiVersion: string, kind: string, name: string) =>
      cp.client.getObj({ apiVersion, kind, metadata: { name, namespace: NS } });
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1\nkind: Database\nmetadata: {name: ${NAME}, namespace: ${NS}}\nspec:\n  engine: postgres\n  storageGB: 20\n  backup:\n    provision:\n      aws: {region: eu-west-1}\n`,
    });
    const STORE_KINDS = [
      'AccessKey',
      'Bucket',
      'BucketLifecycleConfiguration',
      'BucketPublicAccessBlock',
      'BucketServerSideEncryptionConfiguration',
      'BucketVersioning',
      'Policy',
      'User',
      'UserPolicyAttachment',
    ];
    const store = await eventually('the store composed and applied', async () => {
      const db = await get('example.com/v1', 'Database', NAME);
      const refs: Json[] = db?.['spec']?.['crossplane']?.['resourceRefs'] ?? [];
      const objs: Json[] = [];
      for (const r of refs.filter((r) => STORE_KINDS.includes(String(r['kind'])))) {
        const obj = await get(String(r['apiVersion']), String(r['kind']), String(r['name']));
        if (obj) objs.push(obj);
      }
      return objs.length === STORE_KINDS.length ? objs : undefined;
    });
    assert.deepEqual(store.map((o) => String(o['kind'])).sort(), STORE_KINDS);
    // Serving (kwok's pods are Ready) while the store is being made: Ready, and BackupHealthy names the bucket.
    const waiting = await eventually(
      'the Database Ready, BackupHealthy waiting for the bucket',
      async () => {
        const db = await get('example.com/v1', 'Database', NAME);
        const health = db?.['status']?.['conditions']?.find((c: Json) => c['type'] === 'BackupHealthy');
        return db && readyAndSynced(db) && health?.['reason'] === 'ObjectStoreProvisioning'
          ? { db, health }
          : undefined;
      },
      120_000,
    );
    assert.match(String(waiting.health['message']), /Bucket \S+ is not ready/);
    assert.equal(waiting.db['status']['backup']?.['objectStore'], undefined, 'not published before it is there');

    // STAND-IN for provider-upjet-aws: every store resource Ready, and the AccessKey's connection Secret
    // with the keys the provider writes (the key id as username, the secret as password).
    const now = new Date().toISOString();
    for (const obj of store) {
      if (obj['kind'] === 'AccessKey')
        await applyManifest(cp.client, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: obj['spec']['writeConnectionSecretToRef']['name'], namespace: NS },
          type: 'connection.crossplane.io/v1alpha1',
          stringData: {
            username: 'AKIASTANDIN00000001',
            password: 'stand-in-access-key-secret-0123',
            'attribute.secret': 'stand-in-access-key-secret-0123',
          },
        });
      await cp.client.mergeStatus(obj, {
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: now },
          { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: now },
        ],
        atProvider: { id: obj['metadata']['name'] },
      });
    }
    const published = await eventually(
      'the made store published (source provisioned)',
      async () => {
        const db = await get('example.com/v1', 'Database', NAME);
        const s = db?.['status']?.['backup']?.['objectStore'];
        return s?.['source'] === 'provisioned' ? s : undefined;
      },
      120_000,
    );
    const bucket = store.find((o) => o['kind'] === 'Bucket')!;
    assert.equal(published['bucket'], bucket['metadata']['annotations']['crossplane.io/external-name']);

    // A backup made by hand finds it, and its Job's credentials come from the access key's Secret.
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: ledger-by-hand, namespace: ${NS}}\nspec:\n  databaseRef: {name: ${NAME}}\n`,
    });
    const job = await eventually(
      'the dump Job of the backup',
      async () => {
        const jobs = await cp.client.listObjs('batch/v1', 'Job', NS, 'app.kubernetes.io/instance=ledger-by-hand');
        return jobs[0];
      },
      120_000,
    );
    const upload = job['spec']['template']['spec']['containers'][0];
    const env = Object.fromEntries(
      (upload['env'] as Json[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']['secretKeyRef']]),
    );
    const secret = store.find((o) => o['kind'] === 'AccessKey')!['spec']['writeConnectionSecretToRef']['name'];
    assert.deepEqual(env['AWS_ACCESS_KEY_ID'], { name: secret, key: 'username' });
    assert.deepEqual(env['AWS_SECRET_ACCESS_KEY'], { name: secret, key: 'password' });
    assert.equal(env['BUCKET'], published['bucket']);

    // The Database holds its bucket (issue 32): deleting the Bucket by hand is refused, naming the Database.
    const bucketName = String(bucket['metadata']['name']);
    await eventually(
      `Bucket ${bucketName} marked in use`,
      async () =>
        (await get(String(bucket['apiVersion']), 'Bucket', bucketName))?.['metadata']?.['labels']?.[
          'crossplane.io/in-use'
        ] === 'true'
          ? true
          : undefined,
      90_000,
    );
    const refused = await cp.kubectl(['delete', 'bucket.s3.aws.m.upbound.io', bucketName, '-n', NS, '--wait=false'], {
      allowFail: true,
    });
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.match(
      refused.stderr,
      new RegExp(`with reason: "Database ${NAME} keeps its backups in it: delete the Database first"`),
    );
    assert.ok(await get(String(bucket['apiVersion']), 'Bucket', bucketName), 'the Bucket stays');
  });

  test('a mysql Database with a read replica: the upgrade to 8.4 moves the replica first, as RDS for MySQL requires, and the primary once the replica runs it', async (t) => {
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1\nkind: Database\nmetadata: {name: shop, namespace: ${NS}}\nspec: {engine: mysql, version: "8.0", storageGB: 20, replicas: 1, placement: aws, aws: {region: eu-west-1}}\n`,
    });
    const instances = () =>
      eventually('the primary and its replica composed', async () => {
        const all = (await composed('shop')).filter((o) => o['kind'] === 'Instance');
        return all.length === 2 ? all : undefined;
      });
    await standInProviderUpjetAws(cp.client, await instances());
    await eventually(
      'shop Ready',
      async () => ((await database('shop'))?.['status']?.['ready'] === true ? true : undefined),
      90_000,
    );

    const started = Date.now();
    await cp.kubectl(['patch', 'database', 'shop', '-n', NS, '--type=merge', '-p', '{"spec":{"version":"8.4"}}']);
    // Its pre-upgrade backup, an RDS snapshot: the stand-in provider reports it available.
    const snapshot = await eventually('the pre-upgrade Snapshot', async () =>
      (await cp.client.listObjs('rds.aws.m.upbound.io/v1beta1', 'Snapshot', NS)).find(
        (o) => o['metadata']['name'] === 'shop-db-pre-8-4',
      ),
    );
    await standInProviderUpjetAws(cp.client, [snapshot]);
    const isReplica = (o: Json) => o['spec']['forProvider']['replicateSourceDbRef'] !== undefined;
    const first = await eventually(
      'the replica asked to move, the primary held',
      async () => {
        const all = await instances();
        const replica = all.find(isReplica)!;
        const primary = all.find((o) => !isReplica(o))!;
        return replica['spec']['forProvider']['engineVersion'] === '8.4' ? { replica, primary } : undefined;
      },
      90_000,
    );
    assert.equal(first.replica['spec']['forProvider']['allowMajorVersionUpgrade'], true);
    assert.equal(first.primary['spec']['forProvider']['engineVersion'], '8.0', 'the primary waits for its replica');
    const said = await eventually('the Database says the replicas go first', async () => {
      const m = String((await database('shop'))?.['status']?.['message']);
      return /upgrading the read replicas first, as RDS for MySQL requires: 0 of 1 run 8\.4/.test(m) ? m : undefined;
    });
    t.diagnostic(said);

    // The replica runs 8.4 (the stand-in provider reports 8.4.6): now the primary moves.
    await standInProviderUpjetAws(cp.client, [first.replica]);
    const moved = await eventually(
      'the primary asked to move',
      async () => {
        const primary = (await instances()).find((o) => !isReplica(o))!;
        return primary['spec']['forProvider']['engineVersion'] === '8.4' ? primary : undefined;
      },
      90_000,
    );
    assert.equal(moved['spec']['forProvider']['allowMajorVersionUpgrade'], true);
    t.diagnostic(`8.4 asked to the primary set to move, the replica first: ${Date.now() - started} ms`);
  });
});
