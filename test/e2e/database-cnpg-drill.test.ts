// Restore drills of CloudNativePG backups under the Crossplane users run: a
// DatabaseBackup of a highly available Database composes its CloudNativePG
// Backup; asked for a drill, it composes a scratch Cluster bootstrapped by
// recovery (validated by the real API server against CloudNativePG's CRD),
// then the Job that counts it (run by the real Job controller), records the
// outcome, and Crossplane deletes what the drill made.
//
// STAND-INS, named so: the CloudNativePG OPERATOR cannot run here, so this
// test writes what it would: the Backup's status (completed, with its ID), the
// scratch Cluster's phase, and the recovery Job of a recovery that fails (a
// Job the real Job controller runs, owned by the scratch Cluster as the
// operator's are, so the real garbage collector takes it with the Cluster).
// kwok runs no containers: a KUBELET STAND-IN ends the Jobs' pods with the
// exit code and termination message a container would leave.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { repoRoot } from '../../dev/infra/paths.js';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, controlPlaneSkipReason } from '../support/control-plane.js';
import { controlPlaneForSuite, ensureNamespace, eventually } from '../support/e2e.js';
import { finishJobPod } from '../support/kwok-kubelet.js';

const skip = controlPlaneSkipReason('e2e: restore drills of CloudNativePG backups under real Crossplane');
const NS = 'team-a';
const BACKUP = 'orders-manual';
const CRDS = ['postgresql.cnpg.io_clusters.yaml', 'postgresql.cnpg.io_backups.yaml'];

let cp: ControlPlane;
const ref = (apiVersion: string, kind: string, name: string) => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS },
});
const getBackup = () => cp.client.getObj(ref('example.com/v1', 'DatabaseBackup', BACKUP));

/** The DatabaseBackup's status.verification once it answers `request` with `result`. */
function verification(request: string, result: string, timeoutMs = 90_000): Promise<Json> {
  return eventually(
    `DatabaseBackup ${BACKUP}: drill ${request} ${result}`,
    async () => {
      const v = (await getBackup())?.['status']?.['verification'];
      return v?.['request'] === request && v?.['result'] === result ? (v as Json) : undefined;
    },
    timeoutMs,
  );
}

/** Asks the DatabaseBackup for a drill. */
async function askDrill(request: string): Promise<void> {
  await cp.kubectl([
    'patch',
    'databasebackup',
    BACKUP,
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { verification: { requested: request } } }),
  ]);
}

/** Gone from the API server (Crossplane deleted it, or the garbage collector did). */
const gone = (apiVersion: string, kind: string, name: string) =>
  eventually(
    `${kind} ${name} deleted`,
    async () => ((await cp.client.getObj(ref(apiVersion, kind, name))) === undefined ? true : undefined),
    90_000,
  );

describe('restore drills of CloudNativePG backups under real Crossplane', { skip }, () => {
  before(async () => {
    cp = await controlPlaneForSuite();
    for (const crd of CRDS)
      await cp.kubectl(['apply', '--server-side', '-f', join(repoRoot, '..', 'shared', 'crds', 'cloudnative-pg', crd)]);
    for (const name of ['clusters.postgresql.cnpg.io', 'backups.postgresql.cnpg.io'])
      await cp.client.waitEstablished(name);
    await ensureNamespace(cp, NS);
    await cp.client.applyObj(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'backup-store', namespace: NS },
        stringData: { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLESTORE01', AWS_SECRET_ACCESS_KEY: 'not-a-real-key' },
      },
      { fieldManager: 'e2e' },
    );
    await cp.client.applyObj(
      {
        apiVersion: 'example.com/v1',
        kind: 'Database',
        metadata: { name: 'orders', namespace: NS },
        spec: {
          engine: 'postgres',
          version: '16',
          storageGB: 10,
          highAvailability: true,
          backup: {
            objectStore: {
              bucket: 'team-a-backups',
              region: 'eu-west-1',
              endpoint: 'http://minio.storage:9000',
              credentialsSecretRef: { name: 'backup-store' },
            },
          },
        },
      },
      { fieldManager: 'e2e' },
    );
  });
  after(async () => {
    await cp?.stop();
  });

  test('a DatabaseBackup of it composes a CloudNativePG Backup; the operator completes it: Completed', async () => {
    await cp.client.applyObj(
      {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: { name: BACKUP, namespace: NS },
        spec: { databaseRef: { name: 'orders' } },
      },
      { fieldManager: 'e2e' },
    );
    const backup = await eventually('the CloudNativePG Backup', () =>
      cp.client.getObj(ref('postgresql.cnpg.io/v1', 'Backup', BACKUP)),
    );
    assert.equal(backup['spec']['cluster']['name'], 'orders-db');
    // OPERATOR STAND-IN: the Backup completed, with its ID in the store.
    const now = new Date().toISOString();
    await cp.client.mergeStatus(backup, {
      phase: 'completed',
      backupId: '20261204T190000',
      serverName: 'orders-db',
      method: 'plugin',
      startedAt: now,
      stoppedAt: now,
      destinationPath: 's3://team-a-backups/orders',
    });
    await eventually('DatabaseBackup Completed', async () => {
      const b = await getBackup();
      return b?.['status']?.['phase'] === 'Completed' ? b : undefined;
    });
  });

  test('a drill: the scratch Cluster recovered from that backup, counted once healthy, Passed, and both are deleted', async (t) => {
    const request = '202612041930';
    const scratch = `${BACKUP}-drill-${request}`;
    const job = `${BACKUP}-verify-${request}`;
    const started = Date.now();
    await askDrill(request);
    const cluster = await eventually(`scratch Cluster ${scratch}`, () =>
      cp.client.getObj(ref('postgresql.cnpg.io/v1', 'Cluster', scratch)),
    );
    assert.equal(cluster['metadata']['labels']['function-platform.dev/scratch'], 'drill');
    assert.equal(cluster['spec']['instances'], 1);
    assert.deepEqual(cluster['spec']['bootstrap']['recovery']['recoveryTarget'], {
      backupID: '20261204T190000',
      targetImmediate: true,
    });
    assert.equal(cluster['spec']['externalClusters'][0]['plugin']['parameters']['serverName'], 'orders-db');
    assert.equal(cluster['spec']['plugins'], undefined, 'no WAL archiver: nothing is written into the store');
    const policy = await eventually(`NetworkPolicy ${scratch}`, () =>
      cp.client.getObj(ref('networking.k8s.io/v1', 'NetworkPolicy', scratch)),
    );
    assert.deepEqual(policy['spec']['podSelector'], { matchLabels: { 'cnpg.io/cluster': scratch } });
    await verification(request, 'Running');
    assert.equal(await cp.client.getObj(ref('batch/v1', 'Job', job)), undefined, 'not counted before it is healthy');

    // OPERATOR STAND-IN: recovered and healthy.
    await cp.client.mergeStatus(cluster, { phase: 'Cluster in healthy state', instances: 1, readyInstances: 1 });
    const count = await eventually(`count Job ${job}`, () => cp.client.getObj(ref('batch/v1', 'Job', job)));
    const env = count['spec']['template']['spec']['containers'][0]['env'] as Json[];
    assert.equal(env.find((e) => e['name'] === 'HOST')?.['value'], `${scratch}-rw.${NS}.svc.cluster.local`);
    // As the scratch Cluster's own superuser, whose Secret the operator makes and removes with it.
    assert.deepEqual(env.find((e) => e['name'] === 'DB_PASSWORD')?.['valueFrom'], {
      secretKeyRef: { name: `${scratch}-superuser`, key: 'password' },
    });
    // KUBELET STAND-IN: the count's container exits with its counts.
    await finishJobPod(cp.client, NS, job, { messages: { verify: '{"tables":3,"rows":10000,"seconds":1}' } });
    const v = await verification(request, 'Passed');
    t.diagnostic(`request to Passed: ${Date.now() - started} ms; status.verification ${JSON.stringify(v)}`);
    assert.equal(v['tables'], 3);
    assert.equal(v['rows'], 10000);
    await gone('postgresql.cnpg.io/v1', 'Cluster', scratch);
    await gone('batch/v1', 'Job', job);
    await gone('networking.k8s.io/v1', 'NetworkPolicy', scratch);
    const b = (await getBackup())!;
    assert.equal(b['status']['phase'], 'Completed', 'the backup stays Completed');
    const synced = (b['status']['conditions'] as Json[]).find((c) => c['type'] === 'Synced');
    assert.equal(synced?.['status'], 'True', JSON.stringify(synced));
  });

  test('a recovery that fails: Failed with the operator’s Job named, the scratch Cluster and its Job deleted', async (t) => {
    const request = '202612041940';
    const scratch = `${BACKUP}-drill-${request}`;
    const started = Date.now();
    await askDrill(request);
    const cluster = await eventually(`scratch Cluster ${scratch}`, () =>
      cp.client.getObj(ref('postgresql.cnpg.io/v1', 'Cluster', scratch)),
    );
    // OPERATOR STAND-IN: its recovery Job, owned by the Cluster, which fails.
    const recovery = `${scratch}-1-full-recovery`;
    await cp.client.createObj({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: recovery,
        namespace: NS,
        labels: { 'cnpg.io/cluster': scratch, 'cnpg.io/jobRole': 'full-recovery' },
        ownerReferences: [
          {
            apiVersion: 'postgresql.cnpg.io/v1',
            kind: 'Cluster',
            name: scratch,
            uid: cluster['metadata']['uid'],
            controller: true,
          },
        ],
      },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: { 'cnpg.io/cluster': scratch, 'cnpg.io/jobRole': 'full-recovery' } },
          spec: {
            restartPolicy: 'Never',
            securityContext: { runAsNonRoot: true, runAsUser: 26, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'full-recovery',
                image: 'ghcr.io/cloudnative-pg/postgresql:16',
                command: ['/controller/manager', 'instance', 'restore'],
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              },
            ],
          },
        },
      },
    });
    // KUBELET STAND-IN: its container exits 1, leaving no message (the operator's pods write none).
    await finishJobPod(cp.client, NS, recovery, { exitCodes: { 'full-recovery': 1 } });
    const v = await verification(request, 'Failed');
    t.diagnostic(`request to Failed: ${Date.now() - started} ms; reason: ${v['reason']}`);
    assert.match(
      String(v['reason']),
      new RegExp(
        `^CloudNativePG could not recover backup 20261204T190000 into scratch Cluster ${scratch}: its recovery Job ${recovery} failed \\(exit code 1, Error\\)$`,
      ),
    );
    await gone('postgresql.cnpg.io/v1', 'Cluster', scratch);
    await gone('batch/v1', 'Job', recovery);
    // The record of the backup itself stands: a drill judges it, it does not rewrite it.
    const b = (await getBackup())!;
    assert.equal(b['status']['phase'], 'Completed');
  });
});
