// Databases in a StatefulSet on a real node, for both engines: the server runs
// in a real container on a real XFS volume, an application pod writes rows
// through the connection Secret (its host resolved by CoreDNS, reached through
// kube-proxy), the backup Jobs really dump and upload to the object store
// (moto's S3 API, reached from the pods), a DatabaseRestore really restores
// into a new generation and switches the Service, and the same application
// reads the rows back. The function's clock is a file this test moves, to pass
// a schedule slot without waiting for 03:00. Then, on the same control plane,
// PostgreSQL and MySQL over TLS from the platform's issuer (database-tls.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Json } from '../support/apiserver.js';
import {
  type ControlPlane,
  objectStoreSecret,
  objectStoreSpec,
  realNodeSuiteSkipReason,
} from '../support/control-plane.js';
import { controlPlaneForSuite, ensureNamespace, eventually, startApplicationPod } from '../support/e2e.js';
import { describeDatabaseTls } from './database-tls.js';

const skip = realNodeSuiteSkipReason('e2e-real: Databases on a real node');
const NS = 'team-a';
const ROWS = 10_000;
const clockFile = join(mkdtempSync(join(tmpdir(), 'fp-clock-')), 'now');
const setClock = (t: Date) => writeFileSync(clockFile, t.toISOString());

let cp: ControlPlane;
const ref = (kind: string, name: string) => ({ apiVersion: 'example.com/v1', kind, metadata: { name, namespace: NS } });
const get = (kind: string, name: string) => cp.client.getObj(ref(kind, name));

/** What differs between the engines for an application: its client, in the engine's own image. */
const ENGINES = {
  postgres: {
    image: 'postgres:17',
    // psql reads these from the environment; the values come from the connection Secret.
    env: { PGHOST: 'host', PGPORT: 'port', PGUSER: 'username', PGPASSWORD: 'password', PGDATABASE: 'dbname' },
    sql: (q: string) => `psql -v ON_ERROR_STOP=1 -tAq -c ${shellQuote(q)}`,
    create: `CREATE TABLE items (id int PRIMARY KEY, v text NOT NULL); INSERT INTO items SELECT g, md5(g::text) FROM generate_series(1, ${ROWS}) g`,
    digest: `SELECT count(*) || ' ' || md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM items`,
    /** The same query, in the server's own pod, as the database's user. */
    local: (q: string) =>
      `PGPASSWORD="$POSTGRES_PASSWORD" psql -h 127.0.0.1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -tAq -c ${shellQuote(q)}`,
  },
  mysql: {
    image: 'mysql:8.4',
    env: { DB_HOST: 'host', DB_PORT: 'port', DB_USER: 'username', MYSQL_PWD: 'password', DB_NAME: 'dbname' },
    sql: (q: string) => `mysql -N -B -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USER" "$DB_NAME" -e ${shellQuote(q)}`,
    // One INSERT of every row, made in the shell: MySQL and MariaDB differ in how they generate series.
    create: `CREATE TABLE items (id int PRIMARY KEY, v varchar(64) NOT NULL)`,
    digest: `SET SESSION group_concat_max_len = 67108864; SELECT CONCAT(COUNT(*), ' ', MD5(GROUP_CONCAT(CONCAT(id, ':', v) ORDER BY id SEPARATOR ','))) FROM items`,
    local: (q: string) =>
      `MYSQL_PWD="$MYSQL_PASSWORD" mysql -N -B -h 127.0.0.1 -u "$MYSQL_USER" "$MYSQL_DATABASE" -e ${shellQuote(q)}`,
  },
} as const;
type Engine = keyof typeof ENGINES;

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

async function exec(pod: string, script: string): Promise<string> {
  const r = await cp.kubectl(['exec', '-n', NS, pod, '--', 'sh', '-c', script]);
  return r.stdout.trim();
}

async function phaseOf(kind: string, name: string, phases: string[], timeoutMs = 180_000): Promise<Json> {
  return eventually(
    `${kind} ${name} ${phases.join(' or ')}`,
    async () => {
      const o = await get(kind, name);
      return phases.includes(o?.['status']?.['phase']) ? o : undefined;
    },
    timeoutMs,
    250,
  );
}

/** Makes Crossplane reconcile the Database now rather than at its next poll. */
async function nudge(name: string): Promise<void> {
  await cp.kubectl([
    'annotate',
    'database',
    name,
    '-n',
    NS,
    `test.function-platform.dev/nudge=${Date.now()}`,
    '--overwrite',
  ]);
}

/** The application: a pod of the engine's image whose environment is the connection Secret; it never restarts. */
async function startApplication(engine: Engine, name: string, secret: string): Promise<void> {
  const e = ENGINES[engine];
  const env = Object.entries(e.env).map(([variable, key]) => ({
    name: variable,
    valueFrom: { secretKeyRef: { name: secret, key } },
  }));
  await startApplicationPod(cp, NS, name, e.image, { env });
}

/** The object store's S3 client, for `use`. */
async function withS3<T>(use: (s3: S3Client) => Promise<T>): Promise<T> {
  const store = cp.objectStore!;
  const s3 = new S3Client({
    endpoint: store.endpoint,
    region: store.region,
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  try {
    return await use(s3);
  } finally {
    s3.destroy();
  }
}
const s3Location = (location: string) => {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(location)!;
  return { Bucket: m[1]!, Key: m[2]! };
};

/** The stored object of a backup, and the SHA-256 the upload stored with it. */
async function storedObject(location: string): Promise<{ bytes: Buffer; sha256: string | undefined }> {
  return withS3(async (s3) => {
    const o = await s3.send(new GetObjectCommand(s3Location(location)));
    return { bytes: Buffer.from(await o.Body!.transformToByteArray()), sha256: o.Metadata?.['sha256'] };
  });
}

/** Damage at rest: the stored object's bytes changed in place, the SHA-256 stored with it kept. */
async function damage(location: string): Promise<void> {
  const { bytes, sha256 } = await storedObject(location);
  const rotten = Buffer.from(bytes);
  for (let i = 64; i < rotten.length; i += 997) rotten[i] = rotten[i]! ^ 0xff;
  await withS3((s3) =>
    s3.send(new PutObjectCommand({ ...s3Location(location), Body: rotten, Metadata: sha256 ? { sha256 } : {} })),
  );
}

/** The drill Jobs of a DatabaseBackup that still exist, and their pods. */
async function drillLeftovers(backup: string): Promise<string[]> {
  const jobs = await cp.client.listObjs('batch/v1', 'Job', NS);
  const pods = await cp.client.listObjs('v1', 'Pod', NS);
  return [...jobs, ...pods].map((o) => String(o['metadata']['name'])).filter((n) => n.startsWith(`${backup}-verify-`));
}

/**
 * A new Database `name` made from `restore` (spec.restore), deleted with its data (Delete), backing up to the
 * run's object store, whose dumps it reads: the same store here.
 */
async function applyMadeFrom(engine: Engine, name: string, restore: Json, backup: Json = {}): Promise<void> {
  const database = {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name, namespace: NS },
    spec: {
      engine,
      storageGB: 1,
      backup: { objectStore: objectStoreSpec(cp.objectStore!), ...backup },
      restore,
      deletionPolicy: 'Delete',
    },
  };
  await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(database) });
}

describe('Databases in a StatefulSet on a real node', { skip }, () => {
  before(async () => {
    setClock(new Date());
    // Crossplane's webhooks on, as its Helm chart runs them: a Database deleted under Delete takes its last dump.
    cp = await controlPlaneForSuite({
      realNodes: true,
      webhooks: true,
      functionEnv: { FUNCTION_PLATFORM_CLOCK_FILE: clockFile },
    });
    await ensureNamespace(cp, NS);
    await cp.client.applyObj(
      { ...objectStoreSecret(cp.objectStore!), metadata: { name: 'backup-store', namespace: NS } },
      { fieldManager: 'e2e-real', force: true },
    );
  });
  after(async () => {
    await cp?.stop();
  });

  for (const engine of ['postgres', 'mysql'] as const) {
    const db = engine === 'postgres' ? 'orders' : 'shop';
    const e = ENGINES[engine];
    const app = `${db}-app`;
    let original = '';
    let scheduled = '';

    test(`${engine}: the Database accepts connections; an application writes ${ROWS} rows through the connection Secret`, async (t) => {
      const store = cp.objectStore!;
      const started = Date.now();
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1
kind: Database
metadata: {name: ${db}, namespace: ${NS}}
spec:
  engine: ${engine}
  storageGB: 1
  backup:
    objectStore:
      bucket: ${store.bucket}
      region: ${store.region}
      endpoint: ${store.endpoint}
      prefix: databases
      credentialsSecretRef: {name: backup-store}
`,
      });
      const ready = await phaseOf('Database', db, ['Ready']);
      const accepting = Date.now() - started;
      const secret = String(ready['status']['connectionSecret']);
      await startApplication(engine, app, secret);
      const writeStarted = Date.now();
      if (engine === 'postgres') await exec(app, e.sql(e.create));
      else
        await exec(
          app,
          `${e.sql(e.create)} && { echo 'INSERT INTO items VALUES'; seq 1 ${ROWS} | awk '{printf "%s(%d, md5(%d))", (NR > 1 ? "," : ""), $1, $1}'; echo ';'; } | mysql -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USER" "$DB_NAME"`,
        );
      original = await exec(app, e.sql(e.digest));
      t.diagnostic(
        `apply to accepting connections: ${accepting} ms; ${ROWS} rows written in ${Date.now() - writeStarted} ms through ${ready['status']['host']}; count and digest: ${original}`,
      );
      assert.match(original, new RegExp(`^${ROWS} [0-9a-f]{32}$`));
    });

    test(`${engine}: a scheduled backup and one taken now really dump and upload; each object is in the store with its SHA-256`, async (t) => {
      const next = String((await get('Database', db))?.['status']?.['backup']?.['nextScheduledTime']);
      assert.ok(!Number.isNaN(Date.parse(next)), `the Database names its next slot (${next})`);
      const started = Date.now();
      setClock(new Date(Date.parse(next) + 60_000));
      await nudge(db);
      // The backup of that slot, by the name the Database gives it (<db>-db-YYYYMMDDHHMM): the clock only moves
      // forward, so a Database created after an earlier move may have taken one for an earlier slot at once.
      scheduled = `${db}-db-${next.replace(/[-:T]/g, '').slice(0, 12)}`;
      await eventually(`the scheduled DatabaseBackup ${scheduled}`, () => get('DatabaseBackup', scheduled), 90_000);
      const scheduledDone = await phaseOf('DatabaseBackup', scheduled, ['Completed', 'Failed']);
      const scheduledMs = Date.now() - started;
      assert.equal(scheduledDone['status']['phase'], 'Completed', String(scheduledDone['status']['message']));

      const nowStarted = Date.now();
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: ${db}-now, namespace: ${NS}}\nspec: {databaseRef: {name: ${db}}, pinned: true}\n`,
      });
      const onDemand = await phaseOf('DatabaseBackup', `${db}-now`, ['Completed', 'Failed']);
      assert.equal(onDemand['status']['phase'], 'Completed', String(onDemand['status']['message']));
      const onDemandMs = Date.now() - nowStarted;
      for (const b of [scheduledDone, onDemand]) {
        const { bytes, sha256 } = await storedObject(String(b['status']['location']));
        assert.equal(bytes.length, b['status']['sizeBytes'], `${b['metadata']['name']}: the size it reports is stored`);
        assert.equal(sha256, createHash('sha256').update(bytes).digest('hex'), 'stored with its SHA-256');
        if (engine === 'mysql') assert.match(bytes.toString('utf8').slice(-200), /-- Dump completed/);
        else assert.equal(bytes.subarray(0, 5).toString('latin1'), 'PGDMP', 'a pg_dump custom-format archive');
      }
      t.diagnostic(
        `scheduled ${scheduled}: slot passed to Completed ${scheduledMs} ms (${scheduledDone['status']['sizeBytes']} bytes); ${db}-now: applied to Completed ${onDemandMs} ms (${onDemand['status']['sizeBytes']} bytes)`,
      );
    });

    test(`${engine}: the Database drills its newest backup: restored into a scratch server, its ${ROWS} rows counted, nothing of the drill left; a backup damaged in the store fails its drill saying so`, async (t) => {
      // Drills every minute of the function's clock (weekly by default, and the week's may have gone to an
      // earlier backup): the newest Completed scheduled backup is drilled next.
      await cp.kubectl([
        'patch',
        'database',
        db,
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { backup: { verify: { schedule: '* * * * *' } } } }),
      ]);
      await nudge(db);
      const started = Date.now();
      const drilled = await eventually(
        `the restore drill of ${scheduled}`,
        async () => {
          const v = (await get('DatabaseBackup', scheduled))?.['status']?.['verification'];
          return v && ['Passed', 'Failed'].includes(v['result']) ? v : undefined;
        },
        300_000,
        1000,
      );
      const drillMs = Date.now() - started;
      assert.equal(drilled['result'], 'Passed', String(drilled['reason']));
      assert.equal(drilled['rows'], ROWS, 'every row of the backup counted in the scratch server');
      assert.equal(drilled['tables'], 1);
      // Crossplane writes the composite's status and its conditions in two updates, and an earlier backup (taken
      // at creation) may have been drilled first: wait for this drill in both.
      const reported = await eventually(
        'the Database reports the drill',
        async () => {
          const d = await get('Database', db);
          const verified = ((d?.['status']?.['conditions'] ?? []) as Json[]).find(
            (c) => c['type'] === 'BackupVerified',
          );
          return d?.['status']?.['backup']?.['lastVerification']?.['backup'] === scheduled &&
            String(verified?.['message']).includes(scheduled)
            ? d
            : undefined;
        },
        120_000,
      );
      const verified = (reported['status']['conditions'] as Json[]).find((c) => c['type'] === 'BackupVerified');
      assert.equal(verified?.['status'], 'True', String(verified?.['message']));
      assert.equal(reported['status']['backup']['lastVerification']['result'], 'Passed');
      assert.equal(reported['status']['backup']['lastVerification']['rows'], ROWS);
      await eventually(
        'the drill Job and its pod gone',
        async () => ((await drillLeftovers(scheduled)).length === 0 ? true : undefined),
        120_000,
      );
      t.diagnostic(
        `drill of ${scheduled}: asked to Passed ${drillMs} ms (the Job's own ${drilled['durationSeconds']} s), ${drilled['tables']} table, ${drilled['rows']} rows; status.backup.lastVerification ${JSON.stringify(reported['status']['backup']['lastVerification'])}`,
      );

      // A backup whose object rots in the store: its drill fails with the reason, and leaves nothing behind.
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: ${db}-rot, namespace: ${NS}}\nspec: {databaseRef: {name: ${db}}, pinned: true}\n`,
      });
      const rot = await phaseOf('DatabaseBackup', `${db}-rot`, ['Completed', 'Failed']);
      assert.equal(rot['status']['phase'], 'Completed', String(rot['status']['message']));
      await damage(String(rot['status']['location']));
      await cp.kubectl([
        'patch',
        'databasebackup',
        `${db}-rot`,
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { verification: { requested: 'after-rot' } } }),
      ]);
      const failed = await eventually(
        `the restore drill of ${db}-rot`,
        async () => {
          const v = (await get('DatabaseBackup', `${db}-rot`))?.['status']?.['verification'];
          return v && ['Passed', 'Failed'].includes(v['result']) ? v : undefined;
        },
        300_000,
        1000,
      );
      assert.equal(failed['result'], 'Failed');
      assert.match(String(failed['reason']), /damaged at rest/);
      await eventually(
        'the failed drill Job and its pod gone',
        async () => ((await drillLeftovers(`${db}-rot`)).length === 0 ? true : undefined),
        120_000,
      );
      t.diagnostic(`drill of ${db}-rot after damage: ${failed['reason']}`);
    });

    test(`${engine}: rows deleted, a DatabaseRestore from the backup switches the Service, and the same application reads every row back`, async (t) => {
      await exec(app, e.sql('DELETE FROM items WHERE id > 5000'));
      assert.match(await exec(app, e.sql(e.digest)), /^5000 /);
      const started = Date.now();
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1\nkind: DatabaseRestore\nmetadata: {name: ${db}-undo, namespace: ${NS}}\nspec: {databaseRef: {name: ${db}}, fromBackup: {name: ${db}-now}}\n`,
      });
      // The Database learns of a new DatabaseRestore when it reconciles: at once, rather than at its next poll.
      await nudge(db);
      const switched = await phaseOf('DatabaseRestore', `${db}-undo`, ['Switched', 'Failed'], 300_000);
      assert.equal(switched['status']['phase'], 'Switched', String(switched['status']['message']));
      const switchMs = Date.now() - started;
      // The application was never restarted: its connection settings are the same, the Service now selects the restored pods.
      const back = await eventually(
        'the application reads the restored rows',
        async () => {
          const d = await exec(app, e.sql(e.digest)).catch(() => '');
          return d === original ? d : undefined;
        },
        60_000,
        500,
      );
      const pods = await cp.client.listObjs(
        'v1',
        'Pod',
        NS,
        `app.kubernetes.io/name=database,app.kubernetes.io/instance=${db}`,
      );
      t.diagnostic(
        `DatabaseRestore applied to Switched: ${switchMs} ms; the application reads ${back} (as before the delete); server pods now: ${pods.map((p) => p['metadata']['name']).join(', ')}`,
      );
      assert.equal(back, original);
      const restarted = await cp.client.getObj({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: app, namespace: NS },
      });
      assert.equal(
        restarted?.['status']?.['containerStatuses']?.[0]?.['restartCount'],
        0,
        'the application never restarted',
      );
    });

    test(`${engine}: a new Database made from the backup holds the same rows`, async (t) => {
      const started = Date.now();
      await applyMadeFrom(engine, `${db}-copy`, { fromBackup: { name: scheduled } });
      await phaseOf('Database', `${db}-copy`, ['Ready']);
      const pod = (
        await cp.client.listObjs(
          'v1',
          'Pod',
          NS,
          `app.kubernetes.io/name=database,app.kubernetes.io/instance=${db}-copy`,
        )
      )[0]!;
      const copied = await exec(String(pod['metadata']['name']), e.local(e.digest));
      t.diagnostic(`apply to Ready with the rows: ${Date.now() - started} ms; ${copied}`);
      assert.equal(copied, original);

      // Deleted under Delete: its waiting pod takes a last dump first, while Usages keep the server up. (The node
      // has two CPUs and every server asks a quarter of one: the copy goes, so the TLS tests that follow have room
      // for a restore's second generation.)
      const standing = await eventually(
        `${db}-copy's last-dump pod standing`,
        async () => {
          const said = (await get('Database', `${db}-copy`))?.['status']?.['deletion'];
          return said?.['lastDump']?.['standing'] === true ? said : undefined;
        },
        120_000,
        500,
      );
      const lastDump = String(standing['lastDump']['location']);
      t.diagnostic(`status.deletion.keeps: ${standing['keeps']}`);
      // Written just before the deletion, after every backup: only a dump taken as the Database goes holds it.
      const marker = `written_just_before_delete_${Date.now()}`;
      await exec(String(pod['metadata']['name']), e.local(`CREATE TABLE ${marker} (id int PRIMARY KEY)`));
      const deleting = Date.now();
      // Its first scheduled backup may be running (the clock is past the slot): that holds the Database, and the
      // refusal says so; delete again once it is done, as a user would.
      await eventually(
        `kubectl delete database ${db}-copy accepted`,
        async () => {
          const r = await cp.kubectl(['delete', 'database', `${db}-copy`, '-n', NS, '--wait=false'], {
            allowFail: true,
          });
          if (r.code === 0) return true;
          assert.match(r.stderr, /in-use by .*backup-holds-/, r.stderr);
          return undefined;
        },
        120_000,
        2000,
      );
      // The server is held while the dump runs: Crossplane's webhook refuses the garbage collector's deletion
      // of the StatefulSet (and records the attempt on it) while the last-dump pod is going.
      const podName = String(standing['lastDump']['pod']);
      const held = await eventually(
        `${db}-copy's StatefulSet refused to the garbage collector while ${podName} dumps`,
        async () => {
          const sts = (
            await cp.client.listObjs('apps/v1', 'StatefulSet', NS, `app.kubernetes.io/instance=${db}-copy`)
          )[0];
          const dumping = await cp.client.getObj({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: podName, namespace: NS },
          });
          const refused = sts?.['metadata']?.['annotations']?.['usage.crossplane.io/deletion-attempt-with-policy'];
          return refused && dumping?.['metadata']?.['deletionTimestamp'] ? { sts, refused } : undefined;
        },
        60_000,
        100,
      );
      assert.equal(held.sts['metadata']['deletionTimestamp'], undefined, 'the server is not being deleted');
      await eventually(
        `the server of ${db}-copy gone`,
        async () =>
          (
            await cp.client.listObjs(
              'v1',
              'Pod',
              NS,
              `app.kubernetes.io/name=database,app.kubernetes.io/instance=${db}-copy`,
            )
          ).length === 0
            ? true
            : undefined,
        120_000,
      );
      const goneMs = Date.now() - deleting;
      // The last dump is in the store, whole (its SHA-256 as the upload stored it), and holds what was written
      // just before the deletion: the marker table is in the dump's table of contents (plain text in both formats).
      const stored = await eventually(
        `the last dump at ${lastDump}`,
        async () => storedObject(lastDump).catch(() => undefined),
        60_000,
        1000,
      );
      assert.equal(stored.sha256, createHash('sha256').update(stored.bytes).digest('hex'));
      assert.ok(stored.bytes.includes(marker), `the last dump holds table ${marker}, made just before the deletion`);
      if (engine === 'postgres') assert.equal(stored.bytes.subarray(0, 5).toString(), 'PGDMP');
      else assert.match(stored.bytes.subarray(-200).toString(), /-- Dump completed/);
      assert.equal(
        (await cp.client.listObjs('v1', 'Pod', NS, `app.kubernetes.io/instance=${db}-copy`)).length,
        0,
        'the last-dump pod is gone with the server',
      );
      t.diagnostic(
        `deleted (deletionPolicy Delete) to its server gone, the last dump taken first: ${goneMs} ms; ${stored.bytes.length} bytes at ${lastDump}`,
      );

      // Made again from that last dump (no DatabaseBackup records it): the same rows, and the table made just
      // before the deletion. Then it goes too, keeping nothing, to leave the node's CPUs to the TLS tests.
      const again = Date.now();
      await applyMadeFrom(engine, `${db}-again`, { fromDump: { location: lastDump } }, { finalSnapshot: false });
      const made = await phaseOf('Database', `${db}-again`, ['Ready']);
      assert.equal(made['status']['restoredFrom'], lastDump);
      const serverOf = async (name: string) =>
        (
          await cp.client.listObjs(
            'v1',
            'Pod',
            NS,
            `app.kubernetes.io/name=database,app.kubernetes.io/instance=${name}`,
          )
        )[0];
      const againPod = String((await serverOf(`${db}-again`))!['metadata']['name']);
      assert.equal(await exec(againPod, e.local(e.digest)), original, 'the rows the deleted Database held');
      const tables = await exec(
        againPod,
        e.local(
          engine === 'postgres'
            ? `SELECT count(*) FROM pg_tables WHERE tablename = '${marker}'`
            : `SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '${marker}'`,
        ),
      );
      assert.equal(tables, '1', `table ${marker}, made just before the deletion, is there`);
      t.diagnostic(`made again from the last dump, apply to Ready with the rows: ${Date.now() - again} ms`);
      await cp.kubectl(['delete', 'database', `${db}-again`, '-n', NS, '--wait=false']);
      await eventually(
        `the server of ${db}-again gone`,
        async () => ((await serverOf(`${db}-again`)) ? undefined : true),
        120_000,
      );
    });
  }

  describeDatabaseTls(() => cp);
});
