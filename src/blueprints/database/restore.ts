// A Database created from a backup or a point in time (spec.restore), the
// way its placement restores (lifecycle/placements/): into an empty server by
// a Job (a StatefulSet, which loads a dump once its server runs), or by
// making the instance from the source (CloudNativePG's recovery from the
// source's archive, an RDS instance from a snapshot or the source instance at
// a time), which then says how it was made for as long as it exists. Only
// once the data is there does the Database get its connection Secret and
// become Ready. The outcome is kept in status (restoredFrom, restorePoint),
// after which the restore is over.
import { SpecError } from '../../errors.js';
import { judge } from '../../kinds/index.js';
import { jobOf } from '../../kinds/batch.js';
import { record, str, type Obj } from '../../kube.js';
import type { Desired, Requirement } from '../blueprint.js';
import { prefixFolder } from '../lifecycle/commands.js';
import { appName, type DatabaseInput, dbname, majorVersion, type ResolvedSpec } from '../lifecycle/database.js';
import { DBNAME_ANNOTATION, FROM_ANNOTATION, hasInstance, POINT_ANNOTATION } from '../lifecycle/instances.js';
import { PLACEMENTS, placementOf } from '../lifecycle/placements/index.js';
import type { Creation, DatabaseCall, Placement } from '../lifecycle/placements/placement.js';
import { judgeBackup, judgePoint } from '../lifecycle/restore-source.js';
import { describeSource, pointOf, type Source, windowOf } from '../lifecycle/source.js';
import { lookUp } from '../lifecycle/target.js';

/** Required resources: the DatabaseBackup or the Database restored from; and the dump restore Job's key. */
export const RESTORE_BACKUP = 'restore-backup';
export const RESTORE_DATABASE = 'restore-database';
export const RESTORE_KEY = 'restore';

export type RestoreState = 'none' | 'lookup' | 'waiting' | 'running' | 'failed' | 'done';

export interface RestorePlan {
  state: RestoreState;
  /** What the user reads while it is not done. */
  message?: string;
  requirement?: { name: string; requirement: Requirement };
  /** A dump's restore Job. */
  job?: Desired;
  /**
   * How the instance is made from the source, where the placement makes it so
   * (composed for as long as the instance exists), and the database inside
   * it: the source's (it comes with the data), not this one's.
   */
  creation?: Creation;
  /** What the instance made from the source carries from the start: whence, the point, the database name. */
  annotations?: Record<string, string>;
  /** status.restoredFrom and status.restorePoint, once done. */
  status?: Obj;
}

/**
 * What status.restoredFrom says for a spec.restore: the backup's name, `<database>@<time|latest>`,
 * `rds-snapshot:<id>`, or a dump's `s3://` location.
 */
function restoredFromOf(r: NonNullable<ResolvedSpec['restore']>): string | undefined {
  if (r.fromBackup) return r.fromBackup.name;
  if (r.fromSnapshot) return `rds-snapshot:${r.fromSnapshot.identifier}`;
  if (r.fromDump) return r.fromDump.location;
  if (r.fromDatabase) return `${r.fromDatabase.name}@${r.pointInTime ?? 'latest'}`;
  return undefined;
}

/** Refusals: the XRD's CEL rules on spec.restore, mirrored, and what the placement cannot restore. */
export function checkRestoreSpec(
  spec: ResolvedSpec,
  placement: Placement,
  ctx: Pick<DatabaseInput, 'xr' | 'observed'>,
): void {
  const r = spec.restore;
  const previous = ctx.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  if (restoredFrom !== undefined && (r ? restoredFromOf(r) : undefined) !== restoredFrom)
    throw new SpecError([
      `spec.restore names ${r ? restoredFromOf(r) : 'nothing'} but this Database was restored from ${restoredFrom}; spec.restore cannot change once the Database exists`,
    ]);
  if (!r) return;
  const problems: string[] = [];
  const existed = PLACEMENTS.some((p) => hasInstance(ctx.observed, p.instanceKey));
  if (existed && restoredFrom === undefined && str(previous, 'phase') !== 'Restoring')
    problems.push('spec.restore can only be given when the Database is created');
  if ([r.fromBackup, r.fromDatabase, r.fromSnapshot, r.fromDump].filter(Boolean).length !== 1)
    problems.push('spec.restore needs exactly one of fromBackup, fromDatabase, fromSnapshot and fromDump');
  if (r.fromSnapshot && spec.placement !== 'aws')
    problems.push(
      `spec.restore.fromSnapshot names an RDS snapshot, which only placement aws restores from (this Database is in ${placement.words})`,
    );
  if (r.fromDump) problems.push(...dumpProblems(r.fromDump.location, spec, placement));
  if (r.pointInTime !== undefined && !r.fromDatabase) problems.push('spec.restore.pointInTime goes with fromDatabase');
  if (r.pointInTime !== undefined && Number.isNaN(Date.parse(r.pointInTime)))
    problems.push(`spec.restore.pointInTime is ${JSON.stringify(r.pointInTime)}; it must be an RFC 3339 time`);
  if (r.fromDatabase && !placement.pointInTime.kept)
    problems.push(`spec.restore.pointInTime: ${placement.pointInTime.why('in spec.restore.fromBackup')}`);
  if (placement.restoreReadsStore && !spec.backup.objectStore && !r.fromSnapshot)
    problems.push(
      `spec.restore.${r.fromBackup ? 'fromBackup' : r.fromDump ? 'fromDump' : 'fromDatabase'}: ${placement.restoreReadsStore} spec.backup.objectStore, which is not set`,
    );
  if (problems.length > 0) throw new SpecError(problems);
}

/**
 * What is wrong with restoring the dump at `location` into this Database: only a placement that restores
 * dumps by a Job does, the restore reads with the credentials of the Database's own store (so the dump must
 * be in its bucket), and a dump's extension says its engine (backupKey).
 */
function dumpProblems(location: string, spec: ResolvedSpec, placement: Placement): string[] {
  if (placement.restore.by !== 'job')
    return [
      `spec.restore.fromDump names a dump, which only a Database in a StatefulSet restores (this Database is in ${placement.words})`,
    ];
  const problems: string[] = [];
  const [, bucket, key] = /^s3:\/\/([^/]+)\/(.*)$/.exec(location) ?? [];
  const store = spec.backup.objectStore;
  if (store && bucket !== store.bucket)
    problems.push(
      `spec.restore.fromDump.location is in bucket ${bucket}, and the restore reads with the credentials of spec.backup.objectStore, bucket ${store.bucket}: name a dump in that bucket`,
    );
  // Under the store's prefix: where the platform gives each team a prefix of a shared bucket, a team names its own.
  const folder = prefixFolder(store?.prefix);
  if (store && bucket === store.bucket && folder && !key?.startsWith(folder))
    problems.push(
      `spec.restore.fromDump.location is not under the prefix of spec.backup.objectStore (${folder}): name a dump of this store`,
    );
  const wanted = spec.engine === 'postgres' ? '.dump' : '.sql';
  if (!location.endsWith(wanted))
    problems.push(
      `spec.restore.fromDump.location does not end in ${wanted}: a ${spec.engine} dump does (a .dump is a pg_dump archive, a .sql a mysqldump)`,
    );
  return problems;
}

function backupRequirement(input: DatabaseInput, name: string): RestorePlan['requirement'] {
  return {
    name: RESTORE_BACKUP,
    requirement: {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      matchName: name,
      namespace: input.owner.namespace,
    },
  };
}

function databaseRequirement(input: DatabaseInput, name: string): RestorePlan['requirement'] {
  return {
    name: RESTORE_DATABASE,
    requirement: { apiVersion: 'example.com/v1', kind: 'Database', matchName: name, namespace: input.owner.namespace },
  };
}

/** The source looked up and judged: a backup, or another Database's history at a time. Throws SpecError naming the field. */
function judgeSource(input: DatabaseInput, spec: ResolvedSpec, found: Obj): { source: Source; instance?: string } {
  const r = spec.restore!;
  if (r.fromBackup) return { source: judgeBackup('spec.restore.fromBackup.name', found, spec) };
  const name = r.fromDatabase!.name;
  const field = 'spec.restore.fromDatabase.name';
  const lookup = lookUp([found], name, input.owner.namespace);
  if (lookup.state === 'refused') throw new SpecError([`${field}: Database ${name} ${lookup.why}`]);
  if (lookup.state !== 'found') throw new SpecError([`${field}: Database ${name} cannot be read`]);
  const source = lookup.target.spec;
  const sourcePlacement = lookup.target.placement;
  const placement = placementOf(spec);
  // (As it always was: a postgres source must also match in highAvailability, on AWS too.)
  if (
    sourcePlacement !== placement ||
    (spec.engine === 'postgres' && source.highAvailability !== spec.highAvailability) ||
    source.engine !== spec.engine ||
    majorVersion(spec.engine, source.version) !== majorVersion(spec.engine, spec.version)
  )
    throw new SpecError([
      `${field}: Database ${name} is ${source.engine} ${source.version} (${sourcePlacement.words}), and this Database is ${spec.engine} ${spec.version} (${placement.words}); a point-in-time restore needs the same engine, major version and placement`,
    ]);
  judgePoint('spec.restore.pointInTime', r.pointInTime, spec, windowOf(found), input.now);
  const instance = str(found, 'status', 'instance');
  return {
    source: { kind: 'point', database: name, ...(r.pointInTime ? { time: r.pointInTime } : {}) },
    ...(instance ? { instance } : {}),
  };
}

/** Where the restore stands, from the source read, what was composed and the status already written. */
export function planRestore(input: DatabaseCall, spec: ResolvedSpec, placement: Placement): RestorePlan {
  const r = spec.restore;
  if (!r) return { state: 'none' };
  const way = placement.restore;
  const previous = input.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  if (r.fromSnapshot) return planSnapshotRestore(input, r.fromSnapshot, placement);
  if (r.fromDump) {
    // Nothing to look up: the restore Job's download judges the dump (its checksum), its restore the rest.
    const location = r.fromDump.location;
    const done = { restoredFrom: location };
    if (restoredFrom) return { state: 'done', status: done };
    return restoreByJob(input, placement, location, `restoring ${appName(input.owner)} from dump ${location}`, done);
  }
  const sourceName = r.fromBackup?.name ?? r.fromDatabase!.name;
  const requirement = r.fromBackup ? backupRequirement(input, sourceName) : databaseRequirement(input, sourceName);
  // The instance the Database was made as, where the placement makes it from the source, if it exists.
  const made = way.by === 'creation' ? input.observed.get(placement.instanceKey) : undefined;
  // Done: the status is the record, and the instance keeps saying how it was made (the source may be gone).
  if (restoredFrom) {
    const point = str(previous, 'restorePoint');
    return {
      state: 'done',
      status: { restoredFrom, ...(point ? { restorePoint: point } : {}) },
      ...(made && way.by === 'creation' ? { creation: way.creationOf(made) } : {}),
    };
  }
  const what = r.fromBackup ? `DatabaseBackup ${sourceName}` : `Database ${sourceName}`;
  // An instance already being made from the source: judged when it started, it goes on from what it was made
  // with, whatever happens to the source since.
  if (made && way.by === 'creation') {
    const notes = (record(made, 'metadata', 'annotations') ?? {}) as Record<string, string>;
    const point = notes[POINT_ANNOTATION];
    const done = { restoredFrom: restoredFromOf(r)!, ...(point ? { restorePoint: point } : {}) };
    const verdict = judge(made);
    if (verdict.ready) return { state: 'done', creation: way.creationOf(made), status: done };
    return {
      state: 'running',
      creation: way.creationOf(made),
      message: `restoring ${appName(input.owner)} from ${notes[FROM_ANNOTATION] ?? what}: ${verdict.detail}`,
    };
  }
  const answer = input.required.get(requirement!.name);
  if (answer === undefined) return { state: 'lookup', requirement, message: `looking up ${what}` };
  const found = answer[0];
  // Not there (yet): nothing is restored and nobody connects; the user may still make it.
  if (!found)
    return {
      state: 'waiting',
      requirement,
      message: `restoring ${appName(input.owner)}: ${r.fromBackup ? 'spec.restore.fromBackup.name' : 'spec.restore.fromDatabase.name'} names ${what}, which does not exist in namespace ${input.owner.namespace}`,
    };
  const judged = judgeSource(input, spec, found);
  const point =
    judged.source.kind === 'point'
      ? (judged.source.time ?? str(found, 'status', 'backup', 'latestRestorableTime'))
      : pointOf(judged.source);
  const done = { restoredFrom: restoredFromOf(r)!, ...(point ? { restorePoint: point } : {}) };
  const message = `restoring ${appName(input.owner)} from ${describeSource(judged.source)}`;
  if (way.by === 'job') {
    if (judged.source.kind !== 'backup') throw new SpecError([`spec.restore: ${placement.backup.restores}`]);
    return { ...restoreByJob(input, placement, judged.source.location, message, done), requirement };
  }
  // The instance is made from the source, which then says how it was made (above).
  const creation = way.creation(input, judged.source, judged.instance);
  return {
    state: 'running',
    requirement,
    creation,
    annotations: {
      [FROM_ANNOTATION]: describeSource(judged.source),
      ...(point ? { [POINT_ANNOTATION]: point } : {}),
      ...(creation.database ? { [DBNAME_ANNOTATION]: creation.database } : {}),
    },
    message: `${message}: creating the instance`,
  };
}

/** A dump at `location` restored into the empty server by a Job, once the server runs. */
function restoreByJob(
  input: DatabaseCall,
  placement: Placement,
  location: string,
  message: string,
  done: Obj,
): RestorePlan {
  const way = placement.restore;
  if (way.by !== 'job') throw new SpecError([`spec.restore: ${placement.backup.restores}`]);
  const job = jobOf(input.observed.get(RESTORE_KEY));
  const restoring = { key: RESTORE_KEY, object: way.job(input, location) };
  if (job?.complete) return { state: 'done', job: restoring, status: done };
  if (job?.failed) {
    const why = job.failed.message ?? job.failed.reason ?? 'the restore Job failed';
    return {
      state: 'failed',
      job: restoring,
      message: `${message}: the restore failed (${why}); the database stays empty and gets no connection Secret. Delete this Database and create it again to retry`,
    };
  }
  // The dump goes into a server that runs: the restore waits for it.
  if (!job && !way.serverReady(input))
    return { state: 'waiting', message: `${message}: waiting for the empty server to start` };
  return { state: 'running', job: restoring, message };
}

/**
 * A Database made from an RDS snapshot no DatabaseBackup records (spec.restore.fromSnapshot): nothing to look
 * up in the cluster, and AWS judges the snapshot (its engine and version) when the instance is made from it;
 * the instance's state says how that goes, as for a snapshot a DatabaseBackup names.
 */
function planSnapshotRestore(
  input: DatabaseCall,
  from: NonNullable<NonNullable<ResolvedSpec['restore']>['fromSnapshot']>,
  placement: Placement,
): RestorePlan {
  const way = placement.restore;
  if (way.by !== 'creation') throw new SpecError([`spec.restore.fromSnapshot: ${placement.backup.restores}`]);
  const previous = input.xr['status'] as Obj | undefined;
  const restoredFrom = `rds-snapshot:${from.identifier}`;
  const made = input.observed.get(placement.instanceKey);
  if (str(previous, 'restoredFrom'))
    return { state: 'done', status: { restoredFrom }, ...(made ? { creation: way.creationOf(made) } : {}) };
  const source: Source = {
    kind: 'snapshot',
    identifier: from.identifier,
    database: from.database ?? dbname(input.owner),
  };
  const message = `restoring ${appName(input.owner)} from ${describeSource(source)}`;
  if (made) {
    const verdict = judge(made);
    if (verdict.ready) return { state: 'done', creation: way.creationOf(made), status: { restoredFrom } };
    return { state: 'running', creation: way.creationOf(made), message: `${message}: ${verdict.detail}` };
  }
  const creation = way.creation(input, source, undefined);
  return {
    state: 'running',
    creation,
    annotations: {
      [FROM_ANNOTATION]: describeSource(source),
      ...(creation.database ? { [DBNAME_ANNOTATION]: creation.database } : {}),
    },
    message: `${message}: creating the instance`,
  };
}
