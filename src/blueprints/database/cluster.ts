// A Database in the cluster: a StatefulSet of the official image, or a
// CloudNativePG Cluster for high availability (with the Barman Cloud
// plugin's ObjectStore when backups have one). Its backups are DatabaseBackups
// (backups.ts).
import type { V1PersistentVolumeClaim, V1PodSecurityContext, V1StatefulSet } from '@kubernetes/client-node';
import { list, str, type Obj } from '../../kube.js';
import { dnsLabel } from '../../names.js';
import { gigabytes } from '../../quantity.js';
import type { Context, Desired, Plan } from '../blueprint.js';
import { type BackupPlan, storePath } from './backups.js';
import { RESTORE_BACKUP, type RestorePlan } from './restore.js';
import {
  APP_USER,
  appName,
  baseName,
  connectionSecret,
  type DatabaseInput,
  dbname,
  labels,
  meta,
  names,
  type ResolvedSpec,
  secret,
  secretValue,
  stablePassword,
} from './common.js';
import { ENGINES, POD_RESOURCES } from './engine.js';

export const CLUSTER_KEYS = {
  credentials: 'credentials',
  connection: 'connection',
  statefulset: 'statefulset',
  service: 'service',
  headless: 'headless',
  cnpg: 'cnpg-cluster',
  /** The dump volume of an earlier version's highly available Database: kept while it exists, never made. */
  backupVolume: 'backup-volume',
  objectStore: 'cnpg-object-store',
} as const;

/**
 * Under Retain, the credentials Secret outlives the Database with the volume
 * whose data it opens: besides Crossplane's controller reference to the
 * Database it carries an owner reference to the StatefulSet's data claim, and
 * the garbage collector deletes an object only when all its owners are gone.
 * A Database created again on that volume reads the kept Secret back instead
 * of generating a password the data does not know.
 */
export const DATA_CLAIM = 'data-claim';
export const KEPT_CREDENTIALS = 'kept-credentials';

/** The data volume's claim, as the StatefulSet controller names it: <template>-<statefulset>-<ordinal>. */
export function dataClaimName(input: DatabaseInput): string {
  return `data-${baseName(input.owner)}-0`;
}

/** The required resource that tells whether CloudNativePG is installed. */
export const CNPG_CRD = 'cnpg-crd';
const CNPG_CRD_NAME = 'clusters.postgresql.cnpg.io';

const ROLE_LABEL = 'function-platform.dev/role';
/** uid and gid the official postgres and mysql images run their server as. */
const DB_UID = 999;

export function usesCnpg(spec: ResolvedSpec): boolean {
  return spec.highAvailability && spec.engine === 'postgres';
}

export type OperatorState = 'installed' | 'missing' | 'unknown';

/** Is the CloudNativePG operator installed? Read from the CRD Crossplane fetched for us. */
export function cnpgOperator(input: DatabaseInput): OperatorState {
  if (input.observed.has(CLUSTER_KEYS.cnpg)) return 'installed';
  const answer = input.required.get(CNPG_CRD);
  if (answer === undefined) return 'unknown';
  return answer.length > 0 ? 'installed' : 'missing';
}

/** Where applications connect in the cluster. */
export function clusterHost(input: DatabaseInput, spec: ResolvedSpec): string {
  const service = usesCnpg(spec) ? `${baseName(input.owner)}-rw` : baseName(input.owner);
  return `${service}.${input.owner.namespace}.svc.cluster.local`;
}

const gi = (gb: number) => `${gb}Gi`;

function podSecurity(): V1PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: DB_UID,
    runAsGroup: DB_UID,
    fsGroup: DB_UID,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

function resources(spec: ResolvedSpec): Obj {
  const r = POD_RESOURCES[spec.size];
  return { requests: { cpu: r.cpu, memory: r.memory }, limits: { memory: r.memory } };
}

function claimTemplate(input: DatabaseInput, spec: ResolvedSpec, name: string): Obj {
  return {
    metadata: { name, labels: labels(input.owner, spec) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: gi(spec.storageGB) } } },
  };
}

/** Storage of the StatefulSet's data volume as observed, in GiB. */
export function observedStatefulSetGB(input: Pick<Context, 'observed'>): number | undefined {
  const sts = input.observed.get(CLUSTER_KEYS.statefulset);
  const data = list(sts, 'spec', 'volumeClaimTemplates').find((t) => str(t, 'metadata', 'name') === 'data');
  return gigabytes(str(data, 'spec', 'resources', 'requests', 'storage'));
}

/** Storage of the CloudNativePG cluster as observed, in GiB. */
export function observedCnpgGB(input: Pick<Context, 'observed'>): number | undefined {
  return gigabytes(str(input.observed.get(CLUSTER_KEYS.cnpg), 'spec', 'storage', 'size'));
}

/** Storage of the highly available database's backup volume as observed, in GiB. */
export function observedBackupVolumeGB(input: Pick<Context, 'observed'>): number | undefined {
  return gigabytes(str(input.observed.get(CLUSTER_KEYS.backupVolume), 'spec', 'resources', 'requests', 'storage'));
}

function statefulSet(input: DatabaseInput, spec: ResolvedSpec): Obj {
  const { owner } = input;
  const engine = ENGINES[spec.engine];
  const base = baseName(owner);
  const selector = {
    'app.kubernetes.io/instance': labels(owner, spec)['app.kubernetes.io/instance']!,
    'app.kubernetes.io/name': 'database',
    [ROLE_LABEL]: 'server',
  };
  const probe = { exec: { command: engine.readyCommand }, timeoutSeconds: 5 };
  // Claim templates cannot change once the StatefulSet exists: keep what runs.
  const observedTemplates = list(input.observed.get(CLUSTER_KEYS.statefulset), 'spec', 'volumeClaimTemplates');
  // (An earlier version's StatefulSet also has a "backup" template; it stays, with its volume.)
  const templates = observedTemplates.length > 0 ? observedTemplates : [claimTemplate(input, spec, 'data')];
  const sts: V1StatefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(owner, spec, base),
    spec: {
      serviceName: dnsLabel(base, 'headless'),
      replicas: 1,
      selector: { matchLabels: selector },
      // Retain: deleting the Database (and so this StatefulSet) keeps the volumes.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: spec.deletionPolicy, whenScaled: 'Retain' },
      updateStrategy: { type: 'RollingUpdate' },
      template: {
        metadata: { labels: labels(owner, spec, { [ROLE_LABEL]: 'server' }) },
        spec: {
          securityContext: podSecurity(),
          terminationGracePeriodSeconds: 60,
          containers: [
            {
              name: 'db',
              image: engine.image(spec.version),
              ports: [{ name: 'db', containerPort: engine.port, protocol: 'TCP' }],
              env: engine.serverEnv(names.credentials(owner), dbname(owner)),
              resources: resources(spec),
              volumeMounts: [{ name: 'data', mountPath: engine.dataPath }],
              startupProbe: { ...probe, periodSeconds: 5, failureThreshold: 120 },
              readinessProbe: { ...probe, periodSeconds: 10, failureThreshold: 3 },
              livenessProbe: { ...probe, periodSeconds: 20, failureThreshold: 6 },
              securityContext: containerSecurity,
            },
          ],
        },
      },
      volumeClaimTemplates: templates as V1PersistentVolumeClaim[],
    },
  };
  return sts as unknown as Obj;
}

function services(input: DatabaseInput, spec: ResolvedSpec): Desired[] {
  const { owner } = input;
  const base = baseName(owner);
  const port = ENGINES[spec.engine].port;
  const selector = {
    'app.kubernetes.io/instance': labels(owner, spec)['app.kubernetes.io/instance']!,
    'app.kubernetes.io/name': 'database',
    [ROLE_LABEL]: 'server',
  };
  const ports = [{ name: 'db', port, targetPort: 'db', protocol: 'TCP' }];
  return [
    {
      key: CLUSTER_KEYS.service,
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(owner, spec, base),
        spec: { type: 'ClusterIP', selector, ports },
      },
    },
    {
      key: CLUSTER_KEYS.headless,
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(owner, spec, dnsLabel(base, 'headless')),
        spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector, ports },
      },
    },
  ];
}

/**
 * A plain Kubernetes object that must outlive the Database under Retain goes
 * through a provider-kubernetes Object: the Object's management policies (no
 * Delete) orphan it, where a directly composed object would be garbage
 * collected with its owner. Delete lets the Object take it along.
 */
function lasting(input: DatabaseInput, spec: ResolvedSpec, name: string, manifest: Obj): Obj {
  return {
    apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
    kind: 'Object',
    metadata: meta(input.owner, spec, name),
    spec: {
      managementPolicies: spec.deletionPolicy === 'Retain' ? ['Observe', 'Create', 'Update', 'LateInitialize'] : ['*'],
      forProvider: { manifest },
    },
  };
}

function cnpgCluster(input: DatabaseInput, spec: ResolvedSpec): Obj {
  const { owner } = input;
  const base = baseName(owner);
  return lasting(input, spec, base, {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: { name: base, namespace: owner.namespace, labels: labels(owner, spec) },
    spec: {
      instances: 2,
      imageName: `ghcr.io/cloudnative-pg/postgresql:${spec.version}`,
      primaryUpdateStrategy: 'unsupervised',
      storage: { size: gi(spec.storageGB) },
      resources: resources(spec),
      affinity: { enablePodAntiAffinity: true, topologyKey: 'kubernetes.io/hostname' },
      bootstrap: { initdb: { database: dbname(owner), owner: APP_USER, secret: { name: names.credentials(owner) } } },
      ...(spec.backup.objectStore
        ? {
            plugins: [
              { name: CNPG_PLUGIN, isWALArchiver: true, parameters: { barmanObjectName: objectStoreName(input) } },
            ],
          }
        : {}),
    },
  });
}

function backupVolume(input: DatabaseInput, spec: ResolvedSpec): Obj {
  const name = dnsLabel(baseName(input.owner), 'backup');
  return lasting(input, spec, name, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: input.owner.namespace, labels: labels(input.owner, spec) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: gi(spec.storageGB) } } },
  });
}

/** The Barman Cloud plugin's ObjectStore: where CloudNativePG archives WAL and writes base backups. */
export const CNPG_PLUGIN = 'barman-cloud.cloudnative-pg.io';
export function objectStoreName(input: Pick<DatabaseInput, 'owner'>): string {
  return dnsLabel(baseName(input.owner), 'store');
}

function cnpgObjectStore(input: DatabaseInput, spec: ResolvedSpec): Obj {
  const store = spec.backup.objectStore!;
  const secret = store.credentialsSecretRef.name;
  return {
    apiVersion: 'barmancloud.cnpg.io/v1',
    kind: 'ObjectStore',
    metadata: meta(input.owner, spec, objectStoreName(input)),
    spec: {
      // The plugin prunes base backups and WAL by the same retention the Database states.
      retentionPolicy: `${spec.backup.retentionDays}d`,
      configuration: {
        destinationPath: storePath(store, appName(input.owner)),
        ...(store.endpoint ? { endpointURL: store.endpoint } : {}),
        s3Credentials: {
          accessKeyId: { name: secret, key: 'AWS_ACCESS_KEY_ID' },
          secretAccessKey: { name: secret, key: 'AWS_SECRET_ACCESS_KEY' },
        },
        wal: { compression: 'gzip' },
        data: { compression: 'gzip' },
      },
    },
  };
}

export function composeCluster(
  input: DatabaseInput,
  spec: ResolvedSpec,
  backups: BackupPlan,
  restore: RestorePlan,
): Plan {
  const { owner } = input;
  // The workload first: it is what the user hears about while it is not ready.
  const resources: Desired[] = [];
  const requirements: Plan['requirements'] = {};
  if (usesCnpg(spec)) {
    requirements[CNPG_CRD] = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      matchName: CNPG_CRD_NAME,
    };
    // Without the operator its Cluster kind does not exist: composing one would only fail to apply.
    if (cnpgOperator(input) === 'installed')
      resources.push({ key: CLUSTER_KEYS.cnpg, object: cnpgCluster(input, spec) });
    if (input.observed.has(CLUSTER_KEYS.backupVolume))
      resources.push({ key: CLUSTER_KEYS.backupVolume, object: backupVolume(input, spec) });
    if (spec.backup.objectStore && cnpgOperator(input) === 'installed')
      resources.push({ key: CLUSTER_KEYS.objectStore, object: cnpgObjectStore(input, spec) });
  } else {
    resources.push({ key: CLUSTER_KEYS.statefulset, object: statefulSet(input, spec) }, ...services(input, spec));
  }
  const ns = owner.namespace;
  // Claims mode wraps the Secret in an Object whose deletion policy keeps it; a namespaced Database asks.
  if (!owner.claim && !input.observed.has(CLUSTER_KEYS.credentials)) {
    requirements[KEPT_CREDENTIALS] = {
      apiVersion: 'v1',
      kind: 'Secret',
      matchName: names.credentials(owner),
      namespace: ns,
    };
  }
  const keepWithData = !owner.claim && !usesCnpg(spec) && spec.deletionPolicy === 'Retain';
  if (keepWithData)
    requirements[DATA_CLAIM] = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      matchName: dataClaimName(input),
      namespace: ns,
    };
  const kept = input.required.get(KEPT_CREDENTIALS)?.[0];
  const password =
    stablePassword(input, CLUSTER_KEYS.credentials, CLUSTER_KEYS.connection) ??
    secretValue(kept, 'password') ??
    input.newPassword();
  // basic-auth, the type CloudNativePG's initdb wants; the StatefulSet reads the same keys.
  const credentials = secret(
    owner,
    spec,
    names.credentials(owner),
    { username: APP_USER, password },
    'kubernetes.io/basic-auth',
  );
  const claim = keepWithData ? input.required.get(DATA_CLAIM)?.[0] : undefined;
  const claimUid = str(claim, 'metadata', 'uid');
  if (claimUid) {
    (credentials['metadata'] as Obj)['ownerReferences'] = [
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: dataClaimName(input), uid: claimUid },
    ];
  }
  resources.push({ key: CLUSTER_KEYS.credentials, object: credentials });
  if (restore.requirement) requirements[RESTORE_BACKUP] = restore.requirement;
  // Its own status tells how a restore goes: the Job does not hold readiness by itself.
  if (restore.job) resources.push({ ...restore.job, independent: true });
  // Applications connect once the data is back, not to the empty server before it.
  const connect = restore.state === 'none' || restore.state === 'done' || input.observed.has(CLUSTER_KEYS.connection);
  if (connect)
    resources.push({
      key: CLUSTER_KEYS.connection,
      object: connectionSecret(input, spec, {
        host: clusterHost(input, spec),
        port: ENGINES[spec.engine].port,
        username: APP_USER,
        password,
        dbname: dbname(owner),
      }),
    });
  resources.push(...backups.resources);
  return { resources, requirements, retiring: backups.retiring };
}
