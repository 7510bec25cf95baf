// A Database in a StatefulSet of the engine's official image: one pod, its
// data volume from the claim template, a client Service that follows the live
// generation and a headless Service per generation. Backed up by dump Jobs to
// object storage (backup-method.ts); restored by a Job that loads a dump into
// an empty server; a DatabaseRestore builds the next generation beside the
// live one and the client Service's selector switches to it. The data volume
// grows by its claim (statefulset-volume.ts). No point in time, no replicas,
// no PostgreSQL major upgrade (the official image has no pg_upgrade).
import type {
  V1PersistentVolumeClaim,
  V1PodSecurityContext,
  V1PodSpec,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { statefulSetOf } from '../../../kinds/apps.js';
import { jobOf } from '../../../kinds/batch.js';
import { claimOf, selectorOf } from '../../../kinds/core.js';
import { judge } from '../../../kinds/index.js';
import { list, type Obj, str } from '../../../kube.js';
import { dnsLabel } from '../../../names.js';
import { gigabytes, wholeGigabytes } from '../../../quantity.js';
import type { Desired, Requirement } from '../../blueprint.js';
import { volumeFullRule } from '../alert-rules.js';
import { dumpBackups } from './backup-methods.js';
import { planLastDump } from './statefulset-last-dump.js';
import {
  baseName,
  type DatabaseInput,
  dbname,
  labels,
  meta,
  names,
  type ResolvedSpec,
  secretValue,
} from '../database.js';
import { ENGINES, tagOf } from '../engine.js';
import {
  CONNECTION_KEY,
  claimNames,
  generationNamed,
  handOver,
  instanceName,
  keyOf,
  metaFor,
  observedGenerations,
  oncePerCall,
  type RestoreTarget,
  withInstanceMeta,
} from '../instances.js';
import { restoreJob } from '../jobs.js';
import {
  CREDENTIALS_KEY,
  gi,
  inClusterDeletion,
  inClusterIdentity,
  inClusterSecrets,
  KEPT_CREDENTIALS,
  networkPolicy,
  podResources,
} from './in-cluster.js';
import type { ComposeCall, DatabaseCall, Placement, Progress } from './placement.js';
import {
  liveTls,
  restoredTls,
  servesTls,
  tlsResources,
  tlsRestart,
  waitsForCertificate,
  withTls,
} from './statefulset-tls.js';
import { AUTO_GROWTH_ANNOTATION, grownStorage, recordedGrowth } from './auto-growth.js';
import { measureEvery, usageCronJob } from './volume-usage.js';
import { DATA_CLAIM, planGrowth, RESTART_ANNOTATION, type VolumeGrowth } from './statefulset-volume.js';

export const STATEFULSET_KEYS = {
  statefulset: 'statefulset',
  service: 'service',
  headless: 'headless',
  /** The Job that restores a dump into a new Database (spec.restore), and into a restored generation (`restore-r1`). */
  restore: 'restore',
} as const;

/** The role label of a StatefulSet's pods: the client Service selects the live generation's. */
export const ROLE_LABEL = 'function-platform.dev/role';

/** uid and gid the official postgres and mysql images run their server as. */
const DB_UID = 999;

/** The pods' role of a StatefulSet generation. */
function serverRole(generation: number): string {
  return generation === 0 ? 'server' : `server-r${generation}`;
}

/** A generation's data volume claim, as the StatefulSet controller names it: <template>-<statefulset>-<ordinal>. */
export function dataClaimName(input: Pick<DatabaseInput, 'owner'>, generation = 0): string {
  return `data-${instanceName(input.owner, generation)}-0`;
}

/** The live generation: the one the client Service selects. */
const liveGeneration = oncePerCall((observed): number => {
  const role = selectorOf(observed.get(STATEFULSET_KEYS.service), ROLE_LABEL);
  const m = role ? /^server(?:-r([1-9][0-9]*))?$/.exec(role) : null;
  if (m) return m[1] ? Number(m[1]) : 0;
  return observedGenerations(observed, STATEFULSET_KEYS.statefulset)[0] ?? 0;
});

/**
 * A Database created again under Retain, before any StatefulSet or client
 * Service of it is observed: the generation whose data claim the credentials
 * Secret (observed, or kept with that claim as its owner) names. The Secret
 * goes with the live generation's data, so after a restore this is the
 * restored generation; generation 0's volume holds the data from before it.
 */
function reopened(input: DatabaseCall): number | undefined {
  const { observed } = input;
  if (observedGenerations(observed, STATEFULSET_KEYS.statefulset).length > 0) return undefined;
  if (observed.has(STATEFULSET_KEYS.service)) return undefined;
  const credentials = observed.get(CREDENTIALS_KEY) ?? input.required.get(KEPT_CREDENTIALS)?.[0];
  for (const owner of list(credentials, 'metadata', 'ownerReferences')) {
    const name = str(owner, 'name');
    if (str(owner, 'kind') !== 'PersistentVolumeClaim' || !name) continue;
    const m = /-r([1-9][0-9]*)-0$/.exec(name);
    const generation = m ? Number(m[1]) : 0;
    if (dataClaimName(input, generation) === name) return generation;
  }
  return undefined;
}

/** The live generation's StatefulSet as observed, read through its accessor. */
const liveStatefulSet = oncePerCall((observed) =>
  statefulSetOf(observed.get(keyOf(STATEFULSET_KEYS.statefulset, liveGeneration(observed)))),
);

function podSecurity(): V1PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: DB_UID,
    runAsGroup: DB_UID,
    fsGroup: DB_UID,
    // The kubelet gives the volume to the group once; by default it would walk every file of the data at each
    // start (slow on a large volume, and it opens up modes PostgreSQL insists on: seen on a real node).
    fsGroupChangePolicy: 'OnRootMismatch',
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

function claimTemplate(input: DatabaseCall, name: string): Obj {
  // A new generation (a restore's) holds what the live one holds: at least the size the live volume grew to,
  // with that growth recorded on the new claim (the template's annotations go to it), so it stays the floor.
  const liveClaim = input.required.get(DATA_CLAIM)?.[0];
  const live = wholeGigabytes(claimOf(liveClaim)?.requested) ?? 0;
  const grown = live > input.spec.storageGB ? recordedGrowth(liveClaim) : undefined;
  return {
    metadata: {
      name,
      labels: labels(input.owner, input.spec),
      ...(grown ? { annotations: { [AUTO_GROWTH_ANNOTATION]: JSON.stringify(grown) } } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(input.spec.storageClassName ? { storageClassName: input.spec.storageClassName } : {}),
      resources: { requests: { storage: gi(Math.max(input.spec.storageGB, live)) } },
    },
  };
}

/** The pods of one generation of the StatefulSet: what its Services select. */
function podSelector(input: DatabaseCall, generation: number): Record<string, string> {
  return {
    'app.kubernetes.io/instance': labels(input.owner, input.spec)['app.kubernetes.io/instance']!,
    'app.kubernetes.io/name': 'database',
    [ROLE_LABEL]: serverRole(generation),
  };
}

/** The governing (headless) Service of a generation's StatefulSet. */
const headlessName = (input: DatabaseCall, generation: number) =>
  dnsLabel(instanceName(input.owner, generation), 'headless');

/** Where applications connect: the client Service, which follows the live generation. */
const clientHost = (input: DatabaseCall) => `${baseName(input.owner)}.${input.owner.namespace}.svc.cluster.local`;

/**
 * One generation's StatefulSet. `keepVolumes` retains its volumes whatever
 * the deletion policy: an instance a restore replaced is handed to the user
 * with its data. A restored generation carries its DatabaseRestore's label.
 */
function statefulSet(
  input: DatabaseCall,
  generation = 0,
  opts: { keepVolumes?: boolean; restored?: RestoreTarget; restart?: string; tls?: boolean; live?: boolean } = {},
): V1StatefulSet {
  const { owner, spec } = input;
  const engine = ENGINES[spec.engine];
  const name = instanceName(owner, generation);
  const selector = podSelector(input, generation);
  const probe = { exec: { command: engine.readyCommand }, timeoutSeconds: 5 };
  // Claim templates cannot change once the StatefulSet exists: keep what runs.
  const observed = input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, generation));
  const observedTemplates = statefulSetOf(observed)?.volumeClaimTemplates ?? [];
  // (An earlier version's StatefulSet also has a "backup" template; it stays, with its volume.)
  const templates = observedTemplates.length > 0 ? observedTemplates : [claimTemplate(input, 'data')];
  const restored = metaFor(observed, opts.restored);
  // A restart asked once to finish a file-system resize stays asked (taking it back would restart the pod again).
  const restart = opts.restart ?? statefulSetOf(observed)?.templateAnnotation(RESTART_ANNOTATION);
  // TLS as its caller decided; one handed over keeps what it has.
  const tls = opts.tls ?? servesTls(observed);
  const annotations = {
    ...(restart ? { [RESTART_ANNOTATION]: restart } : {}),
    // The live server restarts onto a renewed certificate.
    ...(tls && opts.live ? tlsRestart(input) : {}),
  };
  const pod: V1PodSpec = {
    securityContext: podSecurity(),
    terminationGracePeriodSeconds: 60,
    containers: [
      {
        name: 'db',
        image: engine.image(spec.version),
        ports: [{ name: 'db', containerPort: engine.port, protocol: 'TCP' }],
        env: engine.serverEnv(names.credentials(owner), dbname(owner)),
        resources: podResources(spec),
        volumeMounts: [{ name: 'data', mountPath: engine.dataPath }],
        startupProbe: { ...probe, periodSeconds: 5, failureThreshold: 120 },
        readinessProbe: { ...probe, periodSeconds: 10, failureThreshold: 3 },
        livenessProbe: { ...probe, periodSeconds: 20, failureThreshold: 6 },
        securityContext: containerSecurity,
      },
    ],
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: withInstanceMeta(meta(owner, spec, name, restored.labels), restored),
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
          ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        },
        spec: tls ? withTls(input, pod) : pod,
      },
      volumeClaimTemplates: templates as V1PersistentVolumeClaim[],
    },
  };
}

const servicePorts = (spec: ResolvedSpec) => [
  { name: 'db', port: ENGINES[spec.engine].port, targetPort: 'db', protocol: 'TCP' },
];

/** The client Service: where applications connect, selecting the serving generation's pods. */
function clientService(input: DatabaseCall, serving: number): Desired {
  return {
    key: STATEFULSET_KEYS.service,
    object: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(input.owner, input.spec, baseName(input.owner)),
      spec: { type: 'ClusterIP', selector: podSelector(input, serving), ports: servicePorts(input.spec) },
    } satisfies V1Service,
  };
}

/** A generation's headless Service: its StatefulSet's pods by name, ready or not. */
function headlessService(input: DatabaseCall, generation: number): Desired {
  return {
    key: keyOf(STATEFULSET_KEYS.headless, generation),
    object: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(input.owner, input.spec, headlessName(input, generation)),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: podSelector(input, generation),
        ports: servicePorts(input.spec),
      },
    } satisfies V1Service,
  };
}

/** Keys and objects of one generation's StatefulSet with its headless Service. */
function generationOf(
  input: DatabaseCall,
  generation: number,
  opts: {
    keepVolumes?: boolean;
    restored?: RestoreTarget;
    independent?: boolean;
    restart?: string;
    tls?: boolean;
    live?: boolean;
  } = {},
): Desired[] {
  const independent = opts.independent ? { independent: true } : {};
  return [
    {
      key: keyOf(STATEFULSET_KEYS.statefulset, generation),
      object: statefulSet(input, generation, opts) as Obj,
      ...independent,
    },
    { ...headlessService(input, generation), ...independent },
  ];
}

/** The restore into a StatefulSet generation: its Job, once the generation's server runs. */
function cutoverJob(input: DatabaseCall, target: RestoreTarget): Desired | undefined {
  const sts = input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, target.generation));
  const key = keyOf(STATEFULSET_KEYS.restore, target.generation);
  if (target.source.kind !== 'backup' || (!input.observed.has(key) && !judge(sts).ready)) return undefined;
  const name = dnsLabel(instanceName(input.owner, target.generation), 'restore');
  const host = `${headlessName(input, target.generation)}.${input.owner.namespace}.svc.cluster.local`;
  return { key, object: restoreJob(name, input.owner, input.spec, target.source.location, host), independent: true };
}

function progress(input: DatabaseCall, target: RestoreTarget): Progress {
  const name = instanceName(input.owner, target.generation);
  const verdict = judge(input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, target.generation)));
  const job = jobOf(input.observed.get(keyOf(STATEFULSET_KEYS.restore, target.generation)));
  if (job?.failed) {
    const why = job.failed.message ?? job.failed.reason ?? 'the restore Job failed';
    return { state: 'failed', detail: `the restore into ${name} failed (${why})` };
  }
  if (job?.complete)
    return verdict.ready
      ? { state: 'ready', detail: `${name} holds the restored data` }
      : { state: 'restoring', detail: `${name} holds the restored data; StatefulSet ${name}: ${verdict.detail}` };
  if (job) return { state: 'restoring', detail: `restore Job ${dnsLabel(name, 'restore')} running into ${name}` };
  if (verdict.ready)
    return { state: 'restoring', detail: `starting restore Job ${dnsLabel(name, 'restore')} into ${name}` };
  return { state: 'building', detail: `starting the empty instance ${name}: StatefulSet ${name}: ${verdict.detail}` };
}

/**
 * Whether the URIs ask for TLS: once the server applications reach runs on it (its StatefulSet on TLS and rolled
 * out; a new Database's first one never runs without), and from then on while it stays on TLS, through later
 * restarts.
 */
function connectionTls(input: DatabaseCall, serving: Obj | undefined): boolean {
  if (!liveTls(input, serving)) return false;
  if (!serving) return true;
  if (!servesTls(serving)) return false;
  const asked = /[?&]sslmode=require$/.test(secretValue(input.observed.get(CONNECTION_KEY), 'uri') ?? '');
  return asked || statefulSetOf(serving)?.rolledOut === true;
}

function compose(call: ComposeCall) {
  const { input, instances, target, serving, growth } = call;
  const { live } = instances;
  const stsOf = (g: number) => input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, g));
  const liveObserved = stsOf(live);
  const tls = liveTls(input, liveObserved);
  const resources: Desired[] = [
    // Its certificate first: while the live server waits for its first one, it is what the user hears of.
    ...tlsResources(input, waitsForCertificate(input, tls, liveObserved)),
    ...generationOf(input, live, { tls, live: true, ...(growth?.restart ? { restart: growth.restart } : {}) }),
    clientService(input, serving),
  ];
  if (growth?.resource) resources.push({ ...growth.resource, independent: true });
  // Storage that grows itself: the live data volume's use, measured on the database's node.
  if (input.spec.maxStorageGB !== undefined)
    resources.push(
      usageCronJob(
        input,
        {
          claimName: dataClaimName(input, live),
          serverPods: podSelector(input, live),
          image: ENGINES[input.spec.engine].image(input.spec.version),
          uid: DB_UID,
        },
        measureEvery(input),
      ),
    );
  if (target) {
    const restoredWithTls = restoredTls(input, stsOf(target.generation), liveObserved);
    resources.push(
      ...generationOf(input, target.generation, { restored: target, independent: true, tls: restoredWithTls }),
    );
    const job = cutoverJob(input, target);
    if (job) resources.push(job);
  }
  // Once let go, its volumes stay; the StatefulSet, its Service and its Job go.
  const handed = handOver(input, STATEFULSET_KEYS.statefulset, call.release, statefulSetPlacement.handOverWhy, (g) =>
    generationOf(input, g, { keepVolumes: true, independent: true }),
  );
  resources.push(...handed.resources);
  // The data claim is read (growth.requirements) for its size; under Retain it also keeps the password.
  const keepWith =
    input.spec.deletionPolicy === 'Retain'
      ? { requirement: DATA_CLAIM, claimName: dataClaimName(input, live) }
      : undefined;
  const secrets = inClusterSecrets(
    call,
    {
      host: clientHost(input),
      port: ENGINES[input.spec.engine].port,
      tls: connectionTls(input, stsOf(serving)),
    },
    undefined,
    keepWith,
  );
  resources.push(...secrets.resources);
  // Every generation's pods (the live one, one a restore builds, those handed over): all hold this Database's data.
  const pods = {
    matchLabels: {
      'app.kubernetes.io/name': 'database',
      'app.kubernetes.io/instance': labels(input.owner, input.spec)['app.kubernetes.io/instance']!,
    },
  };
  resources.push(networkPolicy(input, pods, ENGINES[input.spec.engine].port));
  const lastDump = planLastDump(input, live, {
    statefulSet: liveObserved,
    service: input.observed.get(STATEFULSET_KEYS.service),
  });
  resources.push(...lastDump.resources);
  return {
    resources,
    requirements: { ...growth?.requirements, ...secrets.requirements, ...lastDump.requirements },
    releasing: handed.releasing,
    ...(secrets.connection ? { connection: secrets.connection } : {}),
  };
}

export const statefulSetPlacement: Placement = {
  words: 'a StatefulSet',
  ...inClusterIdentity(STATEFULSET_KEYS.statefulset),
  liveGeneration,
  reopened,

  refuses: (spec) => [
    ...(spec.highAvailability && spec.engine === 'mysql'
      ? [
          {
            field: 'spec.highAvailability',
            message:
              'spec.highAvailability is true; highAvailability in the cluster needs engine postgres (CloudNativePG)',
          },
        ]
      : []),
    ...(spec.replicas > 0 && !spec.highAvailability
      ? [
          {
            field: 'spec.replicas',
            message: `spec.replicas is ${spec.replicas}; spec.replicas needs highAvailability (CloudNativePG) in the cluster; a Database in a StatefulSet has no replicas`,
          },
        ]
      : []),
  ],
  refusesUpgrade: (spec, running) =>
    spec.engine !== 'postgres'
      ? undefined
      : `spec.version is ${spec.version} but the database runs ${running}: a postgres major upgrade in a StatefulSet needs pg_upgrade, which the official image does not do. To move to ${spec.version}: set spec.version back to ${running}, take a DatabaseBackup of this Database, create a new Database with version ${spec.version}, and load the dump (its status.location) into it with pg_restore, which reads older majors; or use highAvailability, where CloudNativePG upgrades in place behind a backup`,
  refusesBecoming: () =>
    'spec.highAvailability cannot be turned on for an existing in-cluster database: it would replace the StatefulSet and its volume; move the data to a new highly available Database instead',

  composedVersion: (observed) => tagOf(liveStatefulSet(observed)?.image('db')),
  composedEngine: () => undefined,
  composedStorageGB: (observed) => {
    const data = liveStatefulSet(observed)?.claims.find((t) => t.name === 'data');
    const gb = gigabytes(data?.storage);
    // A restore's template sized at what the live volume grew to by itself is no size the user asked.
    const grown = recordedGrowth({ metadata: { annotations: data?.annotations } });
    return gb === undefined || (grown !== undefined && gb <= grown.toGB) ? [] : [gb];
  },
  runningVersion: (input) => {
    // A StatefulSet runs its template's image once its rollout is done: every pod on the update revision.
    const sts = liveStatefulSet(input.observed);
    return sts?.rolledOut ? tagOf(sts.image('db')) : undefined;
  },
  pendingVersion: (_input, from, wanted) => `upgrading ${from} → ${wanted}`,
  // MySQL upgrades its data in place when a newer server starts on it; PostgreSQL's upgrade is refused.
  upgradesInPlace: (spec) => spec.engine !== 'postgres',
  storage: (input, growth) =>
    grownStorage(
      input.spec,
      growth,
      growth?.capacityGB ?? wholeGigabytes(claimOf((growth as VolumeGrowth | undefined)?.claim)?.capacity),
    ),
  endpoint: (input) => ({ host: clientHost(input), port: ENGINES[input.spec.engine].port }),
  readEndpoint: () => undefined,
  primary: () => undefined,

  prerequisite: () => undefined,
  instanceBlocker: () => undefined,
  connectionPending: () => undefined,
  deletion: (input, live, lastBackup) => {
    if (input.spec.deletionPolicy === 'Retain')
      return {
        keeps: `Retain: deleting this Database keeps the data volume of StatefulSet ${instanceName(input.owner, live)} and the credentials that open it; a Database made again under this name in this namespace opens them`,
      };
    const last = planLastDump(input, live, {
      statefulSet: input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, live)),
      service: input.observed.get(STATEFULSET_KEYS.service),
    });
    return inClusterDeletion(
      input,
      `StatefulSet ${instanceName(input.owner, live)} and its data volume`,
      'its dumps',
      lastBackup,
      last.dump,
      last.unable,
    );
  },
  kept: (input, generation, why) => {
    const name = instanceName(input.owner, generation);
    const sts = input.observed.get(keyOf(STATEFULSET_KEYS.statefulset, generation));
    return claimNames(sts, name).map(
      (claim) =>
        `PersistentVolumeClaim ${claim} (${why}) is kept; delete it when it is no longer needed: kubectl delete pvc ${claim} -n ${input.owner.namespace}`,
    );
  },
  keptObject: (input, sentence): Requirement | undefined => {
    const claim = /^PersistentVolumeClaim (\S+) \(/.exec(sentence)?.[1];
    return claim
      ? { apiVersion: 'v1', kind: 'PersistentVolumeClaim', matchName: claim, namespace: input.owner.namespace }
      : undefined;
  },
  // A handed-over generation's data claim stays (Retain): a StatefulSet of the same name would open it.
  leftBehind: {
    requirement: (input) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: input.owner.namespace,
      matchLabels: { 'app.kubernetes.io/instance': labels(input.owner, input.spec)['app.kubernetes.io/instance']! },
    }),
    generation: (input, obj) => generationNamed(str(obj, 'metadata', 'name') ?? '', (g) => dataClaimName(input, g)),
  },

  backup: dumpBackups('a Database in a StatefulSet restores a dump'),
  backupStatus: () => ({}),
  pointInTime: {
    kept: false,
    why: (instead) =>
      `a Database in a StatefulSet restores from dumps, which hold one moment and no point in time; name a DatabaseBackup ${instead} (point-in-time recovery needs highAvailability or placement aws)`,
  },
  restoreReadsStore: 'the dump is read from',
  restore: {
    by: 'job',
    job: (input, location) => restoreJob(dnsLabel(baseName(input.owner), 'restore'), input.owner, input.spec, location),
    serverReady: (input) => judge(input.observed.get(STATEFULSET_KEYS.statefulset)).ready,
  },
  progress,
  handOverWhy: 'replaced by a restore; its volumes are retained',

  // The live generation's data volume grows by its claim.
  growth: (input, instances) => planGrowth(input, input.spec, dataClaimName(input, instances.live)),
  compose,
  // The live generation's data volume: the claim its StatefulSet's template makes for pod 0.
  alertRules: (input, live) => [volumeFullRule(input, dataClaimName(input, live), 'the data volume')],
};
