// backup-now: a pinned DatabaseBackup, now, of every Database a platform team
// selects (namespaces, labels), as a step of a Crossplane Operation or
// CronOperation. The Databases are asked of Crossplane as required resources,
// one requirement per namespace; once they are answered, the step returns one
// DatabaseBackup per Database for Crossplane to apply, and its output lists
// what was asked and what was skipped, with the label to watch them by.
// Each backup is named after its Database and the minute it was asked for, so
// a step Crossplane runs again within that minute asks for the same backups.
import type { Requirement } from '../blueprints/blueprint.js';
import type { Input } from '../generated/schemas.js';
import type { DatabaseBackup } from '../kinds/platform.js';
import { type Obj, str } from '../kube.js';
import { boundedLabel } from '../names.js';

export type BackupNowSpec = NonNullable<NonNullable<Input['operation']>['backupNow']>;

/** The label every backup an operation asked for carries: the minute it was asked, as YYYYMMDDHHMM. */
export const REQUESTED_LABEL = 'function-platform.dev/backup-now';

/** The required resource that answers with the Databases of `namespace`. */
export const requirementName = (namespace: string) => `databases-in-${namespace}`;

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

const stampOf = (now: Date) => now.toISOString().replace(/[-:T]/g, '').slice(0, 12);

export function planBackupNow(
  spec: BackupNowSpec,
  required: ReadonlyMap<string, readonly Obj[]>,
  now: Date,
): BackupNowPlan {
  const namespaces = [...new Set(spec.namespaces)].sort();
  const labels = spec.matchLabels ?? {};
  const requirements: Record<string, Requirement> = {};
  for (const namespace of namespaces)
    requirements[requirementName(namespace)] = {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      matchLabels: labels,
      namespace,
    };
  if (namespaces.some((ns) => !required.has(requirementName(ns)))) return { requirements };

  const stamp = stampOf(now);
  const backups: Array<{ key: string; object: DatabaseBackup }> = [];
  const asked: Obj[] = [];
  const skipped: Obj[] = [];
  for (const namespace of namespaces) {
    const databases = [...(required.get(requirementName(namespace)) ?? [])].sort((a, b) =>
      (str(a, 'metadata', 'name') ?? '').localeCompare(str(b, 'metadata', 'name') ?? ''),
    );
    for (const db of databases) {
      const database = str(db, 'metadata', 'name');
      if (!database) continue;
      if (str(db, 'metadata', 'deletionTimestamp')) {
        skipped.push({ namespace, database, reason: 'being deleted' });
        continue;
      }
      const name = boundedLabel(63, database, 'now', stamp);
      backups.push({
        key: `${namespace}.${name}`,
        object: {
          apiVersion: 'example.com/v1',
          kind: 'DatabaseBackup',
          metadata: { name, namespace, labels: { [REQUESTED_LABEL]: stamp } },
          spec: { databaseRef: { name: database }, pinned: true },
        },
      });
      asked.push({ namespace, database, backup: name });
    }
  }
  const where = namespaces.join(', ');
  const matching = Object.keys(labels).length
    ? ` with ${Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`
    : '';
  const summary =
    asked.length === 0 && skipped.length === 0
      ? `backup-now: no Database${matching} in ${where}`
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
