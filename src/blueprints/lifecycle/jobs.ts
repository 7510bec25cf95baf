// The Jobs of a Database whose server runs in a pod of ours: the one that
// dumps it and ships the dump to object storage, the one that restores a dump
// into an empty server, and retention's removal of a stored dump (the
// commands are in commands.ts); and what a dump's Pod says of it.
import type { V1EnvVar, V1Job, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { list, record, str, type Obj } from '../../kube.js';
import { boundedLabel } from '../../names.js';
import type { Owner } from '../blueprint.js';
import {
  backupKey,
  countScript,
  downloadScript,
  dumpScript,
  removeScript,
  restoreScript,
  standbyDumpScript,
  standbyUploadScript,
  uploadScript,
  verifyScript,
} from './commands.js';
import { baseName, dbname, names, type ResolvedSpec, USER_CREDENTIAL_KEYS } from './database.js';
import { ENGINES } from './engine.js';

/** The Database a Job backs up or restores into: its owner (its names derive from it) and its spec. */
type Target = { owner: Owner; spec: ResolvedSpec };

/** The S3 client of the upload step: the official image, pinned. */
export const AWS_CLI_IMAGE = 'amazon/aws-cli:2.22.35';
/** Memory of the first attempt; each attempt killed for memory doubles it. */
export const FIRST_ATTEMPT_MEMORY_MI = 256;
export const MAX_ATTEMPTS = 3;
/** The label the Job controller puts on its pods. */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
const WORK = '/work';

/** The official images' unprivileged user: neither the dump nor the S3 client needs root. */
const POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: 999,
  runAsGroup: 999,
  fsGroup: 999,
  seccompProfile: { type: 'RuntimeDefault' },
};

export const attemptKey = (attempt: number) => `dump-${attempt}`;
export const memoryFor = (attempt: number) => `${FIRST_ATTEMPT_MEMORY_MI * 2 ** (attempt - 1)}Mi`;

/** The Job of one attempt: within 63 characters, as its pods' job-name label must be. */
export function jobName(backup: Owner, attempt: number): string {
  return boundedLabel(63, backup.name, `a${attempt}`);
}

/** The labels every attempt's Job and pods carry: the same for all attempts of a backup. */
export function podLabels(backup: Owner): Record<string, string> {
  return { 'app.kubernetes.io/name': 'database-backup', 'app.kubernetes.io/instance': backup.name };
}

/** Where the dump of a backup goes: bucket and key. */
export function dumpLocation(backup: Owner, target: Target): { bucket: string; key: string; url: string } {
  const store = target.spec.backup.objectStore!;
  const key = backupKey(store.prefix, target.owner.name, backup.name, target.spec.engine);
  return { bucket: store.bucket, key, url: `s3://${store.bucket}/${key}` };
}

export function dumpJob(backup: Owner, target: Target, attempt: number): Obj {
  const { spec } = target;
  const store = spec.backup.objectStore!;
  const { bucket, key } = dumpLocation(backup, target);
  const file = `${WORK}/${key.split('/').pop()}`;
  const memory = memoryFor(attempt);
  const labels = { ...podLabels(backup), 'app.kubernetes.io/managed-by': 'function-platform' };
  // Attempts are the function's: a new Job each (backoffLimit 0), with the memory the last one lacked.
  return jobOf(
    jobName(backup, attempt),
    backup.namespace,
    labels,
    { backoffLimit: 0, activeDeadlineSeconds: 6 * 3600 },
    {
      initContainers: [
        engineContainer('dump', dumpScript(spec.engine), target.owner, spec, memory, [{ name: 'OUT', value: file }]),
      ],
      containers: [s3Container('upload', uploadScript(), store, bucket, key, [{ name: 'IN', value: file }])],
    },
  );
}

/**
 * The pod that takes a Database's last dump when it is deleted with it: it
 * waits, and on its stop signal dumps and uploads to `key`
 * (standbyDumpScript) within `graceSeconds`. It asks for little while it
 * waits; the dump may use what a backup's last attempt has (it gets no other).
 */
export function lastDumpPod(name: string, target: Target, key: string, graceSeconds: number): Obj {
  const { spec, owner } = target;
  const store = spec.backup.objectStore!;
  const file = `${WORK}/${key.split('/').pop()}`;
  const waiting = (c: ReturnType<typeof engineContainer>, memory: string) => ({
    ...c,
    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory } },
  });
  const labels = {
    'app.kubernetes.io/name': 'database-last-dump',
    'app.kubernetes.io/instance': owner.name,
    'app.kubernetes.io/managed-by': 'function-platform',
  };
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: owner.namespace, labels },
    spec: {
      securityContext: POD_SECURITY,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: graceSeconds,
      volumes: [{ name: 'work', emptyDir: {} }],
      containers: [
        waiting(
          engineContainer('dump', standbyDumpScript(spec.engine), owner, spec, '', [{ name: 'OUT', value: file }]),
          memoryFor(MAX_ATTEMPTS),
        ),
        waiting(
          s3Container('upload', standbyUploadScript(), store, store.bucket, key, [
            { name: 'IN', value: file },
            { name: 'PARTIAL', value: `${key}.${name || 'pod'}.partial` },
          ]),
          '256Mi',
        ),
      ],
    },
  };
  return pod as Obj;
}

/**
 * The Job that restores the dump at `url` into the Database `database` (empty,
 * its server up at `host`, by default its client Service): download, then restore.
 */
export function restoreJob(name: string, database: Owner, spec: Target['spec'], url: string, host?: string): Obj {
  const store = spec.backup.objectStore!;
  const { bucket, key } = parseS3Url(url)!;
  const file = `${WORK}/${key.split('/').pop()}`;
  const labels = {
    'app.kubernetes.io/name': 'database-restore',
    'app.kubernetes.io/instance': database.name,
    'app.kubernetes.io/managed-by': 'function-platform',
  };
  // A failed restore is not retried: it refuses a database that holds data, and says why it failed.
  return jobOf(
    name,
    database.namespace,
    labels,
    { backoffLimit: 0, activeDeadlineSeconds: 6 * 3600 },
    {
      initContainers: [s3Container('download', downloadScript(), store, bucket, key, [{ name: 'IN', value: file }])],
      containers: [
        engineContainer(
          'restore',
          restoreScript(spec.engine),
          database,
          spec,
          '1Gi',
          [{ name: 'IN', value: file }],
          host,
        ),
      ],
    },
  );
}

/** The Job of a backup's restore drill for `request`: a name of its own for each request. */
export function verifyJobName(backup: Owner, request: string): string {
  return boundedLabel(63, backup.name, 'verify', request.toLowerCase());
}

/**
 * The restore drill of the dump at `url`: download (checked against the
 * SHA-256 stored with it), then a scratch server in the pod itself that the
 * dump is restored into and counted (verifyScript). It reaches no server and
 * writes nothing outside its pod; the pod's end is the scratch server's.
 */
export function verifyJob(backup: Owner, target: Target, url: string, request: string, sizeBytes?: number): Obj {
  const { spec } = target;
  const store = spec.backup.objectStore!;
  const { bucket, key } = parseS3Url(url)!;
  const file = `${WORK}/${key.split('/').pop()}`;
  const labels = { ...podLabels(backup), 'app.kubernetes.io/managed-by': 'function-platform' };
  const memory = '1Gi';
  // The dump and the scratch server's files are on the node's disk: asked for, so the pod goes where there is
  // room (a restored database takes several times its compressed dump), and bounded, so it never fills the node.
  const disk = Math.max(1, Math.ceil(((sizeBytes ?? 0) * 6) / 1024 ** 3));
  const storage = { 'ephemeral-storage': `${disk}Gi` };
  const job = jobOf(
    verifyJobName(backup, request),
    backup.namespace,
    labels,
    { backoffLimit: 0, activeDeadlineSeconds: 6 * 3600 },
    {
      initContainers: [s3Container('download', downloadScript(), store, bucket, key, [{ name: 'IN', value: file }])],
      containers: [
        {
          name: 'verify',
          image: ENGINES[spec.engine].image(spec.version),
          command: ['sh', '-c', verifyScript(spec.engine)],
          env: [
            { name: 'IN', value: file },
            { name: 'WORK', value: WORK },
            { name: 'HOME', value: WORK },
          ],
          resources: { requests: { cpu: '100m', memory, ...storage }, limits: { memory, ...storage } },
          volumeMounts: [{ name: 'work', mountPath: WORK }],
          terminationMessagePolicy: 'FallbackToLogsOnError',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  );
  return job;
}

/** Where a drill's count finds its scratch server, and as whom. */
export interface ScratchServer {
  /** Its address; without, the Secret's `address` and `port` say it (the provider writes them for RDS). */
  host?: string;
  /** The Secret with its superuser's (or master user's) `username` and `password`. */
  secret: string;
  /** PostgreSQL databases the server keeps closed to its users (RDS's rdsadmin): not counted. */
  skip?: readonly string[];
  /** How long the count may run (an hour unless said). */
  deadlineSeconds?: number;
}

/**
 * The count of a drill's scratch server (a Cluster recovered from the
 * backup, an RDS instance made from a snapshot) as its own superuser or
 * master user, so that every database and table is readable whoever owns
 * it: their tables and rows (countScript). It writes nothing, and the
 * scratch server goes with the drill.
 */
export function countJob(backup: Owner, target: Target, server: ScratchServer, request: string): Obj {
  const labels = { ...podLabels(backup), 'app.kubernetes.io/managed-by': 'function-platform' };
  const from = (name: string, key: string): V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: server.secret, key } },
  });
  const { engine } = target.spec;
  const container = engineContainer('verify', countScript(engine, server.skip), target.owner, target.spec, '256Mi', []);
  container.env = [
    ...(server.host
      ? [
          { name: 'HOST', value: server.host },
          { name: 'PORT', value: String(ENGINES[engine].port) },
        ]
      : [from('HOST', 'address'), from('PORT', 'port')]),
    from('DB_USER', 'username'),
    from('DB_PASSWORD', 'password'),
    { name: 'WORK', value: WORK },
  ];
  return jobOf(
    verifyJobName(backup, request),
    backup.namespace,
    labels,
    { backoffLimit: 0, activeDeadlineSeconds: server.deadlineSeconds ?? 3600 },
    { containers: [container] },
  );
}

/** A container of the engine's own image (its client matches the server) connected to `database` as the app user. */
function engineContainer(
  name: string,
  script: string,
  database: Owner,
  spec: Target['spec'],
  memory: string,
  env: V1EnvVar[],
  host = `${baseName(database)}.${database.namespace}.svc.cluster.local`,
) {
  const engine = ENGINES[spec.engine];
  const credentials = names.credentials(database);
  const secretEnv = (variable: string, k: string): V1EnvVar => ({
    name: variable,
    valueFrom: { secretKeyRef: { name: credentials, key: k } },
  });
  return {
    name,
    image: engine.image(spec.version),
    command: ['sh', '-c', script],
    env: [
      { name: 'HOST', value: host },
      { name: 'PORT', value: String(engine.port) },
      secretEnv('DB_USER', 'username'),
      secretEnv('DB_PASSWORD', 'password'),
      { name: 'DB_NAME', value: dbname(database) },
      ...env,
    ],
    resources: { requests: { cpu: '100m', memory }, limits: { memory } },
    volumeMounts: [{ name: 'work', mountPath: WORK }],
    terminationMessagePolicy: 'FallbackToLogsOnError',
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
  };
}

type ObjectStore = NonNullable<Target['spec']['backup']['objectStore']>;

/** A container of the S3 client image running `script` against BUCKET and KEY of the object store. */
function s3Container(name: string, script: string, store: ObjectStore, bucket: string, key: string, env: V1EnvVar[]) {
  // A store made for the Database has the provider's key names; one the user or the platform names, the CLI's.
  const keys = store.credentialKeys ?? USER_CREDENTIAL_KEYS;
  const secretEnv = (variable: string, key: string): V1EnvVar => ({
    name: variable,
    valueFrom: { secretKeyRef: { name: store.credentialsSecretRef.name, key } },
  });
  return {
    name,
    image: AWS_CLI_IMAGE,
    command: ['sh', '-c', script],
    env: [
      ...env,
      { name: 'BUCKET', value: bucket },
      { name: 'KEY', value: key },
      { name: 'AWS_REGION', value: store.region },
      ...(store.endpoint ? [{ name: 'S3_ENDPOINT', value: store.endpoint }] : []),
      secretEnv('AWS_ACCESS_KEY_ID', keys.accessKeyId),
      secretEnv('AWS_SECRET_ACCESS_KEY', keys.secretAccessKey),
      // The CLI wants a home; the image's is not writable by this user.
      { name: 'HOME', value: WORK },
    ],
    resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '256Mi' } },
    volumeMounts: [{ name: 'work', mountPath: WORK }],
    terminationMessagePolicy: 'FallbackToLogsOnError',
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
  };
}

/** A Job of this module: its pods unprivileged, never restarted in place, with a scratch volume at /work. */
function jobOf(
  name: string,
  namespace: string,
  labels: Record<string, string>,
  limits: { backoffLimit: number; activeDeadlineSeconds: number },
  containers: Pick<V1PodSpec, 'initContainers' | 'containers'>,
): Obj {
  const job: V1Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace, labels },
    spec: {
      ...limits,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          securityContext: POD_SECURITY,
          volumes: [{ name: 'work', emptyDir: {} }],
          ...(containers.initContainers ? { initContainers: containers.initContainers } : {}),
          containers: containers.containers,
        },
      },
    },
  };
  return job as Obj;
}

/** Retention's Job: removes one stored backup from the object store. */
export function removeJob(name: string, namespace: string, instance: string, store: ObjectStore, url: string): Obj {
  const { bucket, key } = parseS3Url(url)!;
  const labels = {
    'app.kubernetes.io/name': 'database-backup-removal',
    'app.kubernetes.io/instance': instance,
    'app.kubernetes.io/managed-by': 'function-platform',
  };
  return jobOf(
    name,
    namespace,
    labels,
    { backoffLimit: 3, activeDeadlineSeconds: 3600 },
    {
      containers: [s3Container('remove', removeScript(), store, bucket, key, [])],
    },
  );
}

/** Bucket and key of an s3:// URL. */
export function parseS3Url(url: string): { bucket: string; key: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(url);
  return m ? { bucket: m[1]!, key: m[2]! } : undefined;
}

/** How one container of a pod ended. */
export interface Ended {
  container: string;
  reason: string;
  exitCode: number;
  message: string;
  /** Killed for memory: says nothing of what it was working on. */
  oom: boolean;
  /** A non-zero exit, or killed for memory. */
  bad: boolean;
}

/** The pod's containers that have ended, init containers first, each as it last ended. */
export function endedContainers(pod: Obj | undefined): Ended[] {
  const statuses = [...list(pod, 'status', 'initContainerStatuses'), ...list(pod, 'status', 'containerStatuses')];
  const ended: Ended[] = [];
  for (const s of statuses) {
    const t = record(s, 'state', 'terminated') ?? record(s, 'lastState', 'terminated');
    if (!t) continue;
    const exitCode = Number(t['exitCode'] ?? 0);
    const oom = str(t, 'reason') === 'OOMKilled';
    ended.push({
      container: str(s, 'name') ?? '',
      reason: str(t, 'reason') ?? 'Error',
      exitCode,
      message: (str(t, 'message') ?? '').trim(),
      oom,
      bad: exitCode !== 0 || oom,
    });
  }
  return ended;
}

/** A tool's last words: the last two lines it left, cut short. */
export function lastWords(message: string, max = 300): string {
  return message.split('\n').filter(Boolean).slice(-2).join(' ').slice(0, max);
}

/** The first container of a backup attempt's pod that ended badly, or the upload's report when all went well. */
export function podOutcome(pod: Obj | undefined): { failed?: Ended; report?: { key: string; sizeBytes: number } } {
  for (const e of endedContainers(pod)) {
    if (e.bad) return { failed: e };
    if (e.container !== 'upload') continue;
    try {
      const report = JSON.parse(e.message) as { key?: unknown; sizeBytes?: unknown };
      if (typeof report.key === 'string' && typeof report.sizeBytes === 'number')
        return { report: { key: report.key, sizeBytes: report.sizeBytes } };
    } catch {
      // Not the report: the upload said something else.
    }
  }
  return {};
}

/** The user's sentence for a failed attempt: which step, why, and the tool's last words. */
export function describeFailure(e: Ended, memory: string): string {
  if (e.oom) return `${e.container} was killed for memory (OOMKilled with ${memory})`;
  const said = lastWords(e.message);
  return `${e.container} failed (exit code ${e.exitCode}${e.reason && e.reason !== 'Error' ? `, ${e.reason}` : ''})${said ? `: ${said}` : ''}`;
}
