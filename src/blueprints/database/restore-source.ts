// What a restore starts from, judged against the Database it goes into: a
// DatabaseBackup (Completed, restorable, taken by the method the target's
// placement restores, of the same engine and major version), or a point in
// time inside the source's restorable window. The same judgment serves a
// Database created from a backup (spec.restore), a DatabaseRestore of an
// existing one, and the DatabaseRestore's own answer; each names the field
// it read.
import { SpecError } from '../../errors.js';
import { num, str, type Obj } from '../../kube.js';
import { type BackupMethod, methodFor } from '../backup/target.js';
import { majorVersion, type ResolvedSpec } from './common.js';

export type Source =
  | {
      kind: 'backup';
      method: BackupMethod;
      name: string;
      /** The Database the backup was taken of. */
      database: string;
      engine: string;
      version: string;
      /** Where it is: an s3:// URL (dump), `rds-snapshot:<id>`, or CloudNativePG's destination. */
      location: string;
      /** The time its data is from. */
      completedAt?: string;
      sizeBytes?: number;
    }
  | {
      kind: 'point';
      /** The Database whose history is restored. */
      database: string;
      /** The point in time; undefined is the latest restorable. */
      time?: string;
    };

/** The placements' restore methods in words, for refusals. */
const RESTORES: Record<BackupMethod, string> = {
  dump: 'a Database in a StatefulSet restores a dump',
  cnpg: 'a highly available Database (CloudNativePG) restores a CloudNativePG backup',
  'rds-snapshot': 'a Database on AWS restores an RDS snapshot',
};

/** A DatabaseBackup named by `field`, judged for a restore into `target`; throws SpecError naming the field. */
export function judgeBackup(field: string, backup: Obj, target: ResolvedSpec): Extract<Source, { kind: 'backup' }> {
  const name = str(backup, 'metadata', 'name') ?? '';
  const status = (backup['status'] ?? {}) as Obj;
  const phase = str(status, 'phase') ?? 'Pending';
  if (phase !== 'Completed' || status['restorable'] !== true)
    throw new SpecError([
      `${field}: DatabaseBackup ${name} is ${phase}${status['restorable'] === true ? '' : ' and not restorable'}; a restore needs a Completed, restorable backup`,
    ]);
  const method = str(status, 'method') as BackupMethod | undefined;
  const wanted = methodFor(target);
  const location = str(status, 'location');
  if (method !== wanted || !location || (method === 'dump' && !location.startsWith('s3://')))
    throw new SpecError([`${field}: DatabaseBackup ${name} was taken by ${String(method)}; ${RESTORES[wanted]}`]);
  const engine = str(status, 'engine') ?? '';
  const version = str(status, 'version') ?? '';
  if (engine !== target.engine || majorVersion(target.engine, version) !== majorVersion(target.engine, target.version))
    throw new SpecError([
      `${field}: DatabaseBackup ${name} holds ${engine} ${version}, and this Database is ${target.engine} ${target.version}; a restore needs the same engine and major version`,
    ]);
  const completedAt = str(status, 'completedAt');
  const sizeBytes = num(status, 'sizeBytes');
  return {
    kind: 'backup',
    method,
    name,
    database: str(backup, 'spec', 'databaseRef', 'name') ?? '',
    engine,
    version,
    location,
    ...(completedAt ? { completedAt } : {}),
    ...(sizeBytes !== undefined ? { sizeBytes } : {}),
  };
}

/** The times a point-in-time restore of a Database can reach, from its status. */
export interface Window {
  earliest?: string;
  latest?: string;
}

export function windowOf(database: Obj | undefined): Window {
  const earliest = str(database, 'status', 'backup', 'earliestRestorableTime');
  const latest = str(database, 'status', 'backup', 'latestRestorableTime');
  return { ...(earliest ? { earliest } : {}), ...(latest ? { latest } : {}) };
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
  if (methodFor(target) === 'dump')
    throw new SpecError([
      `${field}: a Database in a StatefulSet restores from dumps, which hold one moment and no point in time; name a DatabaseBackup instead (point-in-time recovery needs highAvailability or placement aws)`,
    ]);
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

/** The source in words: "DatabaseBackup orders-db-202612020300 (postgres 17, 48211 bytes)", "orders at 2026-12-01T09:30:00Z". */
export function describeSource(source: Source): string {
  if (source.kind === 'point') return `${source.database} at ${source.time ?? 'its latest restorable time'}`;
  const size = source.sizeBytes !== undefined ? `, ${humanBytes(source.sizeBytes)}` : '';
  return `DatabaseBackup ${source.name} (${source.engine} ${source.version}${size})`;
}

/** 48211 bytes, 1.2 GB: exact below a megabyte, one decimal above. */
export function humanBytes(n: number): string {
  if (n < 1e6) return `${n} bytes`;
  const [unit, div] = n >= 1e9 ? ['GB', 1e9] : ['MB', 1e6];
  return `${(n / div).toFixed(1)} ${unit}`;
}

/** The time the restored data is from: a backup's completion, or the point asked for (the latest: not known here). */
export function pointOf(source: Source): string | undefined {
  return source.kind === 'backup' ? source.completedAt : source.time;
}
