// What a restore starts from: a DatabaseBackup, a point in another
// Database's history, or an RDS snapshot no DatabaseBackup records; the
// window such a point must lie in; and how each is said to the user. Judging
// one against the Database it goes into is restore-source.ts's.
import { str, type Obj } from '../../kube.js';

export type Source =
  | {
      kind: 'backup';
      /** How it was taken: a placement's backup method (status.method). */
      method: string;
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
      /** The instance it was taken of (CloudNativePG: the cluster whose archive holds it), as the backup says. */
      instance?: string;
    }
  | {
      /** An RDS snapshot no DatabaseBackup records (a deleted Database's final snapshot): spec.restore.fromSnapshot. */
      kind: 'snapshot';
      identifier: string;
      /** The database inside it, which comes with its data. */
      database: string;
    }
  | {
      kind: 'point';
      /** The Database whose history is restored. */
      database: string;
      /** The point in time; undefined is the latest restorable. */
      time?: string;
    };

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

/** The source in words: "DatabaseBackup orders-db-202612020300 (postgres 17, 48211 bytes)", "orders at 2026-12-01T09:30:00Z". */
export function describeSource(source: Source): string {
  if (source.kind === 'point') return `${source.database} at ${source.time ?? 'its latest restorable time'}`;
  if (source.kind === 'snapshot') return `RDS snapshot ${source.identifier}`;
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
  if (source.kind === 'snapshot') return undefined;
  return source.kind === 'backup' ? source.completedAt : source.time;
}
