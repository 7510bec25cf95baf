// How full a Database's data volume in the cluster is, for storage that grows
// itself (spec.maxStorageGB): a StatefulSet's data claim, or the claim of a
// CloudNativePG Cluster's primary. No Kubernetes object says how full a volume
// is: the kubelet measures it, but serves the figures only from its summary
// API and its metrics endpoint, and a function is given objects. So the
// Database composes a CronJob whose pod, every few minutes, runs on the
// database's node, mounts the claim read-only, reads the file system's size
// and use (df, one statfs) and ends with them as its termination message.
// The function reads the newest such pod as a required resource, as it reads
// the claim: observed state, like everything else it decides on.
//
// The pod runs the database's own image (on the node already) as the
// database's user, under the restricted profile, with no service account
// token and nothing to connect to; the last run is kept (history limit 1) so
// that there is always one to read.
import type { V1CronJob } from '@kubernetes/client-node';
import { list, type Obj, str } from '../../../kube.js';
import { boundedLabel } from '../../../names.js';
import type { Desired, Requirement } from '../../blueprint.js';
import { type DatabaseInput, labels, meta } from '../database.js';

/** Required resources: the measuring pods of the live data claim. The CronJob's key. */
export const USAGE_PODS = 'usage-pods';
export const USAGE_KEY = 'usage';
/** On a measuring pod: the claim it measured. */
export const MEASURES_LABEL = 'function-platform.dev/measures';
/** How often the volume is measured when the platform says nothing (the Input's defaults.database.storage). */
export const MEASURE_EVERY_MINUTES = 5;
const KIB_PER_GIB = 1024 * 1024;

/** One measurement of the data volume's file system. */
export interface Usage {
  /** Its size and use, GiB (the file system's, a little under the claim's capacity). */
  sizeGB: number;
  usedGB: number;
  /** Use in percent, as df computes it: used / (used + available), rounded up. */
  usedPercent: number;
  /** When the pod measured it (RFC 3339). */
  at: string;
}

/**
 * The minute field of a schedule every `every` minutes, its offset taken from
 * the Database's name so that many Databases do not all measure at once.
 */
export function measureSchedule(owner: DatabaseInput['owner'], every: number): string {
  if (every <= 1) return '* * * * *';
  let h = 0;
  for (const c of `${owner.namespace}/${owner.name}`) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const offset = h % every;
  return every >= 60 ? `${offset} * * * *` : `${offset}-59/${every} * * * *`;
}

/** The server whose volume is measured: its claim, the labels of its pods, their image and user. */
export interface Measured {
  /** The CronJob's name, when it is not the claim's with "-usage". */
  name?: string;
  claimName: string;
  serverPods: Record<string, string>;
  image: string;
  uid: number;
}

/** The CronJob that measures `claimName` on the node of the pods `serverPods` selects. */
export function usageCronJob(input: DatabaseInput, measured: Measured, everyMinutes: number): Desired {
  const { claimName, serverPods, image, uid } = measured;
  const { owner, spec } = input;
  const podLabels = labels(owner, spec, { 'app.kubernetes.io/name': 'database-usage', [MEASURES_LABEL]: claimName });
  const cronJob = {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    // A CronJob's name leaves room for its Jobs' suffix: 52 characters at most.
    metadata: meta(owner, spec, measured.name ?? boundedLabel(52, claimName, 'usage')),
    spec: {
      schedule: measureSchedule(owner, everyMinutes),
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 120,
      successfulJobsHistoryLimit: 1,
      failedJobsHistoryLimit: 1,
      jobTemplate: {
        metadata: { labels: podLabels },
        spec: {
          backoffLimit: 0,
          activeDeadlineSeconds: 120,
          template: {
            metadata: { labels: podLabels },
            spec: {
              restartPolicy: 'Never',
              automountServiceAccountToken: false,
              enableServiceLinks: false,
              securityContext: {
                runAsNonRoot: true,
                runAsUser: uid,
                runAsGroup: uid,
                seccompProfile: { type: 'RuntimeDefault' },
              },
              // A ReadWriteOnce volume is mounted by pods of one node only: the database's.
              affinity: {
                podAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: [
                    { labelSelector: { matchLabels: serverPods }, topologyKey: 'kubernetes.io/hostname' },
                  ],
                },
              },
              volumes: [{ name: 'data', persistentVolumeClaim: { claimName, readOnly: true } }],
              containers: [
                {
                  name: 'measure',
                  image,
                  command: ['sh', '-c', 'df -Pk /data > /dev/termination-log'],
                  volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
                  resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '32Mi' } },
                  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                },
              ],
            },
          },
        },
      },
    },
  } satisfies V1CronJob;
  return { key: USAGE_KEY, object: cronJob, independent: true };
}

/** The requirement that reads the measuring pods of `claimName`. */
export function usageRequirement(input: DatabaseInput, claimName: string): Requirement {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    namespace: input.owner.namespace,
    matchLabels: { [MEASURES_LABEL]: claimName },
  };
}

/** The newest measurement of the claim among the pods read, if one finished. */
export function measuredUsage(input: DatabaseInput): Usage | undefined {
  let newest: Usage | undefined;
  for (const pod of input.required.get(USAGE_PODS) ?? []) {
    if (str(pod, 'status', 'phase') !== 'Succeeded') continue;
    const terminated = list(pod, 'status', 'containerStatuses')
      .map((c) => (c as Obj)['state'] as Obj | undefined)
      .map((s) => s?.['terminated'] as Obj | undefined)
      .find((t) => t !== undefined);
    const at = str(terminated, 'finishedAt');
    const usage = at ? parseDf(str(terminated, 'message') ?? '', at) : undefined;
    if (usage && (!newest || Date.parse(usage.at) > Date.parse(newest.at))) newest = usage;
  }
  return newest;
}

/** `df -Pk`'s answer: a header, then one line of 1024-blocks, used, available (KiB). */
export function parseDf(text: string, at: string): Usage | undefined {
  const line = text.trim().split('\n').pop() ?? '';
  const fields = line.trim().split(/\s+/);
  const [size, used, available] = [fields[1], fields[2], fields[3]].map(Number);
  if (![size, used, available].every((n) => Number.isFinite(n) && n! >= 0) || !(size! > 0)) return undefined;
  const total = used! + available!;
  return {
    sizeGB: round2(size! / KIB_PER_GIB),
    usedGB: round2(used! / KIB_PER_GIB),
    usedPercent: total > 0 ? Math.ceil((used! * 100) / total) : 0,
    at,
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** How often the platform has the volume measured. */
export function measureEvery(input: DatabaseInput): number {
  return input.defaults?.database?.storage?.measureEveryMinutes ?? MEASURE_EVERY_MINUTES;
}
