// A highly available PostgreSQL in the cluster: a CloudNativePG Cluster (a
// primary and its standbys, reads through its -ro Service), composed through a
// provider-kubernetes Object so that Retain can orphan it, with the Barman
// Cloud plugin's ObjectStore when backups have one. Backed up by CloudNativePG
// Backups through the plugin, with WAL archived: restorable to a point in
// time. Made from a source by recovery from the source's archive; a
// DatabaseRestore recovers the next generation beside the live one and the
// connection Secret's host switches to its -rw Service. The operator grows
// the volumes and upgrades in place. Needs the operator: says so when it is
// not installed.
import {
  type CnpgCluster,
  type CnpgObjectStore,
  cnpgBackupOf,
  cnpgClusterOf,
  firstRecoverabilityPoint,
} from '../../../kinds/cnpg.js';
import type { KubernetesObject } from '../../../kinds/provider-kubernetes.js';
import { SpecError } from '../../../errors.js';
import { s3RegionalEndpoint } from '../../../kinds/aws.js';
import { claimOf } from '../../../kinds/core.js';
import { judge, wrappedManifest } from '../../../kinds/index.js';
import { groupOf, kindOf, nameOf, num, type Obj, record, str } from '../../../kube.js';
import { boundedLabel, dnsLabel } from '../../../names.js';
import { gigabytes, wholeGigabytes } from '../../../quantity.js';
import type { Desired, Requirement, Summary } from '../../blueprint.js';
import { type AlertRule, promRegex, SOURCES, selector, volumeFullRule } from '../alert-rules.js';
import { AUTO_GROWTH_ANNOTATION, dueGrowth, takeDue, grownStorage, recordedGrowth } from './auto-growth.js';
import { measuredUsage, measureEvery, USAGE_PODS, usageCronJob, usageRequirement } from './volume-usage.js';
import { backedUp, backupSummary, oneObject } from './backup-methods.js';
import { storePath } from '../commands.js';
import {
  APP_USER,
  appName,
  baseName,
  type DatabaseInput,
  dbname,
  labels,
  meta,
  names,
  USER_CREDENTIAL_KEYS,
} from '../database.js';
import { databaseName, ENGINES, tagOf } from '../engine.js';
import {
  asMade,
  byConnection,
  DBNAME_ANNOTATION,
  generationNamed,
  handOver,
  hasInstance,
  instanceName,
  keyOf,
  madeFrom,
} from '../instances.js';
import { pointOf } from '../source.js';
import {
  cnpgOperatorNamespace,
  gi,
  inClusterDeletion,
  inClusterIdentity,
  inClusterSecrets,
  lasting,
  namespaceNamed,
  networkPolicy,
  podResources,
  resizedBefore,
} from './in-cluster.js';
import type {
  BackupMethod,
  ComposeCall,
  Composed,
  DatabaseCall,
  GrowthPlan,
  InstanceMeta,
  Placement,
  RestoreTarget,
} from './placement.js';
import { CNPG_KEYS, CNPG_PLUGIN, objectStoreName, RECOVERY_SOURCE } from './cnpg-names.js';
import { cnpgDrill } from './cnpg-drill.js';

export { CNPG_KEYS, CNPG_PLUGIN, objectStoreName } from './cnpg-names.js';

/** The required resource that tells whether CloudNativePG is installed. */
export const CNPG_CRD = 'cnpg-crd';
const CNPG_CRD_NAME = 'clusters.postgresql.cnpg.io';
/** Required resource: the PersistentVolumeClaims of the live Cluster, by the label the operator puts on them. */
export const CNPG_CLAIMS = 'cnpg-claims';
/** The user CloudNativePG's PostgreSQL images run as. */
const CNPG_UID = 26;
/** Required resource: the StorageClass of the live Cluster's volumes, read before asking them to grow. */
export const CNPG_STORAGE_CLASS = 'cnpg-storage-class';

/** Where a Cluster recovers from: another cluster's archive in an ObjectStore, up to a time (or its end). */
export interface Recovery {
  store: string;
  /** The cluster whose base backups and WAL are read (its server name in the store). */
  server: string;
  targetTime?: string;
}

export type OperatorState = 'installed' | 'missing' | 'unknown';

/** Is the CloudNativePG operator installed? Read from the CRD Crossplane fetched for us. */
function operator(input: DatabaseInput): OperatorState {
  if (hasInstance(input.observed, CNPG_KEYS.cluster)) return 'installed';
  const answer = input.required.get(CNPG_CRD);
  if (answer === undefined) return 'unknown';
  return answer.length > 0 ? 'installed' : 'missing';
}

/** The live generation: the Cluster whose -rw Service the connection Secret names. */
const { liveGeneration, live: liveCluster } = byConnection(CNPG_KEYS.cluster, cnpgClusterOf, ({ name, namespace }) =>
  name && namespace ? `${name}-rw.${namespace}.svc.cluster.local` : undefined,
);

/** Where writes go: a generation's -rw Service. */
const rwHost = (input: DatabaseInput, generation: number) =>
  `${instanceName(input.owner, generation)}-rw.${input.owner.namespace}.svc.cluster.local`;

/** Where CloudNativePG sends read-only connections: the -ro Service, its replicas. */
const roHost = (input: DatabaseInput, generation: number) =>
  `${instanceName(input.owner, generation)}-ro.${input.owner.namespace}.svc.cluster.local`;

/** initdb for a new cluster; recovery (then the app's owner and password set again) for a restored one. */
function bootstrap(input: DatabaseInput, recovery: Recovery | undefined, database: string): Obj {
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

function cluster(
  input: DatabaseCall,
  generation: number,
  opts: { keep?: boolean; recovery?: Recovery; meta: InstanceMeta },
): KubernetesObject<CnpgCluster> {
  const { owner, spec } = input;
  const name = instanceName(owner, generation);
  const restored = opts.meta;
  const own = input.observed.get(keyOf(CNPG_KEYS.cluster, generation));
  // Never smaller than it is (a Cluster that grew by itself, kept after a switch), and a new one (a restore's)
  // holds what the live one holds: at least the size it grew to, with that growth recorded, so it stays the floor.
  const live = own ? undefined : input.observed.get(keyOf(CNPG_KEYS.cluster, liveGeneration(input.observed)));
  const sizeGB = Math.max(spec.storageGB, gigabytes(str(own ?? live, 'spec', 'storage', 'size')) ?? 0);
  const grown = sizeGB > spec.storageGB ? recordedGrowth(own ?? live) : undefined;
  const carried = {
    ...restored.annotations,
    ...(grown ? { [AUTO_GROWTH_ANNOTATION]: JSON.stringify(grown) } : {}),
  };
  const annotations = Object.keys(carried).length > 0 ? { annotations: carried } : {};
  const database = restored.annotations[DBNAME_ANNOTATION] ?? dbname(owner);
  const { bootstrap: boot, externalClusters } = bootstrap(input, opts.recovery, database) as Obj;
  // A volume keeps the class it was made with: the one observed, else the spec's (or the platform's).
  const observedClass = str(own, 'spec', 'storage', 'storageClass');
  const storageClass = observedClass ?? spec.storageClassName;
  return lasting(
    input,
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
        storage: { size: gi(sizeGB), ...(storageClass ? { storageClass } : {}) },
        resources: podResources(spec),
        affinity: { enablePodAntiAffinity: true, topologyKey: 'kubernetes.io/hostname' },
        bootstrap: boot,
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

function backupVolume(input: DatabaseCall): Obj {
  const name = dnsLabel(baseName(input.owner), 'backup');
  return lasting(input, name, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: input.owner.namespace, labels: labels(input.owner, input.spec) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: gi(input.spec.storageGB) } } },
  });
}

/** The Barman Cloud plugin's ObjectStore: where the Cluster archives WAL and writes base backups. */
function objectStore(input: DatabaseCall): CnpgObjectStore {
  const { spec } = input;
  const store = spec.backup.objectStore!;
  const secret = store.credentialsSecretRef.name;
  // A store made for the Database has the provider's key names; one the user or the platform names, the CLI's.
  const keys = store.credentialKeys ?? USER_CREDENTIAL_KEYS;
  return {
    apiVersion: 'barmancloud.cnpg.io/v1',
    kind: 'ObjectStore',
    metadata: meta(input.owner, spec, objectStoreName(input)),
    spec: {
      // The plugin prunes base backups and WAL by the same retention the Database states.
      retentionPolicy: `${spec.backup.retentionDays}d`,
      configuration: {
        destinationPath: storePath(store, appName(input.owner)),
        // Without an endpoint, S3's in the store's region: the plugin takes a region only from a Secret.
        endpointURL: store.endpoint ?? s3RegionalEndpoint(store.region),
        s3Credentials: {
          accessKeyId: { name: secret, key: keys.accessKeyId },
          secretAccessKey: { name: secret, key: keys.secretAccessKey },
        },
        wal: { compression: 'gzip' },
        data: { compression: 'gzip' },
      },
    },
  };
}

/** How an observed Cluster was recovered, as it was composed: kept for as long as it exists. */
function recoveryOf(instance: Obj): Recovery | undefined {
  const { store, server, targetTime } = cnpgClusterOf(instance)?.recovery ?? {};
  return store && server ? { store, server, ...(targetTime ? { targetTime } : {}) } : undefined;
}

/**
 * A CloudNativePG Cluster's volumes as they grow: the operator resizes its
 * claims when spec.storage.size grows; this reads them back (their capacity,
 * and how many have it) for status and the StorageResized condition. With
 * spec.maxStorageGB the primary's volume is measured (volume-usage.ts), and
 * past spec.storage.growAtPercent the Cluster asks for a step more by itself,
 * recorded on the Cluster so that the grown size is the floor from then on.
 */
function growth(input: DatabaseCall, generation: number, clusterName: string): GrowthPlan {
  const { spec } = input;
  const plan: GrowthPlan = {
    requirements: {
      [CNPG_CLAIMS]: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        matchLabels: { 'cnpg.io/cluster': clusterName },
        namespace: input.owner.namespace,
      },
    },
    warnings: [],
  };
  const key = keyOf(CNPG_KEYS.cluster, generation);
  const composedGB = wholeGigabytes(liveCluster(input.observed)?.storageSize);
  // A growth asked stands (the Cluster as composed carries it), though the operator may not have applied it yet.
  const recorded =
    recordedGrowth(record(input.composed.get(key), 'spec', 'forProvider', 'manifest')) ??
    recordedGrowth(input.observed.get(key));
  if (recorded) plan.lastAutoGrowth = recorded;
  // Once it grew by itself, the size composed is the floor: spec.storageGB under it asks no shrink.
  let want = Math.max(spec.storageGB, recorded?.toGB ?? 0, recorded ? (composedGB ?? 0) : 0);
  const claims = input.required.get(CNPG_CLAIMS);
  // Bound claims only: a new standby's claim has no size yet.
  const sizes = (claims ?? [])
    .map((c) => wholeGigabytes(claimOf(c)?.capacity))
    .filter((gb): gb is number => gb !== undefined);
  const capacity = sizes.length > 0 ? Math.min(...sizes) : undefined;
  const primary = liveCluster(input.observed)?.currentPrimary;
  if (spec.maxStorageGB !== undefined && primary) {
    // The operator names each instance's data claim as its pod.
    plan.requirements[USAGE_PODS] = usageRequirement(input, primary);
    const usage = measuredUsage(input);
    if (usage) plan.usage = usage;
    if (composedGB !== undefined) {
      const due = dueGrowth(spec, input.now, {
        volume: `volume ${primary} (the primary of Cluster ${clusterName})`,
        requestedGB: composedGB,
        ...(capacity !== undefined ? { capacityGB: capacity } : {}),
        settled: capacity !== undefined && capacity >= composedGB && want <= composedGB,
        ...(usage ? { usage } : {}),
        ...(recorded ? { recorded } : {}),
      });
      want = takeDue(plan, due) ?? want;
    }
  }
  plan.requestedGB = want;
  // A size asked above the composed one is a growth: only if the volumes' StorageClass allows expansion (the
  // StatefulSet's preflight, statefulset-volume.ts). Otherwise the composed size stays and the user is told why;
  // asked anyway, the operator would leave the claims pending a resize that never comes.
  if (composedGB !== undefined && want > composedGB) {
    const className =
      claims?.map((c) => claimOf(c)?.storageClassName).find(Boolean) ?? liveCluster(input.observed)?.storageClass;
    if (className)
      plan.requirements[CNPG_STORAGE_CLASS] = {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        matchName: className,
      };
    const answer = className ? input.required.get(CNPG_STORAGE_CLASS) : [];
    const hold = () => {
      // Nothing grows: no growth to tell of, and the size asked stays what the Cluster has.
      plan.holdGB = composedGB;
      delete plan.notices;
      if (recorded) plan.lastAutoGrowth = recorded;
      else delete plan.lastAutoGrowth;
      plan.requestedGB = composedGB;
    };
    // Not known yet (the first call of a reconcile): nothing grows until it is.
    if (claims === undefined || answer === undefined) hold();
    else if (answer[0]?.['allowVolumeExpansion'] !== true) {
      const why = !className
        ? `the volumes of Cluster ${clusterName} have no StorageClass, so they cannot be expanded`
        : !answer[0]
          ? `StorageClass ${className} does not exist, so it cannot expand volumes`
          : `StorageClass ${className} does not allow volume expansion`;
      const asked =
        want > spec.storageGB
          ? `though its primary's volume is past spec.storage.growAtPercent and would grow by itself to ${want}Gi; nothing was changed (move the data to a Database on a class that can grow, or free space)`
          : `spec.storageGB asks ${want}Gi; nothing was changed (move the data to a Database on a class that can grow, or set spec.storageGB back to ${composedGB})`;
      const message = `${why}: Cluster ${clusterName} stays at ${composedGB}Gi, ${asked}`;
      hold();
      plan.condition = { ok: false, reason: 'ExpansionNotAllowed', message };
      plan.warnings.push({ reason: 'ExpansionNotAllowed', message });
      return plan;
    }
  }
  if (capacity === undefined) return plan;
  plan.capacityGB = capacity;
  if (plan.holdGB !== undefined) return plan;
  if (capacity >= want) {
    // Said only once the volumes grew: since the size last reported, or a resize said before.
    const before = num(input.xr, 'status', 'storage', 'capacityGB');
    if (!resizedBefore(input) && !(before !== undefined && before < capacity)) return plan;
    plan.condition = {
      ok: true,
      reason: 'Resized',
      message: `the ${sizes.length} volumes of Cluster ${clusterName} have ${capacity}Gi or more`,
    };
    return plan;
  }
  const grown = sizes.filter((gb) => gb >= want).length;
  plan.updating = `volumes of Cluster ${clusterName}: ${capacity}Gi → ${want}Gi (${grown} of ${sizes.length} grown)`;
  plan.condition = { ok: false, reason: 'Resizing', message: plan.updating };
  return plan;
}

/**
 * The NetworkPolicy of a highly available Database: every composed Cluster's
 * pods (CloudNativePG labels them with their Cluster's name). Besides what every
 * Database admits, the operator reaches each instance's manager (8000) and
 * PostgreSQL (5432), and the instances reach each other on any port (streaming
 * replication, pg_rewind, the manager's status), as CloudNativePG's networking
 * page asks.
 */
function clusterPolicy(input: DatabaseCall, clusters: string[]): Desired {
  const pods = {
    matchExpressions: [{ key: 'cnpg.io/cluster', operator: 'In', values: [...new Set(clusters)].sort() }],
  };
  return networkPolicy(input, pods, ENGINES[input.spec.engine].port, [
    {
      from: [
        {
          namespaceSelector: { matchLabels: namespaceNamed(cnpgOperatorNamespace(input)) },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'cloudnative-pg' } },
        },
      ],
      ports: [
        { protocol: 'TCP', port: 8000 },
        { protocol: 'TCP', port: 5432 },
      ],
    },
    { from: [{ podSelector: pods }] },
  ]);
}

/**
 * The Cluster's Object at the size its growth says, where that is not spec.storageGB (held while its volumes
 * cannot grow, or grown by itself), with its last growth by itself recorded on it.
 */
function sized(object: KubernetesObject<CnpgCluster>, growth: GrowthPlan | undefined): KubernetesObject<CnpgCluster> {
  const manifest = object.spec.forProvider.manifest;
  const gb = growth?.holdGB ?? growth?.requestedGB;
  if (gb !== undefined) ((manifest.spec as Obj)['storage'] as Obj)['size'] = gi(gb);
  if (growth?.lastAutoGrowth) {
    const metadata = manifest.metadata as Obj;
    metadata['annotations'] = {
      ...((metadata['annotations'] as Obj | undefined) ?? {}),
      [AUTO_GROWTH_ANNOTATION]: JSON.stringify(growth.lastAutoGrowth),
    };
  }
  return object;
}

function compose(call: ComposeCall): Composed {
  const { input, instances, target, serving } = call;
  const { owner, spec } = input;
  const { live } = instances;
  const _database = call.restore.database;
  const resources: Desired[] = [];
  const requirements: Record<string, Requirement> = {
    [CNPG_CRD]: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', matchName: CNPG_CRD_NAME },
  };
  let releasing: Composed['releasing'] = [];
  const installed = operator(input) === 'installed';
  // Without the operator its Cluster kind does not exist: composing one would only fail to apply.
  if (installed) {
    // Each generation as it was made: its recovery and what it carries.
    const generation = (g: number, keep: boolean, fresh?: { made?: Recovery; target?: RestoreTarget }) => {
      const { made, meta } = asMade(call, CNPG_KEYS.cluster, g, recoveryOf, fresh);
      return cluster(input, g, { keep, meta, ...(made ? { recovery: made } : {}) });
    };
    const made = call.restore.creation?.made as Recovery | undefined;
    const live0 = generation(live, false, live === 0 && made ? { made } : undefined);
    resources.push({
      key: keyOf(CNPG_KEYS.cluster, live),
      object: sized(live0, call.growth),
    });
    // Storage that grows itself: the primary's volume, measured on its node.
    const primary = liveCluster(input.observed)?.currentPrimary;
    if (spec.maxStorageGB !== undefined && primary)
      resources.push(
        usageCronJob(
          input,
          {
            // Named after the Cluster: the primary (and so the claim measured) changes with a failover.
            name: boundedLabel(52, instanceName(owner, live), 'usage'),
            claimName: primary,
            serverPods: { 'cnpg.io/instanceName': primary },
            image: live0.spec.forProvider.manifest.spec.imageName,
            uid: CNPG_UID,
          },
          measureEvery(input),
        ),
      );
    if (target) {
      const point = pointOf(target.source);
      // A backup is in the archive of the cluster it was taken of, which may be an earlier generation.
      const taken = target.source.kind === 'backup' ? target.source.instance : undefined;
      const recovery: Recovery = {
        store: objectStoreName(input),
        server: taken ?? instanceName(owner, live),
        ...(point ? { targetTime: point } : {}),
      };
      resources.push({
        key: keyOf(CNPG_KEYS.cluster, target.generation),
        object: generation(target.generation, false, { made: recovery, target }),
        independent: true,
      });
    }
    const handed = handOver(input, CNPG_KEYS.cluster, call.release, cnpgPlacement.handOverWhy, (g) => [
      { key: keyOf(CNPG_KEYS.cluster, g), object: generation(g, true), independent: true },
    ]);
    resources.push(...handed.resources);
    releasing = handed.releasing;
  }
  Object.assign(requirements, call.growth?.requirements);
  if (input.observed.has(CNPG_KEYS.backupVolume))
    resources.push({ key: CNPG_KEYS.backupVolume, object: backupVolume(input) });
  if (spec.backup.objectStore && installed) resources.push({ key: CNPG_KEYS.objectStore, object: objectStore(input) });
  const port = ENGINES[spec.engine].port;
  const secrets = inClusterSecrets(
    call,
    { host: rwHost(input, serving), port },
    spec.replicas > 0 ? { host: roHost(input, serving), port } : undefined,
  );
  resources.push(...secrets.resources);
  const clusters = resources
    .map(({ object }) => wrappedManifest(object))
    .filter((m) => kindOf(m) === 'Cluster' && groupOf(m) === 'postgresql.cnpg.io')
    .map((m) => nameOf(m));
  if (clusters.length > 0) resources.push(clusterPolicy(input, clusters));
  return {
    resources,
    requirements: { ...requirements, ...secrets.requirements },
    releasing,
    ...(secrets.connection ? { connection: secrets.connection } : {}),
  };
}

/** CloudNativePG Backups through the plugin, with WAL archived: restorable to a point in time. */
const backups: BackupMethod = {
  name: 'cnpg',
  restores: 'a highly available Database (CloudNativePG) restores a CloudNativePG backup',
  accepts: () => true,
  needsObjectStore: true,
  // Of the Cluster that served when it was taken.
  take: (call) =>
    oneObject(call, CNPG_KEYS.backup, 'postgresql.cnpg.io/v1', 'Backup', {
      cluster: { name: backedUp(call, CNPG_KEYS.backup, ['spec', 'cluster', 'name'], baseName(call.target.owner)) },
      method: 'plugin',
      pluginConfiguration: { name: CNPG_PLUGIN },
    }),
  // The operator has taken it up and not ended it.
  reads: ({ input }) => {
    const phase = cnpgBackupOf(input.observed.get(CNPG_KEYS.backup))?.phase;
    return phase !== undefined && phase !== 'completed' && phase !== 'failed';
  },
  read: ({ input }, base): Summary => {
    const backup = cnpgBackupOf(input.observed.get(CNPG_KEYS.backup));
    const { name, phase } = backup ?? {};
    const fields = {
      ...base,
      // The cluster it was taken of: a restore from it reads that cluster's archive.
      ...(backup?.cluster ? { instance: backup.cluster } : {}),
      attempts: 1,
      restorable: false,
      ...(backup?.startedAt ? { startedAt: backup.startedAt } : {}),
    };
    const location = backup?.destinationPath;
    if (phase === 'completed') {
      return backupSummary('Completed', `CloudNativePG backup ${name} completed`, {
        ...fields,
        completedAt: backup?.stoppedAt,
        restorable: true,
        ...(location ? { location } : {}),
      });
    }
    if (phase === 'failed') {
      const why = backup?.error ?? 'no reason given';
      return backupSummary('Failed', `CloudNativePG backup ${name} failed: ${why}`, { ...fields, failureReason: why }, [
        { reason: 'BackupFailed', message: `CloudNativePG backup ${name} failed: ${why}` },
      ]);
    }
    if (!backup) return backupSummary('Pending', 'creating the CloudNativePG Backup', fields);
    return backupSummary(
      phase ? 'Running' : 'Pending',
      `CloudNativePG backup ${name}: ${phase ?? 'waiting for the operator'}`,
      fields,
    );
  },
  drill: cnpgDrill,
};

/** A Cluster's size as the user asked it: a size it grew to by itself is none (spec.storageGB under it is no shrink). */
function askedSize(observed: Obj | undefined): number | undefined {
  const gb = gigabytes(str(observed, 'spec', 'storage', 'size'));
  const grown = recordedGrowth(observed);
  return gb !== undefined && grown && gb <= grown.toGB ? undefined : gb;
}

export const cnpgPlacement: Placement = {
  words: 'CloudNativePG',
  ...inClusterIdentity(CNPG_KEYS.cluster),
  liveGeneration,

  refuses: () => [],
  refusesUpgrade: () => undefined,
  refusesBecoming: () =>
    'spec.highAvailability cannot be turned off for an existing CloudNativePG database: it would delete the Cluster and its volumes; move the data to a new Database instead',

  composedVersion: (observed) => tagOf(liveCluster(observed)?.imageName),
  composedEngine: () => undefined,
  composedStorageGB: (observed) =>
    [
      askedSize(observed.get(keyOf(CNPG_KEYS.cluster, liveGeneration(observed)))),
      gigabytes(claimOf(observed.get(CNPG_KEYS.backupVolume))?.requested),
    ].filter((gb): gb is number => gb !== undefined),
  runningVersion: (input) => tagOf(liveCluster(input.observed)?.image),
  pendingVersion: (_input, from, wanted) => `upgrading ${from} → ${wanted}`,
  upgradesInPlace: () => true,
  storage: (input, g) => grownStorage(input.spec, g, g?.capacityGB),
  endpoint: (input, generation) => ({ host: rwHost(input, generation), port: ENGINES[input.spec.engine].port }),
  readEndpoint: (input, generation) =>
    input.spec.replicas > 0 ? { host: roHost(input, generation), port: ENGINES[input.spec.engine].port } : undefined,
  primary: (observed) => {
    const live = liveCluster(observed);
    if (!live) return undefined;
    const { currentPrimary: name, currentPrimaryTimestamp: since } = live;
    return { ...(name ? { name } : {}), ...(since ? { since } : {}) };
  },

  prerequisite: (input) => {
    const state = operator(input);
    if (state === 'missing')
      return {
        blocker:
          'CloudNativePG is not installed in this cluster: highAvailability needs its operator (clusters.postgresql.cnpg.io); install it, or set highAvailability: false',
        reason: 'OperatorMissing',
      };
    if (state === 'unknown') return { blocker: 'checking whether the CloudNativePG operator is installed' };
    return undefined;
  },
  instanceBlocker: () => undefined,
  connectionPending: () => undefined,
  deletion: (input, live, lastBackup) =>
    input.spec.deletionPolicy === 'Retain'
      ? {
          keeps: `Retain: deleting this Database leaves CloudNativePG Cluster ${instanceName(input.owner, live)} running with its volumes, no longer managed; delete it when it is no longer needed`,
        }
      : inClusterDeletion(
          input,
          `CloudNativePG Cluster ${instanceName(input.owner, live)} and its volumes`,
          // The plugin removes base backups and WALs only by the ObjectStore's retention, while a Cluster archives.
          'its base backups and WAL archive',
          lastBackup,
        ),
  kept: (input, generation, why) => {
    const name = instanceName(input.owner, generation);
    return [
      `CloudNativePG Cluster ${name} (${why}) keeps running with its volumes; delete it when it is no longer needed: kubectl delete clusters.postgresql.cnpg.io ${name} -n ${input.owner.namespace}`,
    ];
  },
  keptObject: (input, sentence) => {
    const name = /^CloudNativePG Cluster (\S+) \(/.exec(sentence)?.[1];
    return name
      ? { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', matchName: name, namespace: input.owner.namespace }
      : undefined;
  },
  // A handed-over generation's Cluster keeps running: an Object of the same name would take it over.
  leftBehind: {
    requirement: (input) => ({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      namespace: input.owner.namespace,
      matchLabels: { 'app.kubernetes.io/instance': appName(input.owner) },
    }),
    generation: (input, obj) =>
      generationNamed(str(obj, 'metadata', 'name') ?? '', (g) => instanceName(input.owner, g)),
  },

  backup: backups,
  // The ObjectStore's first recoverability point of the live cluster, to now.
  backupStatus: (input, live) => {
    const first = firstRecoverabilityPoint(input.observed.get(CNPG_KEYS.objectStore), instanceName(input.owner, live));
    return first ? { earliestRestorableTime: first } : {};
  },
  pointInTime: {
    kept: true,
    archiveMissing: (spec, name) =>
      spec.backup.objectStore
        ? undefined
        : `Database ${name} has no spec.backup.objectStore, so CloudNativePG keeps no archive to recover from`,
  },
  restoreReadsStore: 'CloudNativePG recovers from',
  restore: {
    by: 'creation',
    // The source's archive, to the backup's end or the point asked; the source's database comes with it.
    creation: (input, source, sourceInstance) => {
      // Refused before it gets here (spec.restore.fromSnapshot is for placement aws): nothing to recover from.
      if (source.kind === 'snapshot')
        throw new SpecError(['spec.restore.fromSnapshot: CloudNativePG cannot recover from an RDS snapshot']);
      const sourceOwner = { kind: 'Database', name: source.database, uid: '', namespace: input.owner.namespace };
      const targetTime = source.kind === 'backup' ? source.completedAt : source.time;
      const made: Recovery = {
        store: objectStoreName({ owner: sourceOwner }),
        // A backup of a source since restored is in the archive of the cluster it was taken of, not the first.
        server: sourceInstance ?? (source.kind === 'backup' ? source.instance : undefined) ?? baseName(sourceOwner),
        ...(targetTime ? { targetTime } : {}),
      };
      return { database: databaseName(source.database), made };
    },
    creationOf: (instance) => madeFrom(instance, recoveryOf),
  },
  progress: (input, target) => {
    const name = instanceName(input.owner, target.generation);
    const verdict = judge(input.observed.get(keyOf(CNPG_KEYS.cluster, target.generation)));
    return verdict.ready
      ? { state: 'ready', detail: `CloudNativePG Cluster ${name} recovered and healthy` }
      : { state: 'restoring', detail: `CloudNativePG Cluster ${name} recovering: ${verdict.detail}` };
  },
  handOverWhy: 'replaced by a restore; kept with its data',

  growth: (input, instances) => growth(input, instances.live, instances.name(instances.live)),
  compose,
  alertRules: (input, live) => {
    // The operator names each instance's pod and its data claim `<cluster>-<serial>` (a WAL volume would be
    // `<cluster>-<serial>-wal`, which the anchored pattern leaves out).
    const cluster = instanceName(input.owner, live);
    const instances = { re: promRegex(cluster, '-[0-9]+') };
    return [volumeFullRule(input, instances, `a data volume of Cluster ${cluster}`), replicaLagRule(input, cluster)];
  },
};

/** Seconds a replica may trail its primary, for five minutes, before the alert fires. */
const REPLICA_LAG_SECONDS = 60;

/**
 * Replica lag, from cnpg_pg_replication_lag (CloudNativePG's default
 * monitoring queries: seconds since the last transaction replayed, 0 on the
 * primary and on a replica that has everything), per instance pod.
 */
function replicaLagRule(input: DatabaseCall, cluster: string): AlertRule {
  const sel = selector({ namespace: input.owner.namespace, pod: { re: promRegex(cluster, '-[0-9]+') } });
  return {
    alert: 'DatabaseReplicaLagging',
    expr: `max by (namespace, pod) (cnpg_pg_replication_lag${sel}) > ${REPLICA_LAG_SECONDS}`,
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: `Database ${appName(input.owner)}: a replica of Cluster ${cluster} lags its primary`,
      description: `Instance {{ $labels.pod }} of CloudNativePG Cluster ${cluster} is {{ $value | printf "%.0f" }}s behind its primary (more than ${REPLICA_LAG_SECONDS}s for 5 minutes): what is read from it (the read endpoint) is that much older than the primary.`,
      source: SOURCES.cnpg,
    },
  };
}
