// The platform's defaults under the Crossplane that users run: a Composition
// whose step Input names a default object store, schedule, retention and
// volume class (as examples/database/composition-with-platform-defaults.yaml
// shows a platform team), and a Database that says only its engine and size.
// It gets Ready, says where its backups go (source platform), and its
// scheduled backup's Job writes to the platform's store.
//
// Stand-in, named so: kwok runs no containers, so finishJobPod (the KUBELET
// STAND-IN of test/support/kwok-kubelet.ts) ends the backup's pod as a kubelet
// reports it. Everything else is the real thing.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { readFileSync } from 'node:fs';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, controlPlaneSkipReason } from '../support/control-plane.js';
import { conditionOf, controlPlaneForSuite, ensureNamespace, eventually, readyAndSynced } from '../support/e2e.js';
import { finishJobPod } from '../support/kwok-kubelet.js';
import { repoRoot } from '../../dev/infra/paths.js';

const skip = controlPlaneSkipReason("e2e: the platform's defaults under real Crossplane");
const NS = 'team-a';
const COMPOSITION = 'databases-platform.example.com';
const clockFile = join(mkdtempSync(join(tmpdir(), 'fp-clock-')), 'now');

let cp: ControlPlane;
const ref = (apiVersion: string, kind: string, name: string) => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS },
});
const get = (kind: string, name: string) => cp.client.getObj(ref('example.com/v1', kind, name));

/**
 * The example Composition with the platform's defaults, under a name of its
 * own beside the one the Configuration installs (which the package manager
 * owns), and the run's StorageClass `fixed` as the volume class.
 */
function platformComposition(): string {
  const doc = parse(
    readFileSync(join(repoRoot, 'examples', 'database', 'composition-with-platform-defaults.yaml'), 'utf8'),
  ) as Json;
  doc['metadata']['name'] = COMPOSITION;
  doc['spec']['pipeline'][0]['input']['defaults']['database']['storageClassName'] = 'fixed';
  return stringify(doc);
}

describe("the platform's defaults under real Crossplane", { skip }, () => {
  // The next 02:30 UTC slot of the platform's schedule after now: the Database is created before it.
  const slot = new Date();
  slot.setUTCHours(2, 30, 0, 0);
  if (slot.getTime() <= Date.now()) slot.setUTCDate(slot.getUTCDate() + 1);
  const stamp = slot.toISOString().replace(/[-:T]/g, '').slice(0, 12);
  const scheduled = `invoices-db-${stamp}`;

  before(async () => {
    writeFileSync(clockFile, new Date().toISOString());
    cp = await controlPlaneForSuite({ functionEnv: { FUNCTION_PLATFORM_CLOCK_FILE: clockFile } });
    await ensureNamespace(cp, NS);
    // The platform team puts the store's Secret in the team's namespace, by the name the Input gives.
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: Secret
metadata: {name: backup-store, namespace: ${NS}}
stringData: {AWS_ACCESS_KEY_ID: AKIAE2EPLATFORM00001, AWS_SECRET_ACCESS_KEY: e2e-platform-key-0123456789}
`,
    });
    await cp.kubectl(['apply', '-f', '-'], { input: platformComposition() });
  });
  after(async () => {
    await cp?.stop();
  });

  test('a Database of engine and size is Ready, its backups going to the platform store (source platform)', async (t) => {
    const started = Date.now();
    // Engine and size; the third line picks the platform's Composition beside the packaged one.
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1
kind: Database
metadata: {name: invoices, namespace: ${NS}}
spec:
  engine: postgres
  storageGB: 20
  crossplane: {compositionRef: {name: ${COMPOSITION}}}
`,
    });
    const db = await eventually(
      'Database invoices Ready',
      async () => {
        const d = await get('Database', 'invoices');
        return readyAndSynced(d) && d?.['status']?.['phase'] === 'Ready' ? d : undefined;
      },
      120_000,
    );
    t.diagnostic(`apply to Ready: ${Date.now() - started} ms; status.backup ${JSON.stringify(db['status']['backup'])}`);
    assert.deepEqual(db['status']['backup']['objectStore'], {
      bucket: 'platform-backups',
      region: 'eu-west-1',
      prefix: 'databases',
      credentialsSecretRef: { name: 'backup-store' },
      source: 'platform',
    });
    assert.equal(db['status']['backup']['nextScheduledTime'], slot.toISOString(), "the platform's schedule");
    assert.equal(conditionOf(db, 'BackupHealthy')?.['reason'], 'NoBackupYet');
    // The spec was not written into: what the team applied is what it reads back.
    assert.equal(db['spec']['backup']?.['objectStore'], undefined);
    const pvc = await cp.client.getObj(ref('v1', 'PersistentVolumeClaim', 'data-invoices-db-0'));
    assert.equal(pvc?.['spec']?.['storageClassName'], 'fixed', "the platform's volume class");
    assert.equal(pvc?.['status']?.['phase'], 'Bound');
  });

  test("the platform's slot passes: the scheduled backup's Job writes to the platform store, and it is Completed", async () => {
    writeFileSync(clockFile, new Date(slot.getTime() + 60_000).toISOString());
    await cp.kubectl(['annotate', 'database', 'invoices', '-n', NS, `test.function-platform.dev/nudge=${Date.now()}`]);
    await eventually(`DatabaseBackup ${scheduled}`, () => get('DatabaseBackup', scheduled), 90_000);
    const job = `${scheduled}-a1`;
    const jobObj = await eventually(`Job ${job}`, () => cp.client.getObj(ref('batch/v1', 'Job', job)), 90_000);
    const upload = (jobObj['spec']['template']['spec']['containers'] as Json[]).find((c) => c['name'] === 'upload')!;
    const env = Object.fromEntries(
      (upload['env'] as Json[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']?.['secretKeyRef']?.['name']]),
    );
    assert.equal(env['BUCKET'], 'platform-backups');
    assert.equal(env['KEY'], `databases/invoices/${scheduled}.dump`);
    assert.equal(env['AWS_ACCESS_KEY_ID'], 'backup-store', "the platform's Secret, by name");
    await finishJobPod(cp.client, NS, job);
    const done = await eventually(
      `DatabaseBackup ${scheduled} Completed`,
      async () => {
        const b = await get('DatabaseBackup', scheduled);
        return b?.['status']?.['phase'] === 'Completed' ? b : undefined;
      },
      90_000,
    );
    assert.equal(done['status']['location'], `s3://platform-backups/databases/invoices/${scheduled}.dump`);
  });

  test('the Widget answers to its short names, wg and wdg', async () => {
    for (const name of ['wg', 'wdg']) {
      const r = await cp.kubectl(['get', name, '-n', NS], { allowFail: true });
      assert.equal(r.code, 0, `kubectl get ${name}: ${r.stderr}`);
    }
  });
});
