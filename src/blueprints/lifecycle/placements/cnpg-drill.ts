// The restore drill of a CloudNativePG backup (a DatabaseBackup of a highly
// available Database): a scratch Cluster bootstrapped by recovery from the
// Database's ObjectStore to that backup's end; once the operator says it is
// healthy, a Job counts its tables and rows; once that is recorded, both go.
// backup/drill.ts decides when a drill runs; this says what it composes and
// how it ended.
import { jobOf } from '../../../kinds/batch.js';
import { CNPG_HEALTHY, CNPG_UNRECOVERABLE, cnpgBackupOf, cnpgClusterOf } from '../../../kinds/cnpg.js';
import { SCRATCH_LABEL } from '../../../kinds/index.js';
import { nameOf, type Obj } from '../../../kube.js';
import { boundedLabel } from '../../../names.js';
import { majorVersion } from '../database.js';
import { endedContainers, lastWords, podLabels, verifyJobName } from '../jobs.js';
import { countScratch, drillEnded, drillOverdue, earlierDrill } from './backup-methods.js';
import { CNPG_KEYS, CNPG_PLUGIN, objectStoreName, RECOVERY_SOURCE } from './cnpg-names.js';
import { gi, podResources } from './in-cluster.js';
import type { BackupCall, Drill, DrillResult } from './placement.js';

/** A drill's scratch Cluster's composition-resource key (the DatabaseBackup's). */
const DRILL_CLUSTER_KEY = 'drill-cluster';
/** Its NetworkPolicy's key. */
const DRILL_POLICY_KEY = 'drill-network-policy';
/** The port of CloudNativePG's instance manager, which the operator calls (status, not data). */
const INSTANCE_MANAGER_PORT = 8000;
/** Required resources: the operator's recovery Job of a drill's scratch Cluster, and its pods, read for their end. */
const DRILL_RECOVERY = 'drill-recovery';
const DRILL_RECOVERY_PODS = 'drill-recovery-pods';
/**
 * A scratch Cluster's name at most: the operator names its recovery Job
 * `<cluster>-1-full-recovery`, and a Job's name is 63 characters at most.
 */
const SCRATCH_NAME_MAX = 63 - '-1-full-recovery'.length;

/** The scratch Cluster of drill `request` of a backup. */
export const scratchName = (backup: string, request: string) =>
  boundedLabel(SCRATCH_NAME_MAX, backup, 'drill', request.toLowerCase());

/**
 * A drill's scratch Cluster: one instance of the PostgreSQL major the backup
 * was taken of, recovered from the Database's ObjectStore to the end of base
 * backup `backupId` of `server` (the cluster it was taken of), and no
 * further. It archives nothing (no WAL archiver: the store stays the live
 * cluster's alone), serves nobody (no Secret of the Database names it), lets
 * its own superuser in (its Secret goes with it: the count reads every
 * table, whoever owns it), and carries the scratch label, by which the drill
 * alone may throw it away.
 */
function scratchCluster(call: BackupCall, name: string, backupId: string, server: string, major?: number): Obj {
  const { input, target } = call;
  const { spec } = target;
  // A backup from before an in-place major upgrade recovers into the major it was taken of.
  const version =
    major !== undefined && String(major) !== majorVersion(spec.engine, spec.version) ? String(major) : spec.version;
  const storageClass = spec.storageClassName;
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: {
      name,
      namespace: input.owner.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'function-platform', [SCRATCH_LABEL]: 'drill' },
    },
    spec: {
      instances: 1,
      imageName: `ghcr.io/cloudnative-pg/postgresql:${version}`,
      // As large as the live volumes: what the backup holds fits there (a size grown by itself included).
      storage: { size: gi(Math.max(spec.storageGB, target.grownGB ?? 0)), ...(storageClass ? { storageClass } : {}) },
      resources: podResources(spec),
      enableSuperuserAccess: true,
      bootstrap: {
        recovery: { source: RECOVERY_SOURCE, recoveryTarget: { backupID: backupId, targetImmediate: true } },
      },
      externalClusters: [
        {
          name: RECOVERY_SOURCE,
          plugin: { name: CNPG_PLUGIN, parameters: { barmanObjectName: objectStoreName(target), serverName: server } },
        },
      ],
    },
  };
}

/**
 * Who may reach a scratch Cluster: it holds a full copy of the Database, so
 * its PostgreSQL port only to this backup's count (its Job's pods), and the
 * instance manager's port, which serves status and no data, to the operator
 * wherever it runs. Where NetworkPolicies are not enforced, this changes
 * nothing.
 */
function scratchPolicy(call: BackupCall, name: string): Obj {
  const { input } = call;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name,
      namespace: input.owner.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'function-platform' },
    },
    spec: {
      podSelector: { matchLabels: { 'cnpg.io/cluster': name } },
      policyTypes: ['Ingress'],
      ingress: [
        { from: [{ podSelector: { matchLabels: podLabels(input.owner) } }], ports: [{ protocol: 'TCP', port: 5432 }] },
        { from: [{ namespaceSelector: {} }], ports: [{ protocol: 'TCP', port: INSTANCE_MANAGER_PORT }] },
      ],
    },
  };
}

/**
 * How the recovery pod's container ended: its exit code and the kubelet's
 * reason (the operator's pods leave no termination message: their logs go
 * with them), and whether it was killed for memory, which says nothing of
 * the backup.
 */
function recoveryEnd(pods: Obj[] | undefined): { said: string; oom: boolean } | undefined {
  for (const pod of pods ?? []) {
    const e = endedContainers(pod).find((c) => c.bad);
    if (!e) continue;
    const said = lastWords(e.message);
    return {
      said: `exit code ${e.exitCode}, ${e.reason}${said ? `: ${said}` : ''}`,
      oom: e.oom,
    };
  }
  return undefined;
}

/**
 * A CloudNativePG backup's drill. The operator's recovery Job failing is a
 * Failed drill: the backup could not be restored from the store as it is
 * (a damaged backup and a store out of reach are not told apart: the
 * operator's pods say no more than an exit code). Its pod killed for memory,
 * the operator giving the scratch Cluster up, a count that cannot get in,
 * and six hours without a count are Incomplete: they judge nothing.
 */
export function cnpgDrill(call: BackupCall, request: string, startedAt: string | undefined): Drill {
  const { input } = call;
  const out: Drill = { resources: [], requirements: {}, warnings: [] };
  const since = startedAt ?? input.now.toISOString();
  const running = { request, result: 'Running', startedAt: since };
  const overdue = drillOverdue(input.now, since);
  // Ended, it still asks what it asked on this call: Crossplane calls again until two answers ask the same, and an
  // answer that dropped the recovery Job's question would be called without its answer, and find it running.
  const end = (result: DrillResult, reason: string): Drill => ({
    ...drillEnded(input, request, since, result, reason),
    requirements: out.requirements,
  });
  const backup = cnpgBackupOf(input.observed.get(CNPG_KEYS.backup));
  if (!backup?.backupId || !backup.cluster)
    return end(
      'Incomplete',
      `CloudNativePG Backup ${input.owner.name} reports no backup ID: there is nothing to recover`,
    );
  const name = scratchName(input.owner.name, request);
  const jobName = verifyJobName(input.owner, request);
  // What an earlier request made is still there: it goes first, then this one starts.
  const earlier = earlierDrill(input, DRILL_CLUSTER_KEY, name, jobName);
  if (earlier) {
    if (overdue) return end('Incomplete', `${earlier} of an earlier drill was still not deleted after 6 hours`);
    out.status = running;
    return out;
  }
  const cluster = {
    key: DRILL_CLUSTER_KEY,
    object: scratchCluster(call, name, backup.backupId, backup.cluster, backup.majorVersion),
  };
  const policy = { key: DRILL_POLICY_KEY, object: scratchPolicy(call, name) };
  const recoveryLabels = { 'cnpg.io/cluster': name, 'cnpg.io/jobRole': 'full-recovery' };
  const namespace = input.owner.namespace;
  out.requirements[DRILL_RECOVERY] = { apiVersion: 'batch/v1', kind: 'Job', namespace, matchLabels: recoveryLabels };
  out.requirements[DRILL_RECOVERY_PODS] = { apiVersion: 'v1', kind: 'Pod', namespace, matchLabels: recoveryLabels };
  const failed = (input.required.get(DRILL_RECOVERY) ?? []).find((j) => jobOf(j)?.failed);
  if (failed) {
    const ended = recoveryEnd(input.required.get(DRILL_RECOVERY_PODS));
    const why = ended?.said ?? jobOf(failed)?.failed?.message ?? 'no reason given';
    return end(
      ended?.oom ? 'Incomplete' : 'Failed',
      `CloudNativePG could not recover backup ${backup.backupId} into scratch Cluster ${name}: its recovery Job ${nameOf(failed)} failed (${why})`,
    );
  }
  const observed = cnpgClusterOf(input.observed.get(DRILL_CLUSTER_KEY));
  if (observed?.phase === CNPG_UNRECOVERABLE)
    return end(
      'Incomplete',
      `CloudNativePG gave scratch Cluster ${name} up: ${observed.phaseReason?.trim() || 'no reason given'}`,
    );
  const counted = countScratch(call, request, since, jobName, {
    what: `scratch Cluster ${name}`,
    serving: observed?.phase === CNPG_HEALTHY,
    servingWord: 'healthy',
    instead: `phase ${JSON.stringify(observed?.phase ?? 'none')}`,
    composed: [cluster, policy],
    server: { host: `${name}-rw.${namespace}.svc.cluster.local`, secret: `${name}-superuser` },
    countStep: 'the count on the scratch Cluster',
  });
  return { ...counted, requirements: { ...counted.requirements, ...out.requirements } };
}
