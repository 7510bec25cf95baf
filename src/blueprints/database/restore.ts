// A Database created from a backup or a point in time (spec.restore), per
// placement:
//   StatefulSet     the server starts empty; once it is ready a Job downloads
//                   the dump (its checksum checked) and restores it;
//   CloudNativePG   the Cluster bootstraps by recovery from the source's
//                   Barman Cloud archive, to the backup's end or the point asked;
//   RDS             the instance is created from the backup's snapshot, or
//                   restored from the source instance to the point asked.
// Only once the data is there does the Database get its connection Secret and
// become Ready. The outcome is kept in status (restoredFrom, restorePoint),
// after which the restore is over.
import { SpecError } from '../../errors.js';
import { condition, list, record, str, type Obj } from '../../kube.js';
import { dnsLabel } from '../../names.js';
import { judge } from '../../kinds/index.js';
import { restoreJob } from '../backup/job.js';
import { lookUp } from '../backup/target.js';
import type { Desired, Requirement } from '../blueprint.js';
import { rdsIdentifierOf } from './aws.js';
import { CLUSTER_KEYS, objectStoreName, type Recovery, usesCnpg } from './cluster.js';
import { baseName, type DatabaseInput, majorVersion, type ResolvedSpec } from './common.js';
import { databaseName } from './engine.js';
import { hasInstance, INSTANCE_KEYS } from './instances.js';
import { DBNAME_ANNOTATION, FROM_ANNOTATION, POINT_ANNOTATION } from './cutover.js';
import { describeSource, judgeBackup, judgePoint, type Source, windowOf } from './restore-source.js';

/** Required resources: the DatabaseBackup or the Database restored from; and the dump restore Job's key. */
export const RESTORE_BACKUP = 'restore-backup';
export const RESTORE_DATABASE = 'restore-database';
export const RESTORE_KEY = 'restore';

export type RestoreState = 'none' | 'lookup' | 'waiting' | 'running' | 'failed' | 'done';

/** How an RDS instance is created from the source: its snapshot, or the source instance at a time. */
export type RdsRestore =
  | { snapshotIdentifier: string }
  | {
      restoreToPointInTime: {
        sourceDbInstanceIdentifier: string;
        restoreTime?: string;
        useLatestRestorableTime?: boolean;
      };
    };

export interface RestorePlan {
  state: RestoreState;
  /** What the user reads while it is not done. */
  message?: string;
  requirement?: { name: string; requirement: Requirement };
  /** A dump's restore Job. */
  job?: Desired;
  /** CloudNativePG's recovery, or RDS's creation from the source: composed for as long as the instance exists. */
  recovery?: Recovery;
  rds?: RdsRestore;
  /** What the instance made from the source carries from the start: whence, the point, the database name. */
  annotations?: Record<string, string>;
  /**
   * The database inside a CloudNativePG or RDS instance made from another
   * Database's data: the source's (it comes with the data), not this one's.
   */
  database?: string;
  /** status.restoredFrom and status.restorePoint, once done. */
  status?: Obj;
}

/** What status.restoredFrom says for a spec.restore: the backup's name, or `<database>@<time|latest>`. */
function restoredFromOf(r: NonNullable<ResolvedSpec['restore']>): string | undefined {
  if (r.fromBackup) return r.fromBackup.name;
  if (r.fromDatabase) return `${r.fromDatabase.name}@${r.pointInTime ?? 'latest'}`;
  return undefined;
}

/** Refusals: the XRD's CEL rules on spec.restore, mirrored, and what no placement can restore. */
export function checkRestoreSpec(spec: ResolvedSpec, ctx: Pick<DatabaseInput, 'xr' | 'observed'>): void {
  const r = spec.restore;
  const previous = ctx.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  if (restoredFrom !== undefined && (r ? restoredFromOf(r) : undefined) !== restoredFrom)
    throw new SpecError([
      `spec.restore names ${r ? restoredFromOf(r) : 'nothing'} but this Database was restored from ${restoredFrom}; spec.restore cannot change once the Database exists`,
    ]);
  if (!r) return;
  const problems: string[] = [];
  const existed = [INSTANCE_KEYS.statefulset, INSTANCE_KEYS.cnpg, INSTANCE_KEYS.rds].some((k) =>
    hasInstance(ctx.observed, k),
  );
  if (existed && restoredFrom === undefined && str(previous, 'phase') !== 'Restoring')
    problems.push('spec.restore can only be given when the Database is created');
  if (Boolean(r.fromBackup) === Boolean(r.fromDatabase))
    problems.push('spec.restore needs exactly one of fromBackup and fromDatabase');
  if (r.pointInTime !== undefined && !r.fromDatabase) problems.push('spec.restore.pointInTime goes with fromDatabase');
  if (r.pointInTime !== undefined && Number.isNaN(Date.parse(r.pointInTime)))
    problems.push(`spec.restore.pointInTime is ${JSON.stringify(r.pointInTime)}; it must be an RFC 3339 time`);
  if (r.fromDatabase && spec.placement === 'cluster' && !usesCnpg(spec))
    problems.push(
      'spec.restore.pointInTime: a Database in a StatefulSet restores from dumps, which hold one moment and no point in time; name a DatabaseBackup in spec.restore.fromBackup (point-in-time recovery needs highAvailability or placement aws)',
    );
  if (spec.placement === 'cluster' && !spec.backup.objectStore)
    problems.push(
      `spec.restore.${r.fromBackup ? 'fromBackup' : 'fromDatabase'}: ${usesCnpg(spec) ? 'CloudNativePG recovers from' : 'the dump is read from'} spec.backup.objectStore, which is not set`,
    );
  if (problems.length > 0) throw new SpecError(problems);
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
  if (
    source.placement !== spec.placement ||
    usesCnpg(source) !== usesCnpg(spec) ||
    source.engine !== spec.engine ||
    majorVersion(spec.engine, source.version) !== majorVersion(spec.engine, spec.version)
  )
    throw new SpecError([
      `${field}: Database ${name} is ${source.engine} ${source.version} (${placementWords(source)}), and this Database is ${spec.engine} ${spec.version} (${placementWords(spec)}); a point-in-time restore needs the same engine, major version and placement`,
    ]);
  judgePoint('spec.restore.pointInTime', r.pointInTime, spec, windowOf(found), input.now);
  const instance = str(found, 'status', 'instance');
  return {
    source: { kind: 'point', database: name, ...(r.pointInTime ? { time: r.pointInTime } : {}) },
    ...(instance ? { instance } : {}),
  };
}

function placementWords(spec: ResolvedSpec): string {
  return spec.placement === 'aws' ? 'on AWS' : usesCnpg(spec) ? 'CloudNativePG' : 'a StatefulSet';
}

/** Where the restore stands, from the source read, what was composed and the status already written. */
export function planRestore(input: DatabaseInput, spec: ResolvedSpec): RestorePlan {
  const r = spec.restore;
  if (!r) return { state: 'none' };
  const previous = input.xr['status'] as Obj | undefined;
  const restoredFrom = str(previous, 'restoredFrom');
  const sourceName = r.fromBackup?.name ?? r.fromDatabase!.name;
  const requirement = r.fromBackup ? backupRequirement(input, sourceName) : databaseRequirement(input, sourceName);
  // Done: the status is the record, and the instance keeps saying how it was made (the source may be gone).
  if (restoredFrom) {
    const point = str(previous, 'restorePoint');
    const made = instanceOf(input, spec);
    return {
      state: 'done',
      status: { restoredFrom, ...(point ? { restorePoint: point } : {}) },
      ...(made ? creationOf(made) : {}),
    };
  }
  const what = r.fromBackup ? `DatabaseBackup ${sourceName}` : `Database ${sourceName}`;
  // A CloudNativePG Cluster or RDS instance already being made from the source: judged when it started, it
  // goes on from what it was made with, whatever happens to the source since.
  const making = spec.placement === 'cluster' && !usesCnpg(spec) ? undefined : instanceOf(input, spec);
  if (making) {
    const notes = (record(making, 'metadata', 'annotations') ?? {}) as Record<string, string>;
    const point = notes[POINT_ANNOTATION];
    const done = { restoredFrom: restoredFromOf(r)!, ...(point ? { restorePoint: point } : {}) };
    const verdict = judge(making);
    if (verdict.ready) return { state: 'done', ...creationOf(making), status: done };
    return {
      state: 'running',
      ...creationOf(making),
      message: `restoring ${input.owner.name} from ${notes[FROM_ANNOTATION] ?? what}: ${verdict.detail}`,
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
      message: `restoring ${input.owner.name}: ${r.fromBackup ? 'spec.restore.fromBackup.name' : 'spec.restore.fromDatabase.name'} names ${what}, which does not exist in namespace ${input.owner.namespace}`,
    };
  const judged = judgeSource(input, spec, found);
  const point =
    judged.source.kind === 'backup'
      ? judged.source.completedAt
      : (judged.source.time ?? str(found, 'status', 'backup', 'latestRestorableTime'));
  const done = { restoredFrom: restoredFromOf(r)!, ...(point ? { restorePoint: point } : {}) };
  const message = `restoring ${input.owner.name} from ${describeSource(judged.source)}`;
  if (spec.placement === 'cluster' && !usesCnpg(spec))
    return dumpRestore(input, spec, judged.source, requirement, done, message);
  // CloudNativePG and RDS make the instance from the source, which then says how it was made (above).
  const how = creation(input, spec, judged);
  const from = describeSource(judged.source);
  return {
    state: 'running',
    requirement,
    ...how,
    annotations: {
      [FROM_ANNOTATION]: from,
      ...(point ? { [POINT_ANNOTATION]: point } : {}),
      ...(how.database ? { [DBNAME_ANNOTATION]: how.database } : {}),
    },
    message: `${message}: creating the instance`,
  };
}

/** How the instance is made from the source, per placement. */
function creation(
  input: DatabaseInput,
  spec: ResolvedSpec,
  judged: { source: Source; instance?: string },
): Pick<RestorePlan, 'recovery' | 'rds' | 'database'> {
  const { source } = judged;
  const sourceOwner = { kind: 'Database', name: source.database, uid: '', namespace: input.owner.namespace };
  const database = databaseName(source.database);
  if (spec.placement === 'aws') {
    if (source.kind === 'backup')
      return { database, rds: { snapshotIdentifier: source.location.replace(/^rds-snapshot:/, '') } };
    const sourceDbInstanceIdentifier = judged.instance ?? rdsIdentifierOf(sourceOwner);
    return {
      database,
      rds: {
        restoreToPointInTime: {
          sourceDbInstanceIdentifier,
          ...(source.time ? { restoreTime: source.time } : { useLatestRestorableTime: true }),
        },
      },
    };
  }
  const targetTime = source.kind === 'backup' ? source.completedAt : source.time;
  return {
    database,
    recovery: {
      store: objectStoreName({ owner: sourceOwner }),
      server: judged.instance ?? baseName(sourceOwner),
      ...(targetTime ? { targetTime } : {}),
    },
  };
}

/**
 * How an observed CloudNativePG Cluster or RDS instance was made, as it was
 * composed: creation settings are kept for as long as it exists, whatever
 * happens to the source since (a later change would ask the provider to
 * replace it), and so is the database name it came with.
 */
export function creationOf(instance: Obj): Pick<RestorePlan, 'recovery' | 'rds' | 'database'> {
  const dbname = str(instance, 'metadata', 'annotations', DBNAME_ANNOTATION);
  const database = dbname ? { database: dbname } : {};
  const forProvider = record(instance, 'spec', 'forProvider');
  if (forProvider) {
    const snapshotIdentifier = str(forProvider, 'snapshotIdentifier');
    if (snapshotIdentifier) return { ...database, rds: { snapshotIdentifier } };
    const pitr = record(forProvider, 'restoreToPointInTime');
    const sourceDbInstanceIdentifier = str(pitr, 'sourceDbInstanceIdentifier');
    if (!pitr || !sourceDbInstanceIdentifier) return database;
    const restoreTime = str(pitr, 'restoreTime');
    return {
      ...database,
      rds: {
        restoreToPointInTime: {
          sourceDbInstanceIdentifier,
          ...(restoreTime ? { restoreTime } : { useLatestRestorableTime: true }),
        },
      },
    };
  }
  const origin = list(instance, 'spec', 'externalClusters')[0];
  const store = str(origin, 'plugin', 'parameters', 'barmanObjectName');
  const server = str(origin, 'plugin', 'parameters', 'serverName');
  const targetTime = str(instance, 'spec', 'bootstrap', 'recovery', 'recoveryTarget', 'targetTime');
  return store && server
    ? { ...database, recovery: { store, server, ...(targetTime ? { targetTime } : {}) } }
    : database;
}

/** A dump restored into the empty StatefulSet by a Job, once the server runs. */
function dumpRestore(
  input: DatabaseInput,
  spec: ResolvedSpec,
  source: Source,
  requirement: RestorePlan['requirement'],
  done: Obj,
  what: string,
): RestorePlan {
  if (source.kind !== 'backup') throw new SpecError(['spec.restore: a Database in a StatefulSet restores a dump']);
  const job = input.observed.get(RESTORE_KEY);
  const object = restoreJob(dnsLabel(baseName(input.owner), 'restore'), input.owner, spec, source.location);
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

/** The CloudNativePG Cluster or RDS instance the Database was made as, if it exists. */
function instanceOf(input: DatabaseInput, spec: ResolvedSpec): Obj | undefined {
  return input.observed.get(spec.placement === 'aws' ? INSTANCE_KEYS.rds : INSTANCE_KEYS.cnpg);
}
