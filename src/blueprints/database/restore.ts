// A Database created from a backup (spec.restore): in the cluster, in a
// StatefulSet, from a Completed dump. The server starts empty; once it is
// ready a Job downloads the dump (its checksum checked) and restores it; only
// then does the Database get its connection Secret and become Ready. The
// outcome is kept in status (restoredFrom, restorePoint), after which the
// restore is over and the Job goes.
import { SpecError } from '../../errors.js';
import { condition, str, type Obj } from '../../kube.js';
import { restoreJob } from '../backup/job.js';
import type { Desired, Requirement } from '../blueprint.js';
import { CLUSTER_KEYS, usesCnpg } from './cluster.js';
import { baseName, type DatabaseInput, majorVersion, type ResolvedSpec } from './common.js';
import { dnsLabel } from '../../names.js';
import { judge } from '../../kinds/index.js';

/** The required resource that is the DatabaseBackup restored from, and the Job's key. */
export const RESTORE_BACKUP = 'restore-backup';
export const RESTORE_KEY = 'restore';

export type RestoreState = 'none' | 'lookup' | 'waiting' | 'running' | 'failed' | 'done';

export interface RestorePlan {
  state: RestoreState;
  /** What the user reads while it is not done. */
  message?: string;
  requirement?: Requirement;
  job?: Desired;
  /** status.restoredFrom and status.restorePoint, once done. */
  status?: Obj;
}

/** Refusals: the XRD's CEL rules on spec.restore, mirrored, and what this version can restore, and how. */
export function checkRestoreSpec(spec: ResolvedSpec, ctx: Pick<DatabaseInput, 'xr' | 'observed'>): void {
  const r = spec.restore;
  const previous = ctx.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  if (restoredFrom !== undefined && r?.fromBackup?.name !== restoredFrom)
    throw new SpecError([
      `spec.restore names ${r?.fromBackup?.name ?? 'nothing'} but this Database was restored from ${restoredFrom}; spec.restore cannot change once the Database exists`,
    ]);
  if (!r) return;
  const problems: string[] = [];
  const existed = ctx.observed.has(CLUSTER_KEYS.statefulset) || ctx.observed.has(CLUSTER_KEYS.cnpg);
  if (existed && restoredFrom === undefined && str(previous, 'phase') !== 'Restoring')
    problems.push('spec.restore can only be given when the Database is created');
  if (Boolean(r.fromBackup) === Boolean(r.fromDatabase))
    problems.push('spec.restore needs exactly one of fromBackup and fromDatabase');
  if (r.pointInTime !== undefined && !r.fromDatabase) problems.push('spec.restore.pointInTime goes with fromDatabase');
  if (r.pointInTime !== undefined && Number.isNaN(Date.parse(r.pointInTime)))
    problems.push(`spec.restore.pointInTime is ${JSON.stringify(r.pointInTime)}; it must be an RFC 3339 time`);
  if (spec.placement === 'aws' || usesCnpg(spec)) {
    problems.push(
      `spec.restore: restoring ${spec.placement === 'aws' ? 'an RDS instance' : 'a CloudNativePG cluster'} is not supported yet; a Database in the cluster without highAvailability restores from a DatabaseBackup (spec.restore.fromBackup)`,
    );
  } else if (r.pointInTime !== undefined || r.fromDatabase) {
    problems.push(
      'spec.restore.pointInTime: a Database in a StatefulSet restores from dumps, which hold one moment and no point in time; name a DatabaseBackup in spec.restore.fromBackup (point-in-time recovery needs highAvailability or placement aws)',
    );
  }
  if (r.fromBackup && !spec.backup.objectStore)
    problems.push('spec.restore.fromBackup: the dump is read from spec.backup.objectStore, which is not set');
  if (problems.length > 0) throw new SpecError(problems);
}

/** Where the restore stands, from the DatabaseBackup read, the observed Job and the status already written. */
export function planRestore(input: DatabaseInput, spec: ResolvedSpec): RestorePlan {
  const name = spec.restore?.fromBackup?.name;
  if (!name) return { state: 'none' };
  const previous = input.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  if (restoredFrom) {
    const point = str(previous, 'restorePoint');
    return { state: 'done', status: { restoredFrom, ...(point ? { restorePoint: point } : {}) } };
  }
  const requirement: Requirement = {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    matchName: name,
    namespace: input.owner.namespace,
  };
  const answer = input.required.get(RESTORE_BACKUP);
  if (answer === undefined) return { state: 'lookup', requirement, message: `looking up DatabaseBackup ${name}` };
  const backup = answer[0];
  const field = 'spec.restore.fromBackup.name';
  // Not there (yet): the empty server may start, nothing is restored and nobody connects; the user may still make it.
  if (!backup)
    return {
      state: 'waiting',
      requirement,
      message: `restoring ${input.owner.name}: ${field} names DatabaseBackup ${name}, which does not exist in namespace ${input.owner.namespace}`,
    };
  const status = (backup['status'] ?? {}) as Obj;
  if (status['phase'] !== 'Completed' || status['restorable'] !== true)
    throw new SpecError([
      `${field}: DatabaseBackup ${name} is ${String(status['phase'] ?? 'Pending')}${status['restorable'] === true ? '' : ' and not restorable'}; a restore needs a Completed, restorable backup`,
    ]);
  if (status['method'] !== 'dump' || !str(status, 'location')?.startsWith('s3://'))
    throw new SpecError([
      `${field}: DatabaseBackup ${name} was taken by ${String(status['method'])}; a Database in a StatefulSet restores a dump`,
    ]);
  const engine = str(status, 'engine');
  const version = str(status, 'version');
  if (engine !== spec.engine || majorVersion(spec.engine, version) !== majorVersion(spec.engine, spec.version))
    throw new SpecError([
      `${field}: DatabaseBackup ${name} holds ${engine} ${version}, and this Database is ${spec.engine} ${spec.version}; a restore needs the same engine and major version`,
    ]);
  const point = str(status, 'completedAt');
  const done = { restoredFrom: name, ...(point ? { restorePoint: point } : {}) };
  const job = input.observed.get(RESTORE_KEY);
  const object = restoreJob(dnsLabel(baseName(input.owner), 'restore'), input.owner, spec, str(status, 'location')!);
  const size = typeof status['sizeBytes'] === 'number' ? `, ${status['sizeBytes']} bytes` : '';
  const what = `restoring ${input.owner.name} from DatabaseBackup ${name} (${engine} ${version}${size})`;
  if (condition(job, 'Complete')?.status === 'True')
    return { state: 'done', requirement, job: { key: RESTORE_KEY, object }, status: done };
  if (condition(job, 'Failed')?.status === 'True') {
    const why = condition(job, 'Failed')?.message ?? condition(job, 'Failed')?.reason ?? 'the restore Job failed';
    return {
      state: 'failed',
      requirement,
      job: { key: RESTORE_KEY, object },
      message: `${what}: the restore failed (${why}); the database stays empty and gets no connection Secret. Delete this Database and create it again to retry`,
    };
  }
  // The dump goes into a server that runs: the restore waits for it.
  if (!job && !judge(input.observed.get(CLUSTER_KEYS.statefulset)).ready)
    return { state: 'waiting', requirement, message: `${what}: waiting for the empty server to start` };
  return { state: 'running', requirement, job: { key: RESTORE_KEY, object }, message: what };
}
