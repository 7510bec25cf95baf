// Backups under the Crossplane that users run: the Database composes a
// DatabaseBackup when the function's clock (a file this test moves) passes a
// slot of its schedule; Crossplane reconciles that DatabaseBackup through this
// function too, the real Job controller runs its dump Job, and the pods end
// the way this test says.
//
// Stand-in, named so: kwok runs no containers, so this test plays the KUBELET
// for the backup pods, writing their status as a kubelet does when the dump
// and upload containers exit (success with the upload's termination message,
// or an OOM kill). Everything else is the real thing, Crossplane's Usage
// webhook among it: a Database is not deleted while a backup or a restore
// reads it.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, controlPlaneSkipReason } from '../support/control-plane.js';
import { conditionOf, controlPlaneForSuite, ensureNamespace, eventually, table } from '../support/e2e.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { finishJobPod } from '../support/kwok-kubelet.js';

const skip = controlPlaneSkipReason('e2e: backups under real Crossplane');
const NS = 'team-a';
const clockFile = join(mkdtempSync(join(tmpdir(), 'fp-clock-')), 'now');

let cp: ControlPlane;
const ref = (apiVersion: string, kind: string, name: string) => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS },
});
const get = (kind: string, name: string) => cp.client.getObj(ref('example.com/v1', kind, name));

function setClock(t: Date): void {
  writeFileSync(clockFile, t.toISOString());
}

/** Makes Crossplane reconcile the Database (or `kind`) now instead of at its next poll: a change to its metadata. */
async function nudge(name: string, kind = 'database'): Promise<void> {
  await cp.kubectl(['annotate', kind, name, '-n', NS, `test.function-platform.dev/nudge=${Date.now()}`, '--overwrite']);
}

/** KUBELET STAND-IN: the pod of `job` ends, each container as given, with the status a kubelet writes. */
async function endPod(
  job: string,
  outcome: 'succeeded' | 'oom',
  report?: { key: string; sizeBytes: number },
  [first, second] = ['dump', 'upload'],
) {
  const pod = await eventually(`a pod of Job ${job}`, async () => {
    const pods = await cp.client.listObjs('v1', 'Pod', NS, `batch.kubernetes.io/job-name=${job}`);
    return pods.find((p) => p['status']?.['phase'] === 'Running');
  });
  const now = new Date().toISOString();
  const container = (name: string, state: Json) => ({
    name,
    ready: false,
    restartCount: 0,
    image: name,
    imageID: '',
    state,
  });
  const terminated = (exitCode: number, reason: string, message?: string) => ({
    terminated: { exitCode, reason, startedAt: now, finishedAt: now, ...(message ? { message } : {}) },
  });
  const [phase, dump, upload] =
    outcome === 'succeeded'
      ? ['Succeeded', terminated(0, 'Completed'), terminated(0, 'Completed', JSON.stringify(report))]
      : ['Failed', terminated(137, 'OOMKilled'), { waiting: { reason: 'PodInitializing' } }];
  const status: Json = {
    phase,
    initContainerStatuses: [container(first!, dump)],
    containerStatuses: [container(second!, upload)],
  };
  await cp.client.mergeStatus(pod, {
    ...status,
    conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: now }],
  });
}

/**
 * Deletion order (Crossplane's Usage webhook): once Database `db` is marked in use (the label Crossplane's
 * Usage controller sets), `kubectl delete` is refused; the refusal is returned. Never tried before the mark:
 * a deletion that went through would end the suite.
 */
async function deletionRefused(db: string, holder: string): Promise<string> {
  // Only `holder` holds it: a Usage of a backup that ended goes at that backup's next reconcile.
  await eventually(
    `Database ${db} held by ${holder} alone`,
    async () => {
      const usages = await cp.client.listObjs('protection.crossplane.io/v1beta1', 'Usage', NS);
      const names = usages
        .filter((u) => u['spec']?.['of']?.['resourceRef']?.['name'] === db)
        .map((u) => u['metadata']['name']);
      return names.length === 1 && names[0] === holder ? true : undefined;
    },
    120_000,
  );
  await eventually(
    `Database ${db} marked in use`,
    async () =>
      (await get('Database', db))?.['metadata']?.['labels']?.['crossplane.io/in-use'] === 'true' ? true : undefined,
    90_000,
  );
  const r = await cp.kubectl(['delete', 'database', db, '-n', NS, '--wait=false'], { allowFail: true });
  assert.notEqual(r.code, 0, `kubectl delete database ${db} went through: ${r.stdout}`);
  assert.ok(await get('Database', db), `Database ${db} is still there`);
  return r.stderr;
}

/** Once what held Database `db` is done, its mark goes. */
async function deletionAllowed(db: string): Promise<void> {
  await eventually(
    `Database ${db} no longer in use`,
    async () => ((await get('Database', db))?.['metadata']?.['labels']?.['crossplane.io/in-use'] ? undefined : true),
    90_000,
  );
}

async function backupIn(name: string, phase: string, timeoutMs = 90_000): Promise<Json> {
  return eventually(
    `DatabaseBackup ${name} ${phase}`,
    async () => {
      const b = await get('DatabaseBackup', name);
      return b?.['status']?.['phase'] === phase ? b : undefined;
    },
    timeoutMs,
  );
}

/** An Operation's spec: one step of this function, its Input naming `operation`. */
function pipelineOf(step: string, operation: Json): Json {
  return {
    mode: 'Pipeline',
    pipeline: [
      {
        step,
        functionRef: { name: 'function-platform' },
        input: { apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', operation },
      },
    ],
  };
}

/** Applies the Operation `name` and waits until Crossplane says it Succeeded. */
async function operationSucceeded(name: string, spec: Json, timeoutMs: number): Promise<Json> {
  const ref = { apiVersion: 'ops.crossplane.io/v1alpha1', kind: 'Operation', metadata: { name } };
  await cp.client.applyObj({ ...ref, spec }, { fieldManager: 'e2e', force: true });
  return eventually(
    `Operation ${name} Succeeded`,
    async () => {
      const o = await cp.client.getObj(ref);
      return conditionOf(o, 'Succeeded')?.['status'] === 'True' ? o : undefined;
    },
    timeoutMs,
  );
}

describe('backups under real Crossplane', { skip }, () => {
  // The next 03:00 UTC slot of the default schedule after now: the Database is created before it.
  const slot = new Date();
  slot.setUTCHours(3, 0, 0, 0);
  if (slot.getTime() <= Date.now()) slot.setUTCDate(slot.getUTCDate() + 1);
  const stamp = slot.toISOString().replace(/[-:T]/g, '').slice(0, 12);
  const scheduled = `orders-db-${stamp}`;

  before(async () => {
    setClock(new Date());
    // Crossplane's webhooks on, as its Helm chart runs them: Usages order deletions.
    cp = await controlPlaneForSuite({ functionEnv: { FUNCTION_PLATFORM_CLOCK_FILE: clockFile }, webhooks: true });
    await ensureNamespace(cp, NS);
    // The store's keys (the example's placeholders are refused with a warning since issue 26; nothing runs here).
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: Secret
metadata: {name: backup-store, namespace: ${NS}}
stringData: {AWS_ACCESS_KEY_ID: AKIAE2ESTORE0000001, AWS_SECRET_ACCESS_KEY: e2e-store-key-0123456789}
`,
    });
  });
  after(async () => {
    await cp?.stop();
  });

  test('a Database with an object store is Ready; no backup before its first slot; BackupHealthy says when', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'database', 'cluster.yaml')]);
    const db = await eventually('Database orders Ready', async () => {
      const d = await get('Database', 'orders');
      return d?.['status']?.['phase'] === 'Ready' ? d : undefined;
    });
    assert.equal(db['status']['backup']['nextScheduledTime'], slot.toISOString());
    assert.equal(conditionOf(db, 'BackupHealthy')?.['reason'], 'NoBackupYet');
    assert.deepEqual(await cp.client.listObjs('example.com/v1', 'DatabaseBackup', NS), []);
    assert.equal(await cp.client.getObj(ref('batch/v1', 'CronJob', 'orders-db-backup')), undefined);
  });

  test('the clock passes the slot: a DatabaseBackup appears, its Job runs, the pod succeeds: Completed, and the Database says so', async (t) => {
    const started = Date.now();
    setClock(new Date(slot.getTime() + 60_000));
    await nudge('orders');
    await eventually(`DatabaseBackup ${scheduled}`, () => get('DatabaseBackup', scheduled));
    const job = `${scheduled}-a1`;
    const jobObj = await eventually(`Job ${job}`, () => cp.client.getObj(ref('batch/v1', 'Job', job)));
    assert.equal(jobObj['spec']['template']['spec']['initContainers'][0]['resources']['limits']['memory'], '256Mi');
    const running = await backupIn(scheduled, 'Running');
    assert.match(
      String(running['status']['message']),
      /^dumping Database orders to s3:\/\/team-a-backups\/databases\/orders\//,
    );

    const key = `databases/orders/${scheduled}.dump`;
    await endPod(job, 'succeeded', { key, sizeBytes: 48211 });
    const done = await backupIn(scheduled, 'Completed');
    t.diagnostic(`slot passed to Completed: ${Date.now() - started} ms`);
    assert.equal(done['status']['location'], `s3://team-a-backups/${key}`);
    assert.equal(done['status']['sizeBytes'], 48211);
    assert.equal(done['status']['restorable'], true);
    assert.equal(done['status']['method'], 'dump');

    await nudge('orders');
    const db = await eventually('the Database records the backup', async () => {
      const d = await get('Database', 'orders');
      return d?.['status']?.['backup']?.['lastSuccessfulTime'] ? d : undefined;
    });
    assert.equal(db['status']['backup']['lastSuccessfulTime'], done['status']['completedAt']);
    assert.equal(db['status']['backup']['location'], 's3://team-a-backups/databases/orders/');
    assert.equal(conditionOf(db, 'BackupHealthy')?.['status'], 'True');
    const listed = (await cp.kubectl(['get', 'databasebackups', '-n', NS])).stdout;
    t.diagnostic(`kubectl get databasebackups -n ${NS}\n${listed}`);
    const rows = table(listed);
    assert.deepEqual(rows[0]!.slice(0, 5), ['NAME', 'DATABASE', 'PHASE', 'METHOD', 'COMPLETED']);
    assert.deepEqual(rows[1]!.slice(0, 4), [scheduled, 'orders', 'Completed', 'dump']);

    // Done, the backup holds the Database no more (from its next reconcile, made now).
    await nudge(scheduled, 'databasebackup');
    await deletionAllowed('orders');
  });

  test('a DatabaseBackup taken now, killed for memory: retried with twice the memory, then Completed', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'databasebackup', 'before-migration.yaml')]);
    const name = 'orders-before-migration';
    // While it is taken, the backup holds its Database: a deletion is refused, naming it (issue 32).
    const refusal = await deletionRefused('orders', `${name}-backup-holds-orders`);
    assert.match(
      refusal,
      new RegExp(
        `in-use by \\d+ usage\\(s\\), including the \\*v1beta1\\.Usage "${name}-backup-holds-orders" \\(in namespace "${NS}"\\) with reason: "DatabaseBackup ${name} is taking a backup of it`,
      ),
    );
    await endPod(`${name}-a1`, 'oom');
    const second = await eventually(
      `Job ${name}-a2`,
      () => cp.client.getObj(ref('batch/v1', 'Job', `${name}-a2`)),
      90_000,
    );
    assert.equal(second['spec']['template']['spec']['initContainers'][0]['resources']['limits']['memory'], '512Mi');
    const retrying = await backupIn(name, 'Running');
    assert.match(
      String(retrying['status']['message']),
      /attempt 2 of 3, with 512Mi after the last was killed for memory/,
    );
    await endPod(`${name}-a2`, 'succeeded', { key: `databases/orders/${name}.dump`, sizeBytes: 50000 });
    const done = await backupIn(name, 'Completed');
    assert.equal(done['status']['attempts'], 2);
    await nudge(name, 'databasebackup');
    await deletionAllowed('orders');
    // Done: the Job has done its part and goes; the record stays.
    await eventually(`Job ${name}-a2 gone`, async () =>
      (await cp.client.getObj(ref('batch/v1', 'Job', `${name}-a2`))) ? undefined : true,
    );
    assert.equal((await get('DatabaseBackup', name))?.['status']?.['phase'], 'Completed');
  });

  test('a Database restored from that backup: Restoring, its restore Job runs on the empty server, then Ready', async (t) => {
    const started = Date.now();
    const yaml = `apiVersion: example.com/v1
kind: Database
metadata: {name: orders-copy, namespace: ${NS}}
spec:
  engine: postgres
  storageGB: 20
  restore: {fromBackup: {name: ${scheduled}}}
  backup: {objectStore: {bucket: team-a-backups, region: eu-west-1, prefix: databases, credentialsSecretRef: {name: backup-store}}}
`;
    await cp.kubectl(['apply', '-f', '-'], { input: yaml });
    const restoring = await eventually('orders-copy Restoring with its Job', async () => {
      const d = await get('Database', 'orders-copy');
      const job = await cp.client.getObj(ref('batch/v1', 'Job', 'orders-copy-db-restore'));
      return d?.['status']?.['phase'] === 'Restoring' && job ? d : undefined;
    });
    assert.match(
      String(restoring['status']['message']),
      new RegExp(`^restoring orders-copy from DatabaseBackup ${scheduled} \\(postgres 17, 48211 bytes\\)`),
    );
    assert.equal(
      await cp.client.getObj(ref('v1', 'Secret', 'orders-copy-db-connection')),
      undefined,
      'no connection before the data',
    );
    // The API server keeps spec.restore as it was given.
    const changed = await cp.kubectl(
      [
        'patch',
        'database',
        'orders-copy',
        '-n',
        NS,
        '--type',
        'merge',
        '-p',
        '{"spec":{"restore":{"fromBackup":{"name":"other"}}}}',
      ],
      { allowFail: true },
    );
    assert.notEqual(changed.code, 0);
    assert.match(changed.stderr, /spec\.restore cannot change once the Database exists/);

    await endPod('orders-copy-db-restore', 'succeeded', undefined, ['download', 'restore']);
    const ready = await eventually('orders-copy Ready', async () => {
      const d = await get('Database', 'orders-copy');
      return d?.['status']?.['phase'] === 'Ready' ? d : undefined;
    });
    t.diagnostic(`apply to restored and Ready: ${Date.now() - started} ms`);
    assert.equal(ready['status']['restoredFrom'], scheduled);
    assert.ok(ready['status']['restorePoint']);
    assert.ok(await cp.client.getObj(ref('v1', 'Secret', 'orders-copy-db-connection')), 'the connection Secret now');
    await eventually('the restore Job gone', async () =>
      (await cp.client.getObj(ref('batch/v1', 'Job', 'orders-copy-db-restore'))) ? undefined : true,
    );
  });

  test('a DatabaseRestore of a serving Database: the restored instance beside the live one, its restore Job, the switch, the old volume kept', async (t) => {
    // A Database of its own: Crossplane's watch circuit breaker has not counted orders' events against it.
    const yaml = (doc: string) => cp.kubectl(['apply', '-f', '-'], { input: doc });
    await yaml(`apiVersion: example.com/v1
kind: Database
metadata: {name: ledger, namespace: ${NS}}
spec:
  engine: postgres
  storageGB: 20
  # A slot the moved clock has not passed: no scheduled backup runs beside the restore.
  backup: {schedule: "0 3 1 1 *", objectStore: {bucket: team-a-backups, region: eu-west-1, prefix: databases, credentialsSecretRef: {name: backup-store}}}
`);
    await eventually('Database ledger Ready', async () => {
      const d = await get('Database', 'ledger');
      return d?.['status']?.['phase'] === 'Ready' ? d : undefined;
    });
    await yaml(`apiVersion: example.com/v1
kind: DatabaseBackup
metadata: {name: ledger-before-import, namespace: ${NS}}
spec: {databaseRef: {name: ledger}}
`);
    await endPod('ledger-before-import-a1', 'succeeded', {
      key: 'databases/ledger/ledger-before-import.dump',
      sizeBytes: 1_234_567_890,
    });
    await backupIn('ledger-before-import', 'Completed');
    const before = await cp.client.getObj(ref('v1', 'Secret', 'ledger-db-connection'));

    const started = Date.now();
    const lap = (what: string) => t.diagnostic(`${what}: ${Date.now() - started} ms after the apply`);
    await yaml(`apiVersion: example.com/v1
kind: DatabaseRestore
metadata: {name: ledger-undo-import, namespace: ${NS}}
spec:
  databaseRef: {name: ledger}
  fromBackup: {name: ledger-before-import}
`);
    // The Database reads its DatabaseRestores when it reconciles: at its next poll (a minute), or now.
    await nudge('ledger');
    await eventually('StatefulSet ledger-db-r1', () => cp.client.getObj(ref('apps/v1', 'StatefulSet', 'ledger-db-r1')));
    lap('restored instance composed');
    const restoring = await eventually('ledger Restoring', async () => {
      const d = await get('Database', 'ledger');
      return d?.['status']?.['phase'] === 'Restoring' ? d : undefined;
    });
    assert.match(
      String(restoring['status']['message']),
      /^restoring ledger from DatabaseBackup ledger-before-import \(postgres 17, 1\.2 GB\) into ledger-db-r1/,
    );
    assert.equal(restoring['status']['ready'], true, 'the live instance serves during the restore');
    const service = () => cp.client.getObj(ref('v1', 'Service', 'ledger-db'));
    assert.equal((await service())?.['spec']['selector']['function-platform.dev/role'], 'server');

    const job = await eventually(
      'restore Job ledger-db-r1-restore',
      () => cp.client.getObj(ref('batch/v1', 'Job', 'ledger-db-r1-restore')),
      90_000,
    );
    lap('restore Job created (the restored instance ready)');
    const env = job['spec']['template']['spec']['containers'][0]['env'] as Json[];
    assert.equal(env.find((e) => e['name'] === 'HOST')?.['value'], `ledger-db-r1-headless.${NS}.svc.cluster.local`);
    assert.equal(
      (await service())?.['spec']['selector']['function-platform.dev/role'],
      'server',
      'no switch before the data',
    );
    // While the Database builds it, the restore holds it: a deletion is refused, naming the restore (issue 32).
    const refusal = await deletionRefused('ledger', 'ledger-undo-import-restore-holds-ledger');
    t.diagnostic(`kubectl delete database ledger, while it restores: ${refusal.trim()}`);
    assert.match(
      refusal,
      /with reason: "DatabaseRestore ledger-undo-import is restoring it into ledger-db-r1: delete the Database once it has switched/,
    );
    // KUBELET STAND-IN: the restore pod downloads and restores, and ends well.
    await endPod('ledger-db-r1-restore', 'succeeded', undefined, ['download', 'restore']);
    lap('restore pod ended');
    await eventually(
      'Service ledger-db selects the restored pods',
      async () =>
        (await service())?.['spec']['selector']['function-platform.dev/role'] === 'server-r1' ? true : undefined,
      90_000,
    );
    lap('switched');
    // The old StatefulSet goes once its volumes are seen retained; its claim stays, with the data from before.
    await eventually(
      'the old StatefulSet handed over',
      async () => ((await cp.client.getObj(ref('apps/v1', 'StatefulSet', 'ledger-db'))) ? undefined : true),
      90_000,
    );
    lap('old instance handed over');
    const claim = await cp.client.getObj(ref('v1', 'PersistentVolumeClaim', 'data-ledger-db-0'));
    assert.equal(claim?.['status']?.['phase'], 'Bound', 'the volume from before stays');
    const db = await eventually('ledger Ready on ledger-db-r1', async () => {
      const d = await get('Database', 'ledger');
      return d?.['status']?.['phase'] === 'Ready' && d['status']['instance'] === 'ledger-db-r1' ? d : undefined;
    });
    lap('Database Ready on the restored instance');
    assert.equal(db['status']['restore']['phase'], 'Switched');
    assert.match(
      String(db['status']['kept'][0]),
      /^PersistentVolumeClaim data-ledger-db-0 .*kubectl delete pvc data-ledger-db-0 -n team-a$/,
    );
    const after = await cp.client.getObj(ref('v1', 'Secret', 'ledger-db-connection'));
    assert.deepEqual(after?.['data'], before?.['data'], 'the connection Secret keeps its name, keys and values');

    await cp.kubectl([
      'annotate',
      'databaserestore',
      'ledger-undo-import',
      '-n',
      NS,
      `test.function-platform.dev/nudge=${Date.now()}`,
    ]);
    const done = await eventually('DatabaseRestore Switched', async () => {
      const r = await get('DatabaseRestore', 'ledger-undo-import');
      return r?.['status']?.['phase'] === 'Switched' ? r : undefined;
    });
    assert.equal(done['status']['instance'], 'ledger-db-r1');
    assert.equal(done['status']['previousInstance'], 'ledger-db');
    const listed = (await cp.kubectl(['get', 'databaserestores', '-n', NS])).stdout;
    t.diagnostic(`kubectl get databaserestores -n ${NS}\n${listed}`);
    assert.deepEqual(table(listed)[1]!.slice(0, 4), ['ledger-undo-import', 'ledger', 'Switched', 'ledger-db-r1']);
    // Its spec is held as given.
    const changed = await cp.kubectl(
      [
        'patch',
        'databaserestore',
        'ledger-undo-import',
        '-n',
        NS,
        '--type',
        'merge',
        '-p',
        '{"spec":{"fromBackup":{"name":"other"}}}',
      ],
      { allowFail: true },
    );
    assert.match(changed.stderr, /spec cannot be changed; make another DatabaseRestore/);

    // Switched: nothing holds the Database any more, and it can be deleted.
    await deletionAllowed('ledger');
    await cp.kubectl(['delete', 'database', 'ledger', '-n', NS, '--wait=false']);
    await eventually(
      'Database ledger deleted',
      async () => ((await get('Database', 'ledger')) ? undefined : true),
      90_000,
    );
  });

  // Issue 26: with undo-tuesday.yaml and from-backup.yaml applied (both refused for the example Database), a
  // valid DatabaseRestore stayed Pending for minutes, the Database naming the refused one as Failed; only
  // deleting both let it start.
  test('the restore queue with refused requests in front: they hold nothing up, their reason is a column, the valid one switches', async (t) => {
    const yaml = (doc: string) => cp.kubectl(['apply', '-f', '-'], { input: doc });
    await yaml(`apiVersion: example.com/v1
kind: Database
metadata: {name: shop, namespace: ${NS}}
spec:
  engine: postgres
  storageGB: 20
  backup: {schedule: "0 3 1 1 *", objectStore: {bucket: team-a-backups, region: eu-west-1, prefix: databases, credentialsSecretRef: {name: backup-store}}}
`);
    await eventually('Database shop Ready', async () => {
      const d = await get('Database', 'shop');
      return d?.['status']?.['phase'] === 'Ready' ? d : undefined;
    });
    await yaml(`apiVersion: example.com/v1
kind: DatabaseBackup
metadata: {name: shop-before-sale, namespace: ${NS}}
spec: {databaseRef: {name: shop}}
`);
    await finishJobPod(cp.client, NS, 'shop-before-sale-a1', { sizeBytes: 73_000 });
    await backupIn('shop-before-sale', 'Completed');

    const started = Date.now();
    // In front: a point in time of a StatefulSet, and a backup that never existed.
    await yaml(`apiVersion: example.com/v1
kind: DatabaseRestore
metadata: {name: shop-undo-tuesday, namespace: ${NS}}
spec: {databaseRef: {name: shop}, pointInTime: "2026-12-01T09:30:00Z"}
---
apiVersion: example.com/v1
kind: DatabaseRestore
metadata: {name: shop-back-to-0300, namespace: ${NS}}
spec: {databaseRef: {name: shop}, fromBackup: {name: shop-db-202612020300}}
`);
    await eventually('both refused', async () => {
      const a = await get('DatabaseRestore', 'shop-undo-tuesday');
      const b = await get('DatabaseRestore', 'shop-back-to-0300');
      return a?.['status']?.['phase'] === 'Refused' && b?.['status']?.['phase'] === 'Refused' ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 1000));
    await yaml(`apiVersion: example.com/v1
kind: DatabaseRestore
metadata: {name: shop-undo-sale, namespace: ${NS}}
spec: {databaseRef: {name: shop}, fromBackup: {name: shop-before-sale}}
`);
    await nudge('shop');
    const listed = async () => (await cp.kubectl(['get', 'databaserestores', '-n', NS])).stdout;
    const restoring = await eventually('the valid one restoring, the refused ones still there', async () => {
      const d = await get('Database', 'shop');
      return d?.['status']?.['restore']?.['name'] === 'shop-undo-sale' &&
        d['status']['restore']['phase'] === 'Restoring'
        ? d
        : undefined;
    });
    t.diagnostic(`refused in front, the valid one started: ${Date.now() - started} ms\n${await listed()}`);
    assert.match(String(restoring['status']['message']), /^restoring shop from DatabaseBackup shop-before-sale/);
    const rows = table(await listed());
    const header = rows[0]!;
    assert.deepEqual(header.slice(0, 6), ['NAME', 'DATABASE', 'PHASE', 'INSTANCE', 'RESTORE-POINT', 'MESSAGE']);
    const row = (name: string) => rows.find((r) => r[0] === name)!;
    assert.equal(row('shop-undo-tuesday')[2], 'Refused');
    assert.match(
      row('shop-undo-tuesday').join(' '),
      /refused: spec\.pointInTime: a Database in a StatefulSet restores from dumps/,
      'the reason is a column',
    );
    assert.equal(row('shop-back-to-0300')[2], 'Refused');
    assert.match(row('shop-back-to-0300').join(' '), /DatabaseBackup shop-db-202612020300, which does not exist/);

    await finishJobPod(cp.client, NS, 'shop-db-r1-restore');
    await eventually(
      'shop-undo-sale Switched',
      async () => {
        await cp.kubectl([
          'annotate',
          'databaserestore',
          'shop-undo-sale',
          '-n',
          NS,
          `test.function-platform.dev/nudge=${Date.now()}`,
          '--overwrite',
        ]);
        const r = await get('DatabaseRestore', 'shop-undo-sale');
        return r?.['status']?.['phase'] === 'Switched' ? r : undefined;
      },
      180_000,
      2_000,
    );
    t.diagnostic(`refused in front, the valid one switched: ${Date.now() - started} ms\n${await listed()}`);
    const db = await get('Database', 'shop');
    assert.equal(db?.['status']?.['instance'], 'shop-db-r1');
    assert.deepEqual(
      ((db?.['status']?.['restores'] ?? []) as Json[]).map((r) => r['name']),
      ['shop-undo-sale'],
    );
  });

  test('a fleet operation: an Operation step running backup-now asks for a pinned backup of each matched Database, lists them in its output, and they complete', async (t) => {
    await ensureNamespace(cp, 'team-b');
    await cp.kubectl(['label', 'database', 'orders', '-n', NS, 'fleet=nightly', '--overwrite']);
    const started = Date.now();
    const op = await operationSucceeded(
      'nightly-backups',
      pipelineOf('backup-now', { backupNow: { namespaces: [NS, 'team-b'], matchLabels: { fleet: 'nightly' } } }),
      90_000,
    );
    const output = op['status']['pipeline'][0]['output'];
    t.diagnostic(`Operation output: ${JSON.stringify(output)}`);
    assert.equal(output['operation'], 'backup-now');
    assert.deepEqual(output['namespaces'], [NS, 'team-b']);
    assert.equal(output['backups'].length, 1, 'only the labelled Database');
    const { database, backup } = output['backups'][0];
    assert.equal(database, 'orders');
    assert.deepEqual(
      op['status']['appliedResourceRefs'].map((r: Json) => `${r['kind']} ${r['namespace']}/${r['name']}`),
      [`DatabaseBackup ${NS}/${backup}`],
    );
    const asked = await eventually(`DatabaseBackup ${backup}`, () => get('DatabaseBackup', backup));
    assert.equal(asked['spec']['pinned'], true);
    assert.equal(asked['metadata']['labels']['function-platform.dev/backup-now'], output['label'].split('=')[1]);
    await endPod(`${backup}-a1`, 'succeeded', { key: `databases/orders/${backup}.dump`, sizeBytes: 51000 });
    await backupIn(backup, 'Completed');
    t.diagnostic(`Operation applied to its backup Completed: ${Date.now() - started} ms`);
  });

  test('a CronOperation runs the same step on its schedule: a later minute, a new pinned backup, Completed', async (t) => {
    // The function's clock an hour on: the step names its backups by that minute.
    setClock(new Date(slot.getTime() + 3_600_000));
    const started = Date.now();
    await cp.client.applyObj(
      {
        apiVersion: 'ops.crossplane.io/v1alpha1',
        kind: 'CronOperation',
        metadata: { name: 'every-minute-backups' },
        spec: {
          schedule: '* * * * *',
          concurrencyPolicy: 'Forbid',
          operationTemplate: {
            spec: pipelineOf('backup-now', {
              backupNow: { namespaces: [NS, 'team-b'], matchLabels: { fleet: 'nightly' } },
            }),
          },
        },
      },
      { fieldManager: 'e2e', force: true },
    );
    const op = await eventually(
      'an Operation of CronOperation every-minute-backups Succeeded',
      async () => {
        const ops = await cp.client.listObjs(
          'ops.crossplane.io/v1alpha1',
          'Operation',
          undefined,
          'ops.crossplane.io/cronoperation=every-minute-backups',
        );
        return ops.find((o) => conditionOf(o, 'Succeeded')?.['status'] === 'True');
      },
      150_000,
      1000,
    );
    // No second run while the test reads the first.
    await cp.kubectl(['delete', 'cronoperation', 'every-minute-backups']);
    const [asked] = op['status']['pipeline'][0]['output']['backups'];
    t.diagnostic(
      `CronOperation applied to its first Operation Succeeded: ${Date.now() - started} ms; it asked for ${asked['backup']}`,
    );
    assert.equal(asked['database'], 'orders');
    const later = new Date(slot.getTime() + 3_600_000).toISOString().replace(/[-:T]/g, '').slice(0, 12);
    assert.equal(
      asked['backup'],
      `orders-now-${later}`,
      'named for the minute the step ran in, not the Operation before',
    );
    await endPod(`${asked['backup']}-a1`, 'succeeded', {
      key: `databases/orders/${asked['backup']}.dump`,
      sizeBytes: 52000,
    });
    const done = await backupIn(asked['backup'], 'Completed');
    assert.equal(done['spec']['pinned'], true);
  });

  test('a fleet upgrade: Operations move two mysql Databases to 8.4, the canary alone first, each behind its pre-upgrade backup', async (t) => {
    const started = Date.now();
    for (const name of ['billing', 'stock'])
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1
kind: Database
metadata: {name: ${name}, namespace: ${NS}, labels: {fleet: mysql}}
spec:
  engine: mysql
  version: "8.0"
  storageGB: 1
  backup:
    objectStore: {bucket: team-a-backups, region: eu-west-1, prefix: databases, credentialsSecretRef: {name: backup-store}}
`,
      });
    const readyOn = (name: string, version: string) =>
      eventually(
        `Database ${name} Ready on mysql ${version}`,
        async () => {
          const d = await get('Database', name);
          return d?.['status']?.['ready'] === true && d?.['status']?.['version']?.['running'] === version
            ? d
            : undefined;
        },
        120_000,
      );
    await readyOn('billing', '8.0');
    await readyOn('stock', '8.0');
    /** One run of the fleet upgrade, as an Operation of its own; its step's output. */
    const run = async (n: number): Promise<Json> => {
      const op = await operationSucceeded(
        `mysql-84-run-${n}`,
        pipelineOf('upgrade', {
          upgrade: { namespaces: [NS], matchLabels: { fleet: 'mysql' }, engine: 'mysql', version: '8.4', waveSize: 2 },
        }),
        60_000,
      );
      return op['status']['pipeline'][0]['output'];
    };
    const names = (list: Json[]) => list.map((d) => d['database']);

    // Run 1: the canary alone (billing, first by name) is asked for 8.4.
    let out = await run(1);
    assert.deepEqual(names(out['asked']), ['billing']);
    assert.deepEqual(names(out['behind']), ['stock']);
    // Its pre-upgrade backup runs (this test plays the KUBELET for its pod), then the version moves.
    await endPod('billing-db-pre-8-4-a1', 'succeeded', {
      key: 'databases/billing/billing-db-pre-8-4.dump',
      sizeBytes: 4096,
    });
    // Run 2, while the canary is on its way or done: either way stock waits for the canary to run 8.4.
    const billing = await readyOn('billing', '8.4');
    assert.equal(billing['metadata']['annotations']['function-platform.dev/fleet-upgrade'], '8.4');
    out = await run(2);
    assert.deepEqual(names(out['done']), ['billing']);
    assert.deepEqual(names(out['asked']), ['stock'], 'the canary runs 8.4: the next wave');
    await endPod('stock-db-pre-8-4-a1', 'succeeded', { key: 'databases/stock/stock-db-pre-8-4.dump', sizeBytes: 4096 });
    await readyOn('stock', '8.4');
    out = await run(3);
    assert.deepEqual(names(out['done']), ['billing', 'stock']);
    assert.deepEqual(out['asked'], []);
    const events = (await cp.kubectl(['get', 'events', '-A', '--field-selector', 'involvedObject.name=mysql-84-run-3']))
      .stdout;
    assert.match(events, /upgrade to mysql 8\.4 complete: 2 Databases run it/);
    t.diagnostic(`two Databases created, upgraded by three Operations and said complete: ${Date.now() - started} ms`);
  });

  test('no function call refused a connection or failed', () => {
    const log = cp.functionLog();
    assert.doesNotMatch(log, /refusing|failed unexpectedly/);
  });
});
