// backup-now: a pinned DatabaseBackup, now, of every Database a platform team
// selects (namespaces, labels), as a step of a Crossplane Operation or
// CronOperation. The Databases are asked of Crossplane as required resources,
// one requirement per namespace; once they are answered, the step returns one
// DatabaseBackup per Database for Crossplane to apply, and its output lists
// what was asked and what was skipped, with the label to watch them by.
// Each backup is named after its Database and the minute it was asked for. A
// Database with a backup-now backup asked in the last RECENT_MINUTES that has
// not failed is not asked again: the step Crossplane runs again after a failed
// apply, in a later minute, asks for no second copy.
import type { Requirement } from '../blueprints/blueprint.js';
import type { Input } from '../generated/schemas.js';
import type { DatabaseBackup } from '../kinds/platform.js';
import { type Obj, str } from '../kube.js';
import { boundedLabel } from '../names.js';
import { minuteStamp } from '../clock.js';
import { labelWords, selectDatabases } from './selection.js';

export type BackupNowSpec = NonNullable<NonNullable<Input['operation']>['backupNow']>;

/** The label every backup an operation asked for carries: the minute it was asked, as YYYYMMDDHHMM. */
export const REQUESTED_LABEL = 'function-platform.dev/backup-now';
/** The label that finds them all, whatever the minute. */
export const ASKED_BY_LABEL = 'function-platform.dev/asked-by';
/** How long a backup-now backup that has not failed stands for a new one. */
export const RECENT_MINUTES = 10;
const earlierName = (namespace: string) => `backups-now-in-${namespace}`;

export interface BackupNowPlan {
  /** Asked of Crossplane until it has answered every namespace. */
  requirements: Record<string, Requirement>;
  /** Set once every namespace is answered. */
  done?: {
    backups: Array<{ key: string; object: DatabaseBackup }>;
    output: Obj;
    summary: string;
    /** Nothing matched: said as a warning, since a selector that matches nothing is likely a mistake. */
    nothing: boolean;
  };
}

export function planBackupNow(
  spec: BackupNowSpec,
  required: ReadonlyMap<string, readonly Obj[]>,
  now: Date,
): BackupNowPlan {
  const selected = selectDatabases(spec, required);
  const { namespaces, databases } = selected;
  const requirements: Record<string, Requirement> = { ...selected.requirements };
  for (const namespace of namespaces)
    requirements[earlierName(namespace)] = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      matchLabels: { [ASKED_BY_LABEL]: 'backup-now' },
      namespace,
    };
  if (!databases || namespaces.some((ns) => !required.has(earlierName(ns)))) return { requirements };
  /** The backup-now backup of a Database asked lately and not failed, if any. */
  const recent = (namespace: string, database: string): string | undefined => {
    const since = minuteStamp(new Date(now.getTime() - RECENT_MINUTES * 60_000));
    return (required.get(earlierName(namespace)) ?? [])
      .filter((b) => str(b, 'spec', 'databaseRef', 'name') === database)
      .filter((b) => (str(b, 'metadata', 'labels', REQUESTED_LABEL) ?? '') >= since)
      .filter((b) => str(b, 'status', 'phase') !== 'Failed')
      .map((b) => str(b, 'metadata', 'name'))
      .find((n) => n !== undefined);
  };
  const labels = spec.matchLabels ?? {};
  const stamp = minuteStamp(now);
  const backups: Array<{ key: string; object: DatabaseBackup }> = [];
  const asked: Obj[] = [];
  const skipped: Obj[] = [];
  for (const { namespace, name: database, object: db } of databases) {
    if (str(db, 'metadata', 'deletionTimestamp')) {
      skipped.push({ namespace, database, reason: 'being deleted' });
      continue;
    }
    const earlier = recent(namespace, database);
    if (earlier) {
      asked.push({ namespace, database, backup: earlier, askedBefore: true });
      continue;
    }
    const name = boundedLabel(63, database, 'now', stamp);
    backups.push({
      key: `${namespace}.${name}`,
      object: {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: { name, namespace, labels: { [REQUESTED_LABEL]: stamp, [ASKED_BY_LABEL]: 'backup-now' } },
        spec: { databaseRef: { name: database }, pinned: true },
      },
    });
    asked.push({ namespace, database, backup: name });
  }
  const where = namespaces.join(', ');
  const summary =
    asked.length === 0 && skipped.length === 0
      ? `backup-now: no Database${labelWords(labels)} in ${where}`
      : `backup-now: ${asked.length} pinned DatabaseBackup${asked.length === 1 ? '' : 's'} asked for in ${where}${skipped.length ? `, ${skipped.length} Database${skipped.length === 1 ? '' : 's'} skipped` : ''}; watch them: kubectl get databasebackup -A -l ${REQUESTED_LABEL}=${stamp}`;
  return {
    requirements,
    done: {
      backups,
      output: {
        operation: 'backup-now',
        requestedAt: now.toISOString(),
        label: `${REQUESTED_LABEL}=${stamp}`,
        namespaces,
        ...(Object.keys(labels).length ? { matchLabels: labels } : {}),
        backups: asked,
        skipped,
      },
      summary,
      nothing: asked.length === 0 && skipped.length === 0,
    },
  };
}
