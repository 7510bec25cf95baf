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
import {
  type CutoverPlan,
  DBNAME_ANNOTATION,
  type InstanceMeta,
  instanceMeta,
  metaFor,
  type Target,
  handOver,
} from './cutover.js';
import {
  claimNames,
  hasInstance,
  instanceName,
  keyOf,
  liveInstance,
  INSTANCE_KEYS,
  ROLE_LABEL,
  serverRole,
} from './instances.js';
import { creationOf, RESTORE_KEY, type RestorePlan } from './restore.js';
import { DATA_CLAIM, type GrowthPlan, RESTART_ANNOTATION } from './volumes.js';
import { pointOf } from './restore-source.js';
import { restoreJob } from '../backup/job.js';
import { judge } from '../../kinds/index.js';
import { condition } from '../../kube.js';
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
export const KEPT_CREDENTIALS = 'kept-credentials';

/** A generation's data volume claim, as the StatefulSet controller names it: <template>-<statefulset>-<ordinal>. */
export function dataClaimName(input: DatabaseInput, generation = 0): string {
  return `data-${instanceName(input.owner, generation)}-0`;
}

/** The required resource that tells whether CloudNativePG is installed. */
export const CNPG_CRD = 'cnpg-crd';
const CNPG_CRD_NAME = 'clusters.postgresql.cnpg.io';

/** uid and gid the official postgres and mysql images run their server as. */
const DB_UID = 999;

export function usesCnpg(spec: ResolvedSpec): boolean {
  return spec.highAvailability && spec.engine === 'postgres';
}

export type OperatorState = 'installed' | 'missing' | 'unknown';

/** Is the CloudNativePG operator installed? Read from the CRD Crossplane fetched for us. */
export function cnpgOperator(input: DatabaseInput): OperatorState {
  if (hasInstance(input.observed, INSTANCE_KEYS.cnpg)) return 'installed';
  const answer = input.required.get(CNPG_CRD);
  if (answer === undefined) return 'unknown';
  return answer.length > 0 ? 'installed' : 'missing';
}

/** Where CloudNativePG sends read-only connections: the -ro Service, its replicas. */
export function readOnlyHost(input: DatabaseInput, generation = 0): string {
  return `${instanceName(input.owner, generation)}-ro.${input.owner.namespace}.svc.cluster.local`;
}

/**
 * Where applications connect in the cluster: a StatefulSet's client Service
 * (it follows the live generation), or the live Cluster's -rw Service.
 */
export function clusterHost(input: DatabaseInput, spec: ResolvedSpec, generation = 0): string {
  const service = usesCnpg(spec) ? `${instanceName(input.owner, generation)}-rw` : baseName(input.owner);
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
  const sts = liveInstance(input.observed, INSTANCE_KEYS.statefulset);
  const data = list(sts, 'spec', 'volumeClaimTemplates').find((t) => str(t, 'metadata', 'name') === 'data');
  return gigabytes(str(data, 'spec', 'resources', 'requests', 'storage'));
}

/** Storage of the CloudNativePG cluster as observed, in GiB. */
export function observedCnpgGB(input: Pick<Context, 'observed'>): number | undefined {
  return gigabytes(str(liveInstance(input.observed, INSTANCE_KEYS.cnpg), 'spec', 'storage', 'size'));
}

/** Storage of the highly available database's backup volume as observed, in GiB. */
export function observedBackupVolumeGB(input: Pick<Context, 'observed'>): number | undefined {
  return gigabytes(str(input.observed.get(CLUSTER_KEYS.backupVolume), 'spec', 'resources', 'requests', 'storage'));
}

/** The pods of one generation of the StatefulSet: what its Services select. */
function podSelector(input: DatabaseInput, spec: ResolvedSpec, generation: number): Record<string, string> {
  return {
    'app.kubernetes.io/instance': labels(input.owner, spec)['app.kubernetes.io/instance']!,
    'app.kubernetes.io/name': 'database',
    [ROLE_LABEL]: serverRole(generation),
  };
}

/** The governing (headless) Service of a generation's StatefulSet. */
const headlessName = (input: DatabaseInput, generation: number) =>
  dnsLabel(instanceName(input.owner, generation), 'headless');

/**
 * One generation's StatefulSet. `keepVolumes` retains its volumes whatever
 * the deletion policy: an instance a restore replaced is handed to the user
 * with its data. A restored generation carries its DatabaseRestore's label.
 */
function statefulSet(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation = 0,
  opts: { keepVolumes?: boolean; restored?: Target; restart?: string } = {},
): Obj {
  const { owner } = input;
  const engine = ENGINES[spec.engine];
  const name = instanceName(owner, generation);
  const selector = podSelector(input, spec, generation);
  const probe = { exec: { command: engine.readyCommand }, timeoutSeconds: 5 };
  // Claim templates cannot change once the StatefulSet exists: keep what runs.
  const observed = input.observed.get(keyOf(CLUSTER_KEYS.statefulset, generation));
  const observedTemplates = list(observed, 'spec', 'volumeClaimTemplates');
  // (An earlier version's StatefulSet also has a "backup" template; it stays, with its volume.)
  const templates = observedTemplates.length > 0 ? observedTemplates : [claimTemplate(input, spec, 'data')];
  const restored = metaFor(observed, opts.restored);
  // A restart asked once to finish a file-system resize stays asked (taking it back would restart the pod again).
  const restart = opts.restart ?? str(observed, 'spec', 'template', 'metadata', 'annotations', RESTART_ANNOTATION);
  const metadata = meta(owner, spec, name, restored.labels);
  if (Object.keys(restored.annotations).length > 0) metadata['annotations'] = restored.annotations;
  const sts: V1StatefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata,
    spec: {
      serviceName: headlessName(input, generation),
      replicas: 1,
      selector: { matchLabels: selector },
      // Retain: deleting the Database (and so this StatefulSet) keeps the volumes.
      persistentVolumeClaimRetentionPolicy: {
        whenDeleted: opts.keepVolumes ? 'Retain' : spec.deletionPolicy,
        whenScaled: 'Retain',
      },
      updateStrategy: { type: 'RollingUpdate' },
      template: {
        metadata: {
          labels: labels(owner, spec, { [ROLE_LABEL]: serverRole(generation) }),
          ...(restart ? { annotations: { [RESTART_ANNOTATION]: restart } } : {}),
        },
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

const servicePorts = (spec: ResolvedSpec) => [
  { name: 'db', port: ENGINES[spec.engine].port, targetPort: 'db', protocol: 'TCP' },
];

/** The client Service: where applications connect, selecting the serving generation's pods. */
function clientService(input: DatabaseInput, spec: ResolvedSpec, serving: number): Desired {
  return {
    key: CLUSTER_KEYS.service,
    object: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(input.owner, spec, baseName(input.owner)),
      spec: { type: 'ClusterIP', selector: podSelector(input, spec, serving), ports: servicePorts(spec) },
    },
  };
}

/** A generation's headless Service: its StatefulSet's pods by name, ready or not. */
function headlessService(input: DatabaseInput, spec: ResolvedSpec, generation: number): Desired {
  return {
    key: keyOf(CLUSTER_KEYS.headless, generation),
    object: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(input.owner, spec, headlessName(input, generation)),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: podSelector(input, spec, generation),
        ports: servicePorts(spec),
      },
    },
  };
}

/**
 * A plain Kubernetes object that must outlive the Database under Retain goes
 * through a provider-kubernetes Object: the Object's management policies (no
 * Delete) orphan it, where a directly composed object would be garbage
 * collected with its owner. Delete lets the Object take it along.
 */
function lasting(input: DatabaseInput, spec: ResolvedSpec, name: string, manifest: Obj, keep = false): Obj {
  return {
    apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
    kind: 'Object',
    metadata: meta(input.owner, spec, name),
    spec: {
      managementPolicies:
        keep || spec.deletionPolicy === 'Retain' ? ['Observe', 'Create', 'Update', 'LateInitialize'] : ['*'],
      forProvider: { manifest },
    },
  };
}

/** Where a CloudNativePG cluster recovers from: another cluster's archive in an ObjectStore, up to a time (or its end). */
export interface Recovery {
  store: string;
  /** The cluster whose base backups and WAL are read (its server name in the store). */
  server: string;
  targetTime?: string;
}

const RECOVERY_SOURCE = 'origin';

/** initdb for a new cluster; recovery (then the app's owner and password set again) for a restored one. */
function cnpgBootstrap(input: DatabaseInput, recovery: Recovery | undefined, database: string): Obj {
  const account = { database, owner: APP_USER, secret: { name: names.credentials(input.owner) } };
  if (!recovery) return { bootstrap: { initdb: account } };
  return {
    bootstrap: {
      recovery: {
        source: RECOVERY_SOURCE,
        ...account,
        ...(recovery.targetTime ? { recoveryTarget: { targetTime: recovery.targetTime } } : {}),
      },
    },
    externalClusters: [
      {
        name: RECOVERY_SOURCE,
        plugin: { name: CNPG_PLUGIN, parameters: { barmanObjectName: recovery.store, serverName: recovery.server } },
      },
    ],
  };
}

function cnpgCluster(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation = 0,
  opts: { keep?: boolean; recovery?: Recovery; meta?: InstanceMeta } = {},
): Obj {
  const { owner } = input;
  const name = instanceName(owner, generation);
  const restored = opts.meta ?? { labels: {}, annotations: {} };
  const annotations = Object.keys(restored.annotations).length > 0 ? { annotations: restored.annotations } : {};
  const database = restored.annotations[DBNAME_ANNOTATION] ?? dbname(owner);
  const { bootstrap, externalClusters } = cnpgBootstrap(input, opts.recovery, database) as Obj;
  return lasting(
    input,
    spec,
    name,
    {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name, namespace: owner.namespace, labels: labels(owner, spec, restored.labels), ...annotations },
      spec: {
        // The primary and its standbys: at least one for high availability, one per read replica asked for.
        instances: 1 + Math.max(1, spec.replicas),
        imageName: `ghcr.io/cloudnative-pg/postgresql:${spec.version}`,
        primaryUpdateStrategy: 'unsupervised',
        storage: { size: gi(spec.storageGB) },
        resources: resources(spec),
        affinity: { enablePodAntiAffinity: true, topologyKey: 'kubernetes.io/hostname' },
        bootstrap,
        ...(externalClusters ? { externalClusters } : {}),
        ...(spec.backup.objectStore
          ? {
              plugins: [
                { name: CNPG_PLUGIN, isWALArchiver: true, parameters: { barmanObjectName: objectStoreName(input) } },
              ],
            }
          : {}),
      },
    },
    opts.keep,
  );
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

/** Keys and objects of one generation's StatefulSet with its headless Service. */
function statefulSetGeneration(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation: number,
  opts: { keepVolumes?: boolean; restored?: Target; independent?: boolean; restart?: string } = {},
): Desired[] {
  const independent = opts.independent ? { independent: true } : {};
  return [
    {
      key: keyOf(CLUSTER_KEYS.statefulset, generation),
      object: statefulSet(input, spec, generation, opts),
      ...independent,
    },
    { ...headlessService(input, spec, generation), ...independent },
  ];
}

/** What the user is told was kept of a generation handed over: its volumes, or its Cluster. */
export function keptOf(input: DatabaseInput, spec: ResolvedSpec, generation: number, why: string): string[] {
  const ns = input.owner.namespace;
  const name = instanceName(input.owner, generation);
  if (usesCnpg(spec))
    return [
      `CloudNativePG Cluster ${name} (${why}) keeps running with its volumes; delete it when it is no longer needed: kubectl delete clusters.postgresql.cnpg.io ${name} -n ${ns}`,
    ];
  const sts = input.observed.get(keyOf(CLUSTER_KEYS.statefulset, generation));
  return claimNames(sts, name).map(
    (claim) =>
      `PersistentVolumeClaim ${claim} (${why}) is kept; delete it when it is no longer needed: kubectl delete pvc ${claim} -n ${ns}`,
  );
}

/** The restore into a StatefulSet generation: its Job, once the generation's server runs. */
function cutoverJob(input: DatabaseInput, spec: ResolvedSpec, target: Target): Desired | undefined {
  const sts = input.observed.get(keyOf(CLUSTER_KEYS.statefulset, target.generation));
  const key = keyOf(RESTORE_KEY, target.generation);
  if (target.source.kind !== 'backup' || (!input.observed.has(key) && !judge(sts).ready)) return undefined;
  const name = dnsLabel(instanceName(input.owner, target.generation), 'restore');
  const host = `${headlessName(input, target.generation)}.${input.owner.namespace}.svc.cluster.local`;
  return { key, object: restoreJob(name, input.owner, spec, target.source.location, host), independent: true };
}

/** How far a cutover into `target` has come, read from what was composed for it. */
export function cutoverProgress(
  input: DatabaseInput,
  spec: ResolvedSpec,
  target: Target,
): { state: 'building' | 'restoring' | 'ready' | 'failed'; detail: string } {
  const instance = input.observed.get(
    keyOf(usesCnpg(spec) ? CLUSTER_KEYS.cnpg : CLUSTER_KEYS.statefulset, target.generation),
  );
  const name = instanceName(input.owner, target.generation);
  const verdict = judge(instance);
  if (usesCnpg(spec))
    return verdict.ready
      ? { state: 'ready', detail: `CloudNativePG Cluster ${name} recovered and healthy` }
      : { state: 'restoring', detail: `CloudNativePG Cluster ${name} recovering: ${verdict.detail}` };
  const job = input.observed.get(keyOf(RESTORE_KEY, target.generation));
  if (condition(job, 'Failed')?.status === 'True') {
    const why = condition(job, 'Failed')?.message ?? condition(job, 'Failed')?.reason ?? 'the restore Job failed';
    return { state: 'failed', detail: `the restore into ${name} failed (${why})` };
  }
  if (condition(job, 'Complete')?.status === 'True')
    return verdict.ready
      ? { state: 'ready', detail: `${name} holds the restored data` }
      : { state: 'restoring', detail: `${name} holds the restored data; StatefulSet ${name}: ${verdict.detail}` };
  if (job) return { state: 'restoring', detail: `restore Job ${dnsLabel(name, 'restore')} running into ${name}` };
  if (verdict.ready)
    return { state: 'restoring', detail: `starting restore Job ${dnsLabel(name, 'restore')} into ${name}` };
  return { state: 'building', detail: `starting the empty instance ${name}: StatefulSet ${name}: ${verdict.detail}` };
}

export function composeCluster(
  input: DatabaseInput,
  spec: ResolvedSpec,
  backups: BackupPlan,
  restore: RestorePlan,
  cutover: CutoverPlan,
  growth?: GrowthPlan,
): Plan {
  const { owner } = input;
  const { live, target } = cutover;
  // The restored generation takes the connection once it holds the data and is ready.
  const switchTo = target && cutoverProgress(input, spec, target).state === 'ready' ? target.generation : live;
  // The workload first: it is what the user hears about while it is not ready.
  const resources: Desired[] = [];
  const releasing: Array<{ key: string; why: string }> = [];
  const requirements: Plan['requirements'] = { ...cutover.requirements };
  // The database inside: the one an instance made from another Database's data came with.
  const database =
    instanceMeta(input.observed.get(keyOf(CLUSTER_KEYS.cnpg, live))).annotations[DBNAME_ANNOTATION] ?? restore.database;
  if (usesCnpg(spec)) {
    requirements[CNPG_CRD] = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      matchName: CNPG_CRD_NAME,
    };
    // Without the operator its Cluster kind does not exist: composing one would only fail to apply.
    if (cnpgOperator(input) === 'installed') {
      // Each generation as it was made: its recovery and what it carries, read back once it exists.
      const cluster = (g: number, keep: boolean, fresh?: { recovery?: Recovery; target?: Target }) => {
        const observed = input.observed.get(keyOf(CLUSTER_KEYS.cnpg, g));
        const recovery = observed ? creationOf(observed).recovery : fresh?.recovery;
        const meta = metaFor(observed, fresh?.target, {
          ...(database ? { [DBNAME_ANNOTATION]: database } : {}),
          ...(g === 0 ? restore.annotations : {}),
        });
        return cnpgCluster(input, spec, g, { keep, meta, ...(recovery ? { recovery } : {}) });
      };
      resources.push({
        key: keyOf(CLUSTER_KEYS.cnpg, live),
        object: cluster(live, false, live === 0 && restore.recovery ? { recovery: restore.recovery } : undefined),
      });
      if (target) {
        const point = pointOf(target.source);
        const recovery: Recovery = {
          store: objectStoreName(input),
          server: instanceName(owner, live),
          ...(point ? { targetTime: point } : {}),
        };
        resources.push({
          key: keyOf(CLUSTER_KEYS.cnpg, target.generation),
          object: cluster(target.generation, false, { recovery, target }),
          independent: true,
        });
      }
      const handed = handOver(
        input,
        CLUSTER_KEYS.cnpg,
        cutover.release,
        'replaced by a restore; kept with its data',
        (g) => [{ key: keyOf(CLUSTER_KEYS.cnpg, g), object: cluster(g, true), independent: true }],
      );
      resources.push(...handed.resources);
      releasing.push(...handed.releasing);
    }
    if (growth) Object.assign(requirements, growth.requirements);
    if (input.observed.has(CLUSTER_KEYS.backupVolume))
      resources.push({ key: CLUSTER_KEYS.backupVolume, object: backupVolume(input, spec) });
    if (spec.backup.objectStore && cnpgOperator(input) === 'installed')
      resources.push({ key: CLUSTER_KEYS.objectStore, object: cnpgObjectStore(input, spec) });
  } else {
    resources.push(
      ...statefulSetGeneration(input, spec, live, growth?.restart ? { restart: growth.restart } : {}),
      clientService(input, spec, switchTo),
    );
    if (growth) {
      Object.assign(requirements, growth.requirements);
      if (growth.resource) resources.push({ ...growth.resource, independent: true });
    }
    if (target) {
      resources.push(...statefulSetGeneration(input, spec, target.generation, { restored: target, independent: true }));
      const job = cutoverJob(input, spec, target);
      if (job) resources.push(job);
    }
    // Once let go, its volumes stay; the StatefulSet, its Service and its Job go.
    const handed = handOver(
      input,
      CLUSTER_KEYS.statefulset,
      cutover.release,
      'replaced by a restore; its volumes are retained',
      (g) => statefulSetGeneration(input, spec, g, { keepVolumes: true, independent: true }),
    );
    resources.push(...handed.resources);
    releasing.push(...handed.releasing);
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
  // The data claim is read (growth.requirements) for its size; under Retain it also keeps the password (below).
  const keepWithData = !owner.claim && !usesCnpg(spec) && spec.deletionPolicy === 'Retain';
  const keptSecret = input.required.get(KEPT_CREDENTIALS)?.[0];
  const password =
    stablePassword(input, CLUSTER_KEYS.credentials, CLUSTER_KEYS.connection) ??
    secretValue(keptSecret, 'password') ??
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
  if (claimUid && str(claim, 'metadata', 'name') === dataClaimName(input, live)) {
    (credentials['metadata'] as Obj)['ownerReferences'] = [
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: dataClaimName(input, live), uid: claimUid },
    ];
  }
  resources.push({ key: CLUSTER_KEYS.credentials, object: credentials });
  if (restore.requirement) requirements[restore.requirement.name] = restore.requirement.requirement;
  // Its own status tells how a restore goes: the Job does not hold readiness by itself.
  if (restore.job) resources.push({ ...restore.job, independent: true });
  // Applications connect once the data is back, not to the empty server before it.
  const connect = restore.state === 'none' || restore.state === 'done' || input.observed.has(CLUSTER_KEYS.connection);
  if (connect)
    resources.push({
      key: CLUSTER_KEYS.connection,
      object: connectionSecret(input, spec, {
        host: clusterHost(input, spec, switchTo),
        port: ENGINES[spec.engine].port,
        username: APP_USER,
        password,
        dbname: database ?? dbname(owner),
        ...(usesCnpg(spec) && spec.replicas > 0
          ? { readOnly: { host: readOnlyHost(input, switchTo), port: ENGINES[spec.engine].port } }
          : {}),
      }),
    });
  resources.push(...backups.resources);
  Object.assign(requirements, backups.requirements);
  return { resources, requirements, retiring: backups.retiring, releasing };
}
