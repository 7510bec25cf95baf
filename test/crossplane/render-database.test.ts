// Renders the Database examples with the real Crossplane CLI (crank render)
// against the built function: both placements, the observed fixtures of
// examples/database/observed/ and the required resources of
// examples/database/required/ (passed with -e, as Crossplane answers the
// function's requirements), and the inputs the function must refuse.
//
// Table-driven like render-widget.test.ts (test/support/render-cases.ts runs
// both): a case is an XR, optional observed state and required resources,
// and a check.
import assert from 'node:assert/strict';
import { CONNECTION_KEYS } from '../support/database.js';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  composedOf,
  conditionOf,
  type Doc,
  findComposed,
  type RenderResult,
  readYamlDocs,
  resultsOf,
  type YamlInput,
  xrOf,
} from '../support/crank.js';
import { repoRoot } from '../support/function-process.js';
import { describeRenders, type RenderCase } from '../support/render-cases.js';

const DIR = 'examples/database';
const observed = (name: string) => `${DIR}/observed/${name}.yaml`;
const required = (name: string) => `${DIR}/required/${name}.yaml`;

// The Composition users apply; an equivalent one if the example is not there.
const COMPOSITION: YamlInput = existsSync(join(repoRoot, DIR, 'composition.yaml'))
  ? `${DIR}/composition.yaml`
  : {
      apiVersion: 'apiextensions.crossplane.io/v1',
      kind: 'Composition',
      metadata: { name: 'databases.example.com' },
      spec: {
        compositeTypeRef: { apiVersion: 'example.com/v1', kind: 'Database' },
        mode: 'Pipeline',
        pipeline: [{ step: 'compose', functionRef: { name: 'function-platform' } }],
      },
    };

const S3_SETTINGS = [
  'BucketVersioning',
  'BucketServerSideEncryptionConfiguration',
  'BucketPublicAccessBlock',
  'BucketLifecycleConfiguration',
];

// Accessors whose failures say what was rendered instead.
function keys(r: RenderResult): string {
  return [...composedOf(r).keys()].join(', ');
}
function byKey(r: RenderResult, key: string): Doc {
  const d = composedOf(r).get(key);
  assert.ok(d, `no composed resource with key ${key}; got ${keys(r)}`);
  return d;
}
function one(r: RenderResult, kind: string, name?: string): Doc {
  const d = findComposed(r, kind, name);
  assert.ok(d, `${kind}${name ? ` ${name}` : ''} not rendered; got ${keys(r)}`);
  return d;
}
function status(r: RenderResult): Doc {
  const s = xrOf(r)['status'];
  assert.ok(s, 'the XR has no status');
  return s;
}
function readyCondition(r: RenderResult): string | undefined {
  return conditionOf(xrOf(r), 'Ready')?.['status'];
}
/** The XR's status, once its phase is `phase` and status.ready and the Ready condition agree with it. */
function inPhase(r: RenderResult, phase: string): Doc {
  const s = status(r);
  const ready = phase === 'Ready';
  assert.equal(s['ready'], ready, `ready is ${s['ready']}: ${s['message']}`);
  assert.equal(s['phase'], phase);
  assert.equal(readyCondition(r), ready ? 'True' : 'False');
  return s;
}
/** A Secret's data, base64-decoded. */
function secretData(secret: Doc): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((secret['data'] ?? {}) as Record<string, string>))
    out[k] = Buffer.from(v, 'base64').toString('utf8');
  for (const [k, v] of Object.entries((secret['stringData'] ?? {}) as Record<string, string>)) out[k] = v;
  return out;
}
/** The password of the credentials Secret of an observed fixture. */
function observedPassword(name: string): string | undefined {
  return secretData(fixture(observed(name), 'Secret', 'credentials'))['password'];
}
/** A document of a fixture file by kind and key. */
function fixture(path: string, kind: string, key?: string): Doc {
  const d = readYamlDocs(path).find(
    (x) =>
      x['kind'] === kind &&
      (key === undefined || x['metadata']?.['annotations']?.['crossplane.io/composition-resource-name'] === key),
  );
  assert.ok(d, `${path} has no ${kind}${key ? ` with key ${key}` : ''}`);
  return d;
}
/** An example XR with its spec changed. */
function variant(path: string, spec: Doc): Doc {
  const [xr] = readYamlDocs(path);
  assert.ok(xr, `${path} has no document`);
  return { ...xr, spec: { ...xr['spec'], ...spec } };
}
function forProvider(d: Doc): Doc {
  const fp = d['spec']?.['forProvider'];
  assert.ok(fp, `${d['kind']} ${d['metadata']?.['name']} has no spec.forProvider`);
  return fp;
}
function warnings(r: RenderResult): Doc[] {
  return resultsOf(r).filter((x) => x['severity'] === 'SEVERITY_WARNING');
}

const providerSecret = secretData(fixture(required('rds-connection'), 'Secret'));

const PLATFORM = `${DIR}/composition-with-platform-defaults.yaml`;
/** The Database Composition whose step's Input sets these platform defaults. */
const withDefaults = (defaults: Doc): Doc => ({
  apiVersion: 'apiextensions.crossplane.io/v1',
  kind: 'Composition',
  metadata: { name: 'databases.example.com' },
  spec: {
    compositeTypeRef: { apiVersion: 'example.com/v1', kind: 'Database' },
    mode: 'Pipeline',
    pipeline: [
      {
        step: 'compose',
        functionRef: { name: 'function-platform' },
        input: { apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', defaults },
      },
    ],
  },
});

/**
 * `--required-schemas` and `-e` for `crossplane render` as a platform team would give them from its cluster
 * (kubectl get --raw /openapi/v3/apis/rds.aws.m.upbound.io/v1beta1, and its ProviderRevisions): the Instance
 * schema of provider-aws-rds v1.9.0 from ../shared/crds, without spec.forProvider.storageEncrypted when
 * `older`, as the API server publishes a CRD's schema (the kind named in x-kubernetes-group-version-kind).
 */
function rdsProviderSchemas(older: boolean): () => string[] {
  return () => {
    const dir = mkdtempSync(join(tmpdir(), 'render-schemas-'));
    const [crd] = readYamlDocs(
      join(repoRoot, '..', 'shared', 'crds', 'provider-upjet-aws', 'rds.aws.m.upbound.io_instances.yaml'),
    );
    const version = (crd!['spec']['versions'] as Doc[]).find((v) => v['name'] === 'v1beta1')!;
    const schema = version['schema']['openAPIV3Schema'];
    if (older) delete schema['properties']['spec']['properties']['forProvider']['properties']['storageEncrypted'];
    schema['x-kubernetes-group-version-kind'] = [
      { group: 'rds.aws.m.upbound.io', version: 'v1beta1', kind: 'Instance' },
    ];
    mkdirSync(join(dir, 'schemas'));
    writeFileSync(
      join(dir, 'schemas', 'rds.aws.m.upbound.io-v1beta1.json'),
      JSON.stringify({
        openapi: '3.0.0',
        info: { title: 'Kubernetes', version: 'v1.32.0' },
        paths: {},
        components: { schemas: { 'io.upbound.aws.m.rds.v1beta1.Instance': schema } },
      }),
    );
    const revision = {
      apiVersion: 'pkg.crossplane.io/v1',
      kind: 'ProviderRevision',
      metadata: { name: 'provider-aws-rds-0a1b2c3d4e5f', labels: { 'pkg.crossplane.io/package': 'provider-aws-rds' } },
      spec: {
        desiredState: 'Active',
        image: 'xpkg.crossplane.io/crossplane-contrib/provider-aws-rds:v1.9.0',
        revision: 1,
      },
      status: {
        objectRefs: [
          {
            apiVersion: 'apiextensions.crossplane.io/v1alpha1',
            kind: 'ManagedResourceDefinition',
            name: 'instances.rds.aws.m.upbound.io',
          },
        ],
      },
    };
    writeFileSync(join(dir, 'revisions.yaml'), stringify(revision));
    return ['--required-schemas', join(dir, 'schemas'), '-e', join(dir, 'revisions.yaml')];
  };
}

const cases: RenderCase[] = [
  {
    name: "required schemas: crossplane render given the cluster's Instance schema renders the same RDS instance",
    xr: `${DIR}/aws.yaml`,
    extraArgs: rdsProviderSchemas(false),
    check(r) {
      assert.equal(forProvider(byKey(r, 'rds-instance'))['storageEncrypted'], true);
    },
  },
  {
    name: 'required schemas: an older provider-aws-rds whose Instance has no storageEncrypted is Fatal naming the field and the package; nothing rendered',
    xr: `${DIR}/aws.yaml`,
    extraArgs: rdsProviderSchemas(true),
    fails: true,
    check(r) {
      assert.match(
        r.stderr + r.stdout,
        /Instance rds\.aws\.m\.upbound\.io\/v1beta1 in this cluster has no field spec\.forProvider\.storageEncrypted \(resource rds-instance\); its CRD was installed by provider-aws-rds v1\.9\.0, older than this function composes for: upgrade it\. Nothing was applied\./,
      );
    },
  },
  // ---- the platform's defaults (the step's Input) -------------------------
  {
    name: "platform defaults: a two-line Database takes the platform's store (source platform), class, schedule",
    xr: `${DIR}/two-line.yaml`,
    composition: PLATFORM,
    required: required('backup-store'),
    check(r) {
      const s = status(r);
      assert.deepEqual(s['backup']?.['objectStore'], {
        bucket: 'platform-backups',
        region: 'eu-west-1',
        prefix: 'databases',
        credentialsSecretRef: { name: 'backup-store' },
        source: 'platform',
      });
      // The platform's schedule: 02:30 UTC (the examples' clock is 2026-12-02T10:00Z).
      assert.equal(s['backup']?.['nextScheduledTime'], '2026-12-03T02:30:00.000Z');
      const sts = one(r, 'StatefulSet', 'invoices-db');
      assert.equal(sts['spec']['volumeClaimTemplates'][0]['spec']['storageClassName'], 'fast');
      assert.notEqual(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'NoObjectStore');
    },
  },
  {
    name: "platform defaults: a Database with its own store keeps it (source spec) and takes the platform's schedule",
    xr: `${DIR}/cluster.yaml`,
    composition: PLATFORM,
    required: required('backup-store'),
    check(r) {
      const s = status(r);
      assert.equal(s['backup']?.['objectStore']?.['bucket'], 'team-a-backups');
      assert.equal(s['backup']?.['objectStore']?.['source'], 'spec');
      assert.equal(s['backup']?.['nextScheduledTime'], '2026-12-03T02:30:00.000Z');
    },
  },
  {
    name: 'platform defaults: the same two-line Database without them has nowhere to put backups (NoObjectStore)',
    xr: `${DIR}/two-line.yaml`,
    check(r) {
      assert.equal(status(r)['backup']?.['objectStore'], undefined);
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'NoObjectStore');
      const sts = one(r, 'StatefulSet', 'invoices-db');
      assert.equal(sts['spec']['volumeClaimTemplates'][0]['spec']['storageClassName'], undefined);
    },
  },
  {
    name: 'platform defaults: an unknown Input field is Fatal naming it, and nothing is rendered',
    xr: `${DIR}/two-line.yaml`,
    composition: withDefaults({ database: { backup: { retentionDay: 14 } } }),
    fails: true,
    check(r) {
      assert.match(r.stderr + r.stdout, /input\.defaults\.database\.backup\.retentionDay is not a known field/);
    },
  },
  {
    name: "platform TLS: a two-line postgres Database gets a Certificate from the platform's issuer, its server on TLS, URIs that ask for it",
    xr: `${DIR}/two-line.yaml`,
    composition: withDefaults({ database: { tls: { clusterIssuer: 'platform-ca' } } }),
    check(r) {
      const cert = byKey(r, 'tls-certificate');
      assert.equal(cert['kind'], 'Certificate');
      assert.equal(cert['spec']['issuerRef']['name'], 'platform-ca');
      assert.equal(cert['spec']['secretName'], 'invoices-db-tls');
      const sts = one(r, 'StatefulSet', 'invoices-db');
      const pod = sts['spec']['template']['spec'];
      assert.ok(pod['containers'][0]['args'].includes('ssl=on'));
      assert.ok(pod['volumes'].some((v: Doc) => v['secret']?.['secretName'] === 'invoices-db-tls'));
      assert.match(
        one(r, 'ConfigMap', 'invoices-db-pg-hba')['data']['pg_hba.conf'],
        /^hostnossl all all all\s+reject$/m,
      );
      assert.match(secretData(one(r, 'Secret', 'invoices-db-connection'))['uri']!, /\?sslmode=require$/);
    },
  },
  // ---- placement cluster --------------------------------------------------
  {
    name: 'cluster, first reconcile: StatefulSet, Services, Secrets, no CronJob (backups are DatabaseBackups); Provisioning',
    xr: `${DIR}/cluster.yaml`,
    check(r) {
      const sts = one(r, 'StatefulSet', 'orders-db');
      assert.equal(byKey(r, 'statefulset'), sts);
      assert.equal(sts['metadata']['namespace'], 'team-a');
      const data = (sts['spec']['volumeClaimTemplates'] as Doc[]).find((t) => t['metadata']?.['name'] === 'data');
      assert.ok(data, 'no volumeClaimTemplate named data');
      assert.equal(data['spec']['resources']['requests']['storage'], '20Gi');
      assert.equal(sts['spec']['persistentVolumeClaimRetentionPolicy']?.['whenDeleted'], 'Retain');
      const [container] = sts['spec']['template']['spec']['containers'] as Doc[];
      assert.ok(container, 'the StatefulSet has no container');
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const command = container[probe]?.['exec']?.['command'];
        assert.ok(
          Array.isArray(command) && command.length > 0,
          `${probe} has no exec command: ${JSON.stringify(container[probe])}`,
        );
      }
      assert.ok(
        container['volumeMounts'].some((m: Doc) => m['name'] === 'data'),
        'data volume not mounted',
      );

      const svc = byKey(r, 'service');
      assert.equal(svc['kind'], 'Service');
      assert.equal(svc['metadata']['name'], 'orders-db');
      assert.equal(svc['spec']['ports'][0]['port'], 5432);
      const headless = byKey(r, 'headless');
      assert.equal(headless['kind'], 'Service');
      assert.equal(headless['spec']['clusterIP'], 'None');
      assert.equal(sts['spec']['serviceName'], headless['metadata']['name']);

      const credentials = byKey(r, 'credentials');
      assert.equal(credentials['kind'], 'Secret');
      assert.equal(credentials['type'], 'kubernetes.io/basic-auth');
      const creds = secretData(credentials);
      assert.ok(creds['password'] && creds['password'].length >= 16, 'the generated password is too short');

      const connection = one(r, 'Secret', 'orders-db-connection');
      assert.equal(byKey(r, 'connection'), connection);
      const conn = secretData(connection);
      assert.deepEqual(Object.keys(conn).sort(), CONNECTION_KEYS);
      assert.equal(conn['host'], 'orders-db.team-a.svc.cluster.local');
      assert.equal(conn['port'], '5432');
      assert.equal(conn['dbname'], 'orders');
      assert.equal(conn['username'], creds['username']);
      assert.equal(
        conn['password'],
        creds['password'],
        'the connection Secret and the credentials disagree on the password',
      );
      assert.ok(
        conn['uri']!.startsWith('postgresql://') &&
          conn['uri']!.includes('orders-db.team-a.svc.cluster.local:5432/orders'),
        conn['uri'],
      );
      assert.equal(conn['jdbc-uri'], 'jdbc:postgresql://orders-db.team-a.svc.cluster.local:5432/orders');

      assert.equal(findComposed(r, 'CronJob'), undefined, 'the function schedules backups itself');
      assert.deepEqual(
        (sts['spec']['volumeClaimTemplates'] as Doc[]).map((t) => t['metadata']['name']),
        ['data'],
        'no backup volume beside the data: backups go to the object store',
      );
      assert.equal(findComposed(r, 'DatabaseBackup'), undefined, 'no backup before the database has served');

      const s = inPhase(r, 'Provisioning');
      assert.equal(s['connectionSecret'], 'orders-db-connection');
      assert.equal(s['backup']?.['nextScheduledTime'], '2026-12-03T03:00:00.000Z');
      assert.equal(s['backup']?.['location'], undefined, 'no backup is stored yet: no location');
    },
  },
  {
    name: 'cluster, provisioning observed: still Provisioning, password read back',
    xr: `${DIR}/cluster.yaml`,
    observed: observed('cluster-provisioning'),
    check(r) {
      const s = inPhase(r, 'Provisioning');
      assert.match(String(s['message']), /StatefulSet orders-db/);
      assert.equal(secretData(byKey(r, 'credentials'))['password'], observedPassword('cluster-provisioning'));
    },
  },
  {
    name: 'cluster, ready observed: Ready, endpoint, last backup; the password is read back, not regenerated',
    xr: `${DIR}/cluster.yaml`,
    observed: observed('cluster-ready'),
    // The store's Secret as the cluster holds it (without it, BackupCredentials says it does not exist).
    required: required('backup-store'),
    check(r) {
      const s = inPhase(r, 'Ready');
      assert.equal(s['endpoint'], 'orders-db.team-a.svc.cluster.local:5432');
      assert.equal(s['backup']?.['lastSuccessfulTime'], undefined, 'no backup has completed');
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'NoBackupYet');
      const fixturePassword = observedPassword('cluster-ready');
      assert.ok(fixturePassword);
      assert.equal(secretData(byKey(r, 'credentials'))['password'], fixturePassword);
      assert.equal(secretData(byKey(r, 'connection'))['password'], fixturePassword);
    },
  },
  {
    name: 'cluster with backups taken: the last Completed one in status, the newer failure warned of and recorded',
    xr: `${DIR}/cluster.yaml`,
    observed: observed('cluster-backed-up'),
    check(r) {
      const s = inPhase(r, 'Ready');
      assert.deepEqual(s['backup'], {
        lastSuccessfulTime: '2026-12-01T03:01:12Z',
        location: 's3://team-a-backups/databases/orders/',
        lastFailure: 'orders-db-202612020300: dump was killed for memory (OOMKilled with 1024Mi)',
        lastFailedTime: '2026-12-02T03:10:02Z',
        nextScheduledTime: '2026-12-03T03:00:00.000Z',
        objectStore: {
          bucket: 'team-a-backups',
          region: 'eu-west-1',
          prefix: 'databases',
          credentialsSecretRef: { name: 'backup-store' },
          source: 'spec',
        },
      });
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['status'], 'False');
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'BackupFailed');
      assert.ok(
        resultsOf(r).some(
          (x) =>
            x['severity'] === 'SEVERITY_WARNING' && /DatabaseBackup orders-db-202612020300 failed/.test(x['message']),
        ),
        'a Warning event names the failed backup',
      );
      // The newest Completed one is asked for a restore drill, for the verify slot that fired last (Sunday 05:00).
      assert.deepEqual(byKey(r, 'scheduled-backup-202612010300')['spec'], {
        databaseRef: { name: 'orders' },
        verification: { requested: '202611290500' },
      });
      const failed = byKey(r, 'scheduled-backup-202612020300');
      assert.equal(failed['kind'], 'DatabaseBackup');
      assert.deepEqual(failed['spec'], { databaseRef: { name: 'orders' } });
    },
  },
  {
    name: 'cluster mysql without backups, Delete: port 3306, no CronJob, volumes deleted with it',
    xr: `${DIR}/cluster-mysql.yaml`,
    check(r) {
      const sts = one(r, 'StatefulSet', 'sessions-db');
      assert.match(sts['spec']['template']['spec']['containers'][0]['image'], /^mysql:/);
      assert.equal(sts['spec']['persistentVolumeClaimRetentionPolicy']?.['whenDeleted'], 'Delete');
      const data = (sts['spec']['volumeClaimTemplates'] as Doc[]).find((t) => t['metadata']?.['name'] === 'data');
      assert.equal(data?.['spec']['resources']['requests']['storage'], '5Gi');
      assert.equal(findComposed(r, 'CronJob'), undefined, 'backup.enabled false must compose no CronJob');
      const conn = secretData(byKey(r, 'connection'));
      assert.deepEqual(Object.keys(conn).sort(), CONNECTION_KEYS);
      assert.equal(conn['port'], '3306');
      assert.match(conn['jdbc-uri']!, /^jdbc:mysql:\/\/sessions-db\.team-c\.svc\.cluster\.local:3306\//);
    },
  },
  {
    name: 'cluster HA, CloudNativePG not installed: no Cluster composed, the status says so, a warning',
    xr: `${DIR}/cluster-ha.yaml`,
    required: required('nothing'),
    check(r) {
      assert.equal(
        composedOf(r).get('cnpg-cluster'),
        undefined,
        `cnpg-cluster composed without the operator; got ${keys(r)}`,
      );
      assert.equal(findComposed(r, 'StatefulSet'), undefined, 'HA must not fall back to a StatefulSet');
      const s = status(r);
      assert.equal(s['ready'], false);
      assert.match(String(s['message']), /CloudNativePG is not installed/);
      assert.ok(
        warnings(r).some((w) => /CloudNativePG is not installed/.test(String(w['message']))),
        `no warning result about CloudNativePG: ${JSON.stringify(resultsOf(r))}`,
      );
      assert.equal(readyCondition(r), 'False');
    },
  },
  {
    name: 'cluster HA, CloudNativePG installed: an Object wrapping a CloudNativePG Cluster of 2+ instances, 50Gi',
    xr: `${DIR}/cluster-ha.yaml`,
    required: required('cnpg-installed'),
    check(r) {
      const obj = byKey(r, 'cnpg-cluster');
      assert.equal(obj['apiVersion'], 'kubernetes.m.crossplane.io/v1alpha1');
      assert.equal(obj['kind'], 'Object');
      const manifest = obj['spec']['forProvider']['manifest'];
      assert.equal(manifest['apiVersion'], 'postgresql.cnpg.io/v1');
      assert.equal(manifest['kind'], 'Cluster');
      assert.equal(manifest['metadata']['namespace'], 'team-a');
      assert.ok(manifest['spec']['instances'] >= 2, `instances ${manifest['spec']['instances']}`);
      assert.equal(manifest['spec']['storage']['size'], '50Gi');
      assert.ok(
        !obj['spec']['managementPolicies'].includes('Delete') && !obj['spec']['managementPolicies'].includes('*'),
        'Retain must orphan the Cluster',
      );
      assert.equal(findComposed(r, 'StatefulSet'), undefined);
      const conn = secretData(byKey(r, 'connection'));
      assert.equal(conn['host'], 'catalog-db-rw.team-a.svc.cluster.local');
      assert.equal(status(r)['ready'], false);
    },
  },
  {
    name: 'cluster HA, CloudNativePG installed and healthy: Ready',
    xr: `${DIR}/cluster-ha.yaml`,
    required: required('cnpg-installed'),
    observed: observed('cluster-ha-ready'),
    check(r) {
      const s = inPhase(r, 'Ready');
      assert.equal(s['endpoint'], 'catalog-db-rw.team-a.svc.cluster.local:5432');
      assert.equal(secretData(byKey(r, 'credentials'))['password'], observedPassword('cluster-ha-ready'));
    },
  },
  {
    name: "cluster HA growing by itself: the primary's volume 85 % used, the Cluster asks 63Gi, said once",
    xr: `${DIR}/cluster-ha-grows-itself.yaml`,
    required: required('cnpg-usage-measured'),
    observed: observed('cluster-ha-ready'),
    check(r) {
      const manifest = byKey(r, 'cnpg-cluster')['spec']['forProvider']['manifest'];
      assert.equal(manifest['spec']['storage']['size'], '63Gi', '50 GiB and 25 %');
      const recorded = JSON.parse(manifest['metadata']['annotations']['function-platform.dev/last-auto-growth']);
      assert.deepEqual({ ...recorded, at: undefined }, { at: undefined, fromGB: 50, toGB: 63, usedPercent: 85 });
      const cron = byKey(r, 'usage');
      const pod = cron['spec']['jobTemplate']['spec']['template']['spec'];
      assert.equal(pod['volumes'][0]['persistentVolumeClaim']['claimName'], 'catalog-db-1');
      assert.equal(pod['containers'][0]['image'], 'ghcr.io/cloudnative-pg/postgresql:16');
      // It serves while the operator grows the claims: ready, and Updating.
      const s = status(r);
      assert.equal(s['ready'], true);
      assert.equal(s['phase'], 'Updating');
      assert.equal(s['storage']['requestedGB'], 63);
      assert.equal(s['storage']['usedPercent'], 85);
      assert.equal(s['storage']['maxGB'], 200);
      assert.match(s['message'], /^volumes of Cluster catalog-db: 50Gi → 63Gi \(0 of 2 grown\)/);
      assert.ok(
        resultsOf(r).some((x) =>
          /^volume catalog-db-1 \(the primary of Cluster catalog-db\) is 85% used \(42\.48 of 49\.97 GiB, spec\.storage\.growAtPercent 80\): growing it 50Gi → 63Gi by itself \(spec\.maxStorageGB 200\)$/.test(
            x['message'],
          ),
        ),
        `the growth is told: ${JSON.stringify(resultsOf(r))}`,
      );
    },
  },

  // ---- placement aws ------------------------------------------------------
  {
    name: 'aws, first reconcile: encrypted private RDS kept on delete, its automated backups the only ones',
    xr: `${DIR}/aws.yaml`,
    async check(r, again) {
      const inst = byKey(r, 'rds-instance');
      assert.equal(inst['apiVersion'], 'rds.aws.m.upbound.io/v1beta1');
      assert.equal(inst['kind'], 'Instance');
      const fp = forProvider(inst);
      assert.equal(fp['region'], 'eu-west-1');
      assert.equal(fp['engine'], 'postgres');
      assert.equal(fp['allocatedStorage'], 20);
      assert.equal(fp['storageEncrypted'], true);
      assert.equal(fp['deletionProtection'], true);
      assert.equal(fp['skipFinalSnapshot'], false);
      assert.ok(
        typeof fp['finalSnapshotIdentifier'] === 'string' && fp['finalSnapshotIdentifier'].length > 0,
        'no finalSnapshotIdentifier',
      );
      assert.match(
        fp['finalSnapshotIdentifier'],
        /^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{0,254}[^-]$/,
        'finalSnapshotIdentifier is not a valid RDS identifier',
      );
      assert.equal(fp['publiclyAccessible'], false);
      assert.equal(fp['multiAz'], false);
      assert.equal(fp['autoGeneratePassword'], true);
      assert.ok(
        fp['passwordSecretRef']?.['name'] && fp['passwordSecretRef']?.['key'],
        `passwordSecretRef: ${JSON.stringify(fp['passwordSecretRef'])}`,
      );
      assert.equal(fp['backupRetentionPeriod'], 7);
      const policies: string[] = inst['spec']['managementPolicies'];
      assert.ok(Array.isArray(policies) && policies.length > 0, 'no managementPolicies');
      assert.ok(
        !policies.includes('Delete') && !policies.includes('*'),
        `Retain must not delete: ${policies.join(', ')}`,
      );
      assert.ok(policies.includes('Create') && policies.includes('Observe'), policies.join(', '));
      assert.equal(findComposed(r, 'SubnetGroup'), undefined, 'no subnetIds, no SubnetGroup');

      for (const kind of ['Bucket', ...S3_SETTINGS])
        assert.equal(findComposed(r, kind), undefined, `${kind}: RDS keeps the backups, no bucket is composed`);
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'NoRestorableTime');

      inPhase(r, 'Provisioning');

      const second = await again();
      assert.equal(
        forProvider(byKey(second, 'rds-instance'))['finalSnapshotIdentifier'],
        fp['finalSnapshotIdentifier'],
      );
    },
  },
  {
    name: 'aws, provisioning observed: the message says the instance is being created (AWS: creating)',
    xr: `${DIR}/aws.yaml`,
    observed: observed('aws-provisioning'),
    check(r) {
      const s = inPhase(r, 'Provisioning');
      assert.match(String(s['message']), /being created/);
      assert.match(String(s['message']), /creating/);
    },
  },
  {
    name: 'aws, ready observed with the provider connection Secret: Ready, endpoint, connection Secret from the provider',
    xr: `${DIR}/aws.yaml`,
    observed: observed('aws-ready'),
    required: required('rds-connection'),
    check(r) {
      const atProvider = fixture(observed('aws-ready'), 'Instance', 'rds-instance')['status']['atProvider'];
      const s = inPhase(r, 'Ready');
      assert.equal(s['endpoint'], `${atProvider['address']}:${atProvider['port']}`);
      assert.equal(s['endpoint'], atProvider['endpoint']);
      assert.equal(s['host'], atProvider['address']);
      assert.equal(s['port'], 5432);
      assert.equal(s['connectionSecret'], 'orders-db-connection');
      assert.deepEqual(s['backup'], {
        latestRestorableTime: atProvider['latestRestorableTime'],
        location: 'rds-automated-backups:team-a-orders-db',
      });
      assert.equal(conditionOf(xrOf(r), 'BackupHealthy')?.['reason'], 'AutomatedBackups');

      const conn = secretData(byKey(r, 'connection'));
      assert.deepEqual(Object.keys(conn).sort(), CONNECTION_KEYS);
      assert.equal(conn['host'], atProvider['address']);
      assert.equal(conn['host'], providerSecret['address']);
      assert.equal(conn['port'], '5432');
      assert.equal(conn['port'], providerSecret['port']);
      assert.equal(conn['password'], providerSecret['password']);
      assert.equal(conn['username'], providerSecret['username']);
      assert.equal(conn['dbname'], 'orders');
      const uri = new URL(conn['uri']!);
      assert.equal(uri.protocol, 'postgresql:');
      assert.equal(decodeURIComponent(uri.password), providerSecret['password']);
      assert.equal(uri.hostname, providerSecret['address']);
      assert.equal(conn['jdbc-uri'], `jdbc:postgresql://${providerSecret['address']}:5432/orders`);
    },
  },
  {
    name: 'aws, was ready, instance storage-full: Degraded',
    xr: `${DIR}/aws-was-ready.yaml`,
    observed: observed('aws-degraded'),
    required: required('rds-connection'),
    check(r) {
      const s = inPhase(r, 'Degraded');
      assert.match(String(s['message']), /storage-full/);
      // An earlier version's bucket stays composed, and is not named as where backups are.
      assert.equal(one(r, 'Bucket')['kind'], 'Bucket');
      assert.doesNotMatch(JSON.stringify(s['backup'] ?? {}), /s3:/);
      // The connection Secret stays while the instance is degraded.
      assert.deepEqual(Object.keys(secretData(byKey(r, 'connection'))).sort(), CONNECTION_KEYS);
    },
  },
  {
    name: 'aws HA with deletionPolicy Delete: Multi-AZ, deletable, own subnets, explicit class and backups',
    xr: `${DIR}/aws-ha-delete.yaml`,
    check(r) {
      const inst = byKey(r, 'rds-instance');
      const fp = forProvider(inst);
      assert.equal(fp['multiAz'], true);
      assert.deepEqual(inst['spec']['managementPolicies'], ['*']);
      // Delete still keeps a last copy (spec.backup.finalSnapshot defaults to true): RDS's final snapshot.
      assert.equal(fp['skipFinalSnapshot'], false);
      assert.match(fp['finalSnapshotIdentifier'], /^team-b-billing-db-final-[0-9a-f]{6}$/);
      assert.equal(xrOf(r)['status']?.['deletion']?.['finalSnapshot'], fp['finalSnapshotIdentifier']);
      assert.equal(fp['deletionProtection'], false);
      assert.equal(fp['engine'], 'mysql');
      assert.equal(fp['region'], 'us-east-1');
      assert.equal(fp['instanceClass'], 'db.r7g.large');
      assert.equal(fp['allocatedStorage'], 100);
      assert.equal(fp['backupRetentionPeriod'], 14);
      assert.equal(fp['backupWindow'], '01:30-02:30');
      assert.deepEqual(fp['vpcSecurityGroupIds'], ['sg-0123abcd']);

      const subnets = one(r, 'SubnetGroup');
      assert.deepEqual(forProvider(subnets)['subnetIds'], ['subnet-0a1b2c3d', 'subnet-4e5f6a7b']);
      assert.equal(forProvider(subnets)['region'], 'us-east-1');
      assert.equal(
        fp['dbSubnetGroupNameRef']?.['name'],
        subnets['metadata']['name'],
        'the instance does not use the SubnetGroup',
      );

      // Every managed resource goes through the named ProviderConfig.
      for (const [key, d] of composedOf(r)) {
        if (!String(d['apiVersion']).includes('.aws.')) continue;
        assert.equal(d['spec']['providerConfigRef']?.['name'], 'billing-account', `${key} uses another ProviderConfig`);
        assert.deepEqual(d['spec']['managementPolicies'], ['*'], `${key} is not deleted with the Database`);
      }
    },
  },

  {
    name: 'aws Delete with spec.backup.finalSnapshot false: no final snapshot, and status.deletion says nothing stays',
    xr: `${DIR}/aws-delete-no-final-snapshot.yaml`,
    check(r) {
      const fp = forProvider(byKey(r, 'rds-instance'));
      assert.equal(fp['skipFinalSnapshot'], true);
      assert.equal(fp['finalSnapshotIdentifier'], undefined);
      const deletion = xrOf(r)['status']?.['deletion'];
      assert.equal(deletion?.['policy'], 'Delete');
      assert.match(String(deletion?.['keeps']), /with no final snapshot/);
    },
  },

  // ---- refused inputs -----------------------------------------------------
  {
    name: 'invalid: placement aws without a region is refused naming spec.aws.region',
    xr: variant(`${DIR}/aws.yaml`, { aws: {} }),
    fails: true,
    check(r) {
      assert.match(r.stderr + r.stdout, /spec\.aws\.region/);
    },
  },
  {
    name: 'invalid: shrinking storageGB below the observed 20Gi is refused naming spec.storageGB',
    xr: variant(`${DIR}/cluster.yaml`, { storageGB: 10 }),
    observed: observed('cluster-ready'),
    fails: true,
    check(r) {
      assert.match(r.stderr + r.stdout, /spec\.storageGB/);
      assert.match(r.stderr + r.stdout, /shrink/);
    },
  },
  {
    name: 'invalid: changing the engine of an existing database is refused naming spec.engine',
    xr: variant(`${DIR}/cluster.yaml`, { engine: 'mysql' }),
    observed: observed('cluster-ready'),
    fails: true,
    check(r) {
      assert.match(r.stderr + r.stdout, /spec\.engine/);
    },
  },
  {
    name: 'invalid: an unsupported version is refused naming spec.version',
    xr: variant(`${DIR}/cluster.yaml`, { version: '12' }),
    fails: true,
    check(r) {
      assert.match(r.stderr + r.stdout, /spec\.version/);
      assert.match(r.stderr + r.stdout, /14, 15, 16, 17/);
    },
  },
];

describeRenders({
  dir: DIR,
  kind: 'Database',
  composition: COMPOSITION,
  cases,
  expectedExamples: [
    'cluster.yaml',
    'cluster-mysql.yaml',
    'cluster-ha.yaml',
    'aws.yaml',
    'aws-ha-delete.yaml',
    'aws-was-ready.yaml',
  ],
  checkExample(r, explain) {
    assert.equal(typeof xrOf(r)['status']?.['message'], 'string', `no status.message\n${explain}`);
  },
});
