// What a restore starts from, judged against the Database it goes into: a
// DatabaseBackup (Completed, restorable, taken by the method the target's
// placement restores, of the same engine and major version), or a point in
// time inside the source's restorable window, where the placement keeps a
// history. The same judgment serves a Database created from a backup
// (spec.restore), a DatabaseRestore of an existing one, and the
// DatabaseRestore's own answer; each names the field it read.
import { SpecError } from '../../errors.js';
import { databaseBackupOf } from '../../kinds/platform.js';
import { str, type Obj } from '../../kube.js';
import { majorVersion, type ResolvedSpec } from './database.js';
import { placementOf } from './placements/index.js';
import type { Source, Window } from './source.js';

/** A DatabaseBackup named by `field`, judged for a restore into `target`; throws SpecError naming the field. */
export function judgeBackup(field: string, backup: Obj, target: ResolvedSpec): Extract<Source, { kind: 'backup' }> {
  const seen = databaseBackupOf(backup)!;
  const name = seen.name ?? '';
  const phase = seen.phase ?? 'Pending';
  if (phase !== 'Completed' || !seen.restorable)
    throw new SpecError([
      `${field}: DatabaseBackup ${name} is ${phase}${seen.restorable ? '' : ' and not restorable'}; a restore needs a Completed, restorable backup`,
    ]);
  const { method, location } = seen;
  const wanted = placementOf(target).backup;
  if (method !== wanted.name || !location || !wanted.accepts(location))
    throw new SpecError([`${field}: DatabaseBackup ${name} was taken by ${String(method)}; ${wanted.restores}`]);
  const engine = seen.engine ?? '';
  const version = seen.version ?? '';
  if (engine !== target.engine || majorVersion(target.engine, version) !== majorVersion(target.engine, target.version))
    throw new SpecError([
      `${field}: DatabaseBackup ${name} holds ${engine} ${version}, and this Database is ${target.engine} ${target.version}; a restore needs the same engine and major version`,
    ]);
  const { completedAt, sizeBytes, instance } = seen;
  return {
    kind: 'backup',
    method,
    name,
    database: seen.database ?? '',
    engine,
    version,
    location,
    ...(completedAt ? { completedAt } : {}),
    ...(sizeBytes !== undefined ? { sizeBytes } : {}),
    ...(instance ? { instance } : {}),
  };
}

/**
 * A point in time named by `field`, judged for a restore into `target`:
 * only placements that keep a history (RDS, CloudNativePG) have one, and it
 * must lie within the window and not in the future. Throws SpecError.
 */
export function judgePoint(
  field: string,
  time: string | undefined,
  target: ResolvedSpec,
  window: Window,
  now: Date,
): void {
  const history = placementOf(target).pointInTime;
  if (!history.kept) throw new SpecError([`${field}: ${history.why('instead')}`]);
  if (time === undefined) return;
  const t = Date.parse(time);
  if (Number.isNaN(t)) throw new SpecError([`${field} is ${JSON.stringify(time)}; it must be an RFC 3339 time`]);
  if (t > now.getTime())
    throw new SpecError([`${field} is ${time}, which is in the future; it must be at most now (${now.toISOString()})`]);
  if (window.earliest && t < Date.parse(window.earliest))
    throw new SpecError([
      `${field} is ${time}, before the earliest restorable time ${window.earliest}; allowed: ${window.earliest} to ${window.latest ?? 'now'}`,
    ]);
  if (window.latest && t > Date.parse(window.latest))
    throw new SpecError([
      `${field} is ${time}, after the latest restorable time ${window.latest}; allowed: ${window.earliest ?? 'the first backup'} to ${window.latest}`,
    ]);
}

/**
 * Judges a DatabaseRestore's request against the Database it restores; throws
 * SpecError naming the field. The DatabaseRestore's own blueprint answers
 * with the same words as the Database.
 */
export function judgeRequest(
  spec: Obj,
  database: ResolvedSpec,
  window: Window,
  backup: Obj | undefined,
  now: Date,
  databaseName: string,
): Source {
  const from = str(spec, 'fromBackup', 'name');
  const point = str(spec, 'pointInTime');
  if (Boolean(from) === (point !== undefined))
    throw new SpecError(['spec needs exactly one of fromBackup and pointInTime']);
  if (from) {
    if (!backup)
      throw new SpecError([
        `spec.fromBackup.name names DatabaseBackup ${from}, which does not exist in this namespace`,
      ]);
    const source = judgeBackup('spec.fromBackup.name', backup, database);
    if (source.database !== databaseName)
      throw new SpecError([
        `spec.fromBackup.name: DatabaseBackup ${from} is a backup of Database ${source.database}, not of ${databaseName}; restore it into a new Database with spec.restore.fromBackup`,
      ]);
    return source;
  }
  judgePoint('spec.pointInTime', point, database, window, now);
  const history = placementOf(database).pointInTime;
  const missing = history.kept ? history.archiveMissing(database, databaseName) : undefined;
  if (missing) throw new SpecError([`spec.pointInTime: ${missing}`]);
  if (window.earliest === undefined)
    throw new SpecError([
      `spec.pointInTime: Database ${databaseName} has no restorable window yet (status.backup.earliestRestorableTime): its first backup or archived WAL is not there`,
    ]);
  return { kind: 'point', database: databaseName, ...(point ? { time: point } : {}) };
}
