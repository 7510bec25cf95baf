// A Database claim on a real node (claims mode: the legacy XRDs and
// provider-kubernetes v0.17.1, which serves the Object that grows a volume),
// through what a database's life brings: a backup Job really killed for
// memory and retried with more, the data volume really grown (an XFS file
// system resized online by the volume provisioner stand-in, which plays the
// CSI driver's resizer and node plugin), and a deletion under Retain that
// leaves the volume's files and the credentials for the next Database of the
// same name.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, objectStoreSecret, realNodeSuiteSkipReason } from '../support/control-plane.js';
import { controlPlaneForSuite, ensureNamespace, eventually } from '../support/e2e.js';

const skip = realNodeSuiteSkipReason('e2e-real: a Database claim on a real node');
const NS = 'team-b';
const DB = 'ledger';

let cp: ControlPlane;
const claim = (kind: string, name: string) =>
  cp.client.getObj({ apiVersion: 'example.com/v1', kind, metadata: { name, namespace: NS } });

async function claimIn(kind: string, name: string, ok: (c: Json) => boolean, timeoutMs = 180_000): Promise<Json> {
  return eventually(
    `${kind} ${name}`,
    async () => {
      const c = await claim(kind, name);
      return c && ok(c) ? c : undefined;
    },
    timeoutMs,
    250,
  );
}

/** The server pod of the Database, and a query run in it as the database's user. */
async function serverPod(): Promise<string> {
  const pods = await cp.client.listObjs(
    'v1',
    'Pod',
    NS,
    `app.kubernetes.io/name=database,app.kubernetes.io/instance=${DB}`,
  );
  const running = pods.find((p) => p['status']?.['phase'] === 'Running');
  if (!running) throw new Error(`no running server pod of ${DB}`);
  return String(running['metadata']['name']);
}
async function sql(query: string): Promise<string> {
  const r = await cp.kubectl([
    'exec',
    '-n',
    NS,
    await serverPod(),
    '--',
    'sh',
    '-c',
    `PGPASSWORD="$POSTGRES_PASSWORD" psql -v ON_ERROR_STOP=1 -h 127.0.0.1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -tAq -c '${query.replace(/'/g, `'\\''`)}'`,
  ]);
  return r.stdout.trim();
}
const DIGEST = `SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM items`;

function databaseYaml(storageGB: number): string {
  const store = cp.objectStore!;
  return `apiVersion: example.com/v1
kind: Database
metadata: {name: ${DB}, namespace: ${NS}}
spec:
  engine: postgres
  storageGB: ${storageGB}
  size: medium
  backup:
    objectStore:
      bucket: ${store.bucket}
      region: ${store.region}
      endpoint: ${store.endpoint}
      credentialsSecretRef: {name: backup-store}
`;
}

describe('a Database claim on a real node', { skip }, () => {
  let original = '';
  before(async () => {
    cp = await controlPlaneForSuite({ realNodes: true, claims: true });
    await ensureNamespace(cp, NS);
    await cp.client.applyObj(
      { ...objectStoreSecret(cp.objectStore!), metadata: { name: 'backup-store', namespace: NS } },
      { fieldManager: 'e2e-real', force: true },
    );
    await cp.kubectl(['apply', '-f', '-'], { input: databaseYaml(1) });
    await claimIn('Database', DB, (c) => c['status']?.['phase'] === 'Ready');
    await sql(
      'CREATE TABLE items (id int PRIMARY KEY, v text NOT NULL); INSERT INTO items SELECT g, md5(g::text) FROM generate_series(1, 1000) g',
    );
    original = await sql(DIGEST);
  });
  after(async () => {
    await cp?.stop();
  });

  test('a backup whose dump needs more memory than its first attempt has: really OOM-killed, retried with twice the memory, Completed', async (t) => {
    // One value of 160 MiB: tiny on disk (it compresses), whole in pg_dump's memory twice over while it is copied out.
    await sql(`CREATE TABLE big (v text); INSERT INTO big SELECT repeat('x', 160 * 1024 * 1024)`);
    const started = Date.now();
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: ${DB}-big, namespace: ${NS}}\nspec: {databaseRef: {name: ${DB}}}\n`,
    });
    const messages = new Set<string>();
    const done = await claimIn(
      'DatabaseBackup',
      `${DB}-big`,
      (b) => {
        if (b['status']?.['message']) messages.add(String(b['status']['message']));
        return ['Completed', 'Failed'].includes(b['status']?.['phase']);
      },
      300_000,
    );
    t.diagnostic(
      `applied to ${done['status']['phase']} in ${Date.now() - started} ms after ${done['status']['attempts']} attempts; said on the way: ${[...messages].join(' | ')}`,
    );
    assert.equal(done['status']['phase'], 'Completed', String(done['status']['message']));
    assert.equal(done['status']['attempts'], 2, 'the first attempt was killed for memory, the second completed');
    assert.ok(
      [...messages].some((m) => /attempt 2 of 3, with 512Mi after the last was killed for memory/.test(m)),
      `the DatabaseBackup said why it tried again: ${[...messages].join(' | ')}`,
    );
    await sql('DROP TABLE big');
  });

  test('the Database grows from 1 to 2 GB: the claim and the real file system grow, and the rows stay', async (t) => {
    const started = Date.now();
    const dfBefore = await cp.kubectl([
      'exec',
      '-n',
      NS,
      await serverPod(),
      '--',
      'df',
      '-k',
      '/var/lib/postgresql/data',
    ]);
    await cp.kubectl(['patch', 'database', DB, '-n', NS, '--type', 'merge', '-p', '{"spec":{"storageGB":2}}']);
    const grown = await claimIn(
      'Database',
      DB,
      (c) => c['status']?.['phase'] === 'Ready' && c['status']?.['storage']?.['capacityGB'] === 2,
    );
    const df = await cp.kubectl(['exec', '-n', NS, await serverPod(), '--', 'df', '-k', '/var/lib/postgresql/data']);
    const sizeKiB = (out: string) => Number(out.trim().split('\n').pop()!.trim().split(/\s+/)[1]);
    t.diagnostic(
      `patch to Ready at 2 GB: ${Date.now() - started} ms; the file system in the pod: ${sizeKiB(dfBefore.stdout)} KiB → ${sizeKiB(df.stdout)} KiB; ${grown['status']['message']}`,
    );
    assert.ok(sizeKiB(df.stdout) > 1.9 * 1024 * 1024, 'the mounted file system has 2 GiB');
    assert.ok(sizeKiB(dfBefore.stdout) < 1.1 * 1024 * 1024);
    assert.equal(await sql(DIGEST), original);
  });

  test('deleted under Retain: the volume files and the credentials stay; a Database of the same name opens them and the rows are there', async (t) => {
    const pvcRef = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `data-${DB}-db-0`, namespace: NS },
    };
    const pvc = await cp.client.getObj(pvcRef);
    const pv = await cp.client.getObj({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: String(pvc!['spec']['volumeName']) },
    });
    const path = String(pv!['spec']['local']['path']);
    const credentials = { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${DB}-db-credentials`, namespace: NS } };
    const password = (await cp.client.getObj(credentials))?.['data']?.['password'];
    await cp.kubectl(['delete', 'database', DB, '-n', NS, '--wait=false']);
    await eventually(
      'the server pod gone',
      async () =>
        (await cp.client.listObjs('v1', 'Pod', NS, `app.kubernetes.io/name=database,app.kubernetes.io/instance=${DB}`))
          .length === 0
          ? true
          : undefined,
      180_000,
    );
    await eventually('the claim gone', async () => ((await claim('Database', DB)) ? undefined : true), 120_000);
    assert.ok(existsSync(join(path, 'pgdata', 'PG_VERSION')), `the data files are still in the volume (${path})`);
    assert.equal((await cp.client.getObj(pvcRef))?.['status']?.['phase'], 'Bound', 'the data claim is kept');
    assert.equal((await cp.client.getObj(credentials))?.['data']?.['password'], password, 'the credentials are kept');

    const started = Date.now();
    await cp.kubectl(['apply', '-f', '-'], { input: databaseYaml(2) });
    await claimIn('Database', DB, (c) => c['status']?.['phase'] === 'Ready');
    const rows = await sql(DIGEST);
    t.diagnostic(`created again to Ready: ${Date.now() - started} ms; the rows: ${rows}`);
    assert.equal(rows, original);
  });
});
