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
import { compositionWithDatabaseDefaults, controlPlaneForSuite, ensureNamespace, eventually } from '../support/e2e.js';
import { samples } from '../support/prometheus.js';
import { evaluate, GIB, ruleFile, ruleOf, withLabels } from '../support/promtool.js';
import { toolsSkipReason } from '../support/tools.js';

const skip = realNodeSuiteSkipReason('e2e-real: a Database claim on a real node');
const promtoolSkip = skip
  ? undefined
  : toolsSkipReason('the storage alert over a real kubelet’s figures', ['promtool'], 'scripts/install-prometheus.sh');
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
async function serverPod(db = DB): Promise<string> {
  const pods = await cp.client.listObjs(
    'v1',
    'Pod',
    NS,
    `app.kubernetes.io/name=database,app.kubernetes.io/instance=${db}`,
  );
  const running = pods.find((p) => p['status']?.['phase'] === 'Running');
  if (!running) throw new Error(`no running server pod of ${db}`);
  return String(running['metadata']['name']);
}
async function sql(query: string, db = DB): Promise<string> {
  const r = await cp.kubectl([
    'exec',
    '-n',
    NS,
    await serverPod(db),
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

  test('with spec.maxStorageGB the volume grows by itself once rows fill it past growAtPercent, the rows stay; at the ceiling a warning and no change', async (t) => {
    const GROWING = 'growing';
    // The platform's Composition measuring every minute (the built-in is every 5).
    await compositionWithDatabaseDefaults(cp, 'xdatabases.example.com', 'xdatabases-measured.example.com', {
      storage: { measureEveryMinutes: 1 },
    });
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1
kind: Database
metadata: {name: ${GROWING}, namespace: ${NS}}
spec:
  compositionRef: {name: xdatabases-measured.example.com}
  engine: postgres
  storageGB: 1
  maxStorageGB: 2
  storage: {growAtPercent: 50}
  backup: {enabled: false}
`,
    });
    const first = await claimIn(
      'Database',
      GROWING,
      (c) => c['status']?.['ready'] === true && c['status']?.['storage']?.['usedPercent'] !== undefined,
      300_000,
    );
    t.diagnostic(`first measurement: ${JSON.stringify(first['status']['storage'])}`);
    const dataDir = '/var/lib/postgresql/data';
    const usedPercent = async (): Promise<number> => {
      const out = await cp.kubectl(['exec', '-n', NS, await serverPod(GROWING), '--', 'df', '-Pk', dataDir]);
      const [, , used, avail] = out.stdout.trim().split('\n').pop()!.trim().split(/\s+/).map(Number);
      return Math.ceil((used! * 100) / (used! + avail!));
    };
    // Rows of 1 MiB that PostgreSQL stores as they are (no compression), 40 at a time, until past 50 %.
    await sql(
      'CREATE TABLE fill (id int PRIMARY KEY, v text NOT NULL); ALTER TABLE fill ALTER COLUMN v SET STORAGE EXTERNAL',
      GROWING,
    );
    let rows = 0;
    let percentThen = await usedPercent();
    while (percentThen < 50) {
      await sql(
        `INSERT INTO fill SELECT g, repeat(md5(g::text), 32768) FROM generate_series(${rows + 1}, ${rows + 40}) g; CHECKPOINT`,
        GROWING,
      );
      rows += 40;
      assert.ok(rows < 1000, 'the volume fills');
      percentThen = await usedPercent();
    }
    // The moment the test saw the volume past the threshold: the growth is timed from here.
    const passed = Date.now();
    const digest = `SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(v), ',' ORDER BY id)) FROM fill`;
    const before = await sql(digest, GROWING);
    const grown = await claimIn(
      'Database',
      GROWING,
      (c) =>
        c['status']?.['storage']?.['capacityGB'] === 2 && c['status']?.['storage']?.['lastAutoGrowth']?.['toGB'] === 2,
      300_000,
    );
    const grewIn = Date.now() - passed;
    const df = await cp.kubectl(['exec', '-n', NS, await serverPod(GROWING), '--', 'df', '-Pk', dataDir]);
    const sizeKiB = Number(df.stdout.trim().split('\n').pop()!.trim().split(/\s+/)[1]);
    t.diagnostic(
      `${rows} rows of 1 MiB: ${percentThen}% used; threshold passed → volume grown to 2 GiB in ${grewIn} ms; the file system now ${sizeKiB} KiB; status.storage ${JSON.stringify(grown['status']['storage'])}`,
    );
    assert.ok(sizeKiB > 1.9 * 1024 * 1024, 'the mounted file system has 2 GiB');
    assert.equal(grown['status']['storage']['requestedGB'], 2);
    assert.equal(await sql(digest, GROWING), before, 'the rows are intact');
    const events = async (reason: string) =>
      JSON.parse(
        (await cp.kubectl(['get', 'events', '-A', '--field-selector', `reason=${reason}`, '-o', 'json'])).stdout,
      )['items'] as Json[];
    assert.ok((await events('AutoGrown')).length > 0, 'an AutoGrown event');

    // At the ceiling: a file fills the grown volume past 50 % again; it is said, and nothing changes.
    const pod = await serverPod(GROWING);
    await cp.kubectl([
      'exec',
      '-n',
      NS,
      pod,
      '--',
      'dd',
      'if=/dev/urandom',
      `of=${dataDir}/filler`,
      'bs=1M',
      'count=700',
    ]);
    const full = await usedPercent();
    const warned = await eventually(
      'a StorageNearlyFull warning',
      async () => ((await events('StorageNearlyFull')).length > 0 ? true : undefined),
      300_000,
    );
    assert.ok(warned);
    await new Promise((r) => setTimeout(r, 90_000));
    const still = await claim('Database', GROWING);
    const claimSize = (
      await cp.client.getObj({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: `data-${GROWING}-db-0`, namespace: NS },
      })
    )?.['spec']?.['resources']?.['requests']?.['storage'];
    t.diagnostic(`at the ceiling, ${full}% used: status.storage ${JSON.stringify(still?.['status']?.['storage'])}`);
    assert.equal(claimSize, '2Gi', 'the claim asks no more than the ceiling');
    assert.equal(still?.['status']?.['storage']?.['capacityGB'], 2);
    assert.equal(still?.['status']?.['ready'], true, 'a full disk is said; the database still serves');

    // The StorageNearlyFull alert over this very volume as the real kubelet measures it (its /metrics, through
    // the API server's node proxy, once its volume stats caught up with the filler), evaluated by promtool.
    if (promtoolSkip === undefined) {
      const claimName = `data-${GROWING}-db-0`;
      const node = String(
        (await cp.client.getObj({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: NS } }))?.['spec']?.[
          'nodeName'
        ],
      );
      const own = { namespace: NS, persistentvolumeclaim: claimName };
      const kubelet = await eventually(
        'the kubelet’s volume stats past 50 %',
        async () => {
          const text = (await cp.kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/metrics`])).stdout;
          const s = samples(text);
          const pick = (name: string) =>
            [...s].find(([k]) => k.startsWith(`${name}{`) && k.includes(`persistentvolumeclaim="${claimName}"`));
          const used = pick('kubelet_volume_stats_used_bytes');
          const capacity = pick('kubelet_volume_stats_capacity_bytes');
          return used && capacity && (used[1] * 100) / capacity[1] > 50 ? { used, capacity } : undefined;
        },
        180_000,
      );
      const percent = (kubelet.used[1] * 100) / kubelet.capacity[1];
      const scrape = { job: 'kubelet', metrics_path: '/metrics', node, instance: `${node}:10250` };
      const rule = ruleOf(
        {
          engine: 'postgres',
          storageGB: 1,
          maxStorageGB: 2,
          storage: { growAtPercent: 50 },
          backup: { enabled: false },
        },
        GROWING,
        NS,
      );
      const rules = ruleFile(rule);
      const annotations = (((rule['spec'] as Json)['groups'] as Json[])[0]!['rules'] as Json[]).find(
        (r) => r['alert'] === 'DatabaseStorageNearlyFull',
      )!['annotations'] as Record<string, string>;
      const result = evaluate(
        rules,
        new Date(),
        [
          // The real kubelet's samples, as scraped, with the labels a scrape of it adds.
          { series: withLabels(kubelet.used[0], scrape), values: `${kubelet.used[1]}x20` },
          { series: withLabels(kubelet.capacity[0], scrape), values: `${kubelet.capacity[1]}x20` },
          // STAND-IN for kube-state-metrics (not run here): the claim's request, as the API server has it.
          {
            series: withLabels(
              `kube_persistentvolumeclaim_resource_requests_storage_bytes{namespace="${NS}",persistentvolumeclaim="${claimName}"}`,
              { job: 'kube-state-metrics' },
            ),
            values: `${Number.parseInt(String(claimSize), 10) * GIB}x20`,
          },
        ],
        [
          { eval_time: '9m', alertname: 'DatabaseStorageNearlyFull', exp_alerts: [] },
          {
            eval_time: '10m',
            alertname: 'DatabaseStorageNearlyFull',
            exp_alerts: [
              {
                exp_labels: { severity: 'warning', database: GROWING, ...own },
                exp_annotations: {
                  ...annotations,
                  description: `Volume ${claimName} of Database ${GROWING} is ${percent.toFixed(0)}% used (spec.storage.growAtPercent is 50) and it already asks for spec.maxStorageGB (2Gi), so it grows no further: raise spec.maxStorageGB, or free space.`,
                },
              },
            ],
          },
        ],
      );
      t.diagnostic(
        `the real kubelet: ${percent.toFixed(1)}% used of ${kubelet.capacity[1]} bytes; promtool: ${result.out.trim()}`,
      );
      assert.equal(result.status, 0, result.out);
    }
    await cp.kubectl(['exec', '-n', NS, pod, '--', 'rm', '-f', `${dataDir}/filler`]);
    await cp.kubectl(['delete', 'database', GROWING, '-n', NS, '--wait=false']);
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
