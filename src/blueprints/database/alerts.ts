// A Database's alerts: where the Prometheus Operator is installed (its
// PrometheusRule CRD, read as a required resource), one PrometheusRule named
// after the Database, in its namespace, whose rules are scoped by label
// matchers to this Database alone: its backups (failed, overdue) where it
// schedules DatabaseBackups, its placement's own (a volume full at its
// ceiling, replica lag), and the function answering it Fatal. Each rule names
// its metrics' source (a restore drill failed, too, where backups are drilled). Where the CRD is absent nothing is composed, and
// nothing is said: alerts are the platform's to install.
import { firedAtOrBefore } from '../../spec/cron.js';
import type { Desired, Requirement } from '../blueprint.js';
import { type AlertRule, SOURCES, selector } from '../lifecycle/alert-rules.js';
import { appName, baseName, meta } from '../lifecycle/database.js';
import type { DatabaseCall } from '../lifecycle/placements/placement.js';
import type { Resolution } from './status.js';

/** Required resource: the PrometheusRule CRD, there when the Prometheus Operator is installed. */
export const ALERTS_CRD = 'prometheusrule-crd';
export const PROMETHEUS_RULE_CRD = 'prometheusrules.monitoring.coreos.com';
/** Composition-resource key of the Database's PrometheusRule. */
export const ALERTS_KEY = 'alerts';

/** The function's own per-Database gauges (src/metrics.ts writes them; the names are the contract). */
export const DATABASE_GAUGES = {
  lastBackup: 'function_platform_database_last_backup_timestamp_seconds',
  lastFailedBackup: 'function_platform_database_last_failed_backup_timestamp_seconds',
  lastVerified: 'function_platform_database_last_verified_timestamp_seconds',
  lastFailedVerification: 'function_platform_database_last_failed_verification_timestamp_seconds',
  lastAnswer: 'function_platform_database_last_answer_timestamp_seconds',
  lastFatal: 'function_platform_database_last_fatal_timestamp_seconds',
} as const;

const HOUR_MS = 3_600_000;
const WEEK_MS = 7 * 24 * HOUR_MS;

/**
 * The longest time between two firings of `schedule` over the last week at
 * least (and at least two gaps): a schedule of weekdays only has its weekend,
 * a monthly one its longest month. Undefined when it fired fewer than three
 * times in the 400 days the cron module looks back.
 */
export function longestGapMs(schedule: string, now: Date): number | undefined {
  for (let n = 16; ; n *= 4) {
    const fired = firedAtOrBefore(schedule, now, n);
    const oldest = fired[fired.length - 1];
    const spansWeek = oldest !== undefined && now.getTime() - oldest.getTime() >= WEEK_MS;
    if (fired.length === n && !spansWeek && n < 65_536) continue;
    if (fired.length < 3) return undefined;
    let gap = 0;
    for (let i = 1; i < fired.length; i++) gap = Math.max(gap, fired[i - 1]!.getTime() - fired[i]!.getTime());
    return gap;
  }
}

/** "48h", "90m": a whole number of the largest unit that divides it, as Prometheus writes durations. */
function duration(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  return minutes % 60 === 0 ? `${minutes / 60}h` : `${minutes}m`;
}

/**
 * The matchers of the function's per-Database series: its namespace and the
 * name the user knows it by, as database_namespace and database. Not
 * `namespace`: scraped, the function's pod brings its own (crossplane-system),
 * and Prometheus would rename ours exported_namespace.
 */
function own(input: DatabaseCall): string {
  return selector({ database_namespace: input.owner.namespace, database: appName(input.owner) });
}

/** `metric` of this Database, newest across the function's replicas (each exports what it last saw). */
const newest = (metric: string, sel: string, by = 'database_namespace, database') => `max by (${by}) (${metric}${sel})`;

/** Backup failed and backup overdue, from what the Database's status says of its DatabaseBackups. */
function backupRules(input: DatabaseCall): AlertRule[] {
  const sel = own(input);
  const name = appName(input.owner);
  const { lastBackup, lastFailedBackup } = DATABASE_GAUGES;
  // A failure newer than every success; with no success yet any failure is (the `or` stands in a zero for it).
  const failed = {
    alert: 'DatabaseBackupFailed',
    expr: `${newest(lastFailedBackup, sel)} > ${newest(`${lastBackup}${sel} or ${lastFailedBackup}${sel} * 0`, '')}`,
    for: '1m',
    labels: { severity: 'warning' as const },
    annotations: {
      summary: `Database ${name}: the newest backup failed`,
      description: `The newest DatabaseBackup of Database ${name} failed, and none has succeeded since: status.backup.lastFailure on the Database says why.`,
      source: `${SOURCES.function}: ${lastFailedBackup} and ${lastBackup}, from the Database's status.backup.lastFailedTime and lastSuccessfulTime`,
    },
  };
  const gap = longestGapMs(input.spec.backup.schedule, input.now);
  if (gap === undefined) return [failed];
  const limit = 2 * gap;
  const overdue = {
    alert: 'DatabaseBackupOverdue',
    expr: `time() - ${newest(lastBackup, sel)} > ${limit / 1000}`,
    // A backup of the second slot may still be running when the limit passes.
    for: '30m',
    labels: { severity: 'critical' as const },
    annotations: {
      summary: `Database ${name}: no successful backup for ${duration(limit)}`,
      description: `The newest successful backup of Database ${name} finished {{ $value | humanizeDuration }} ago: more than twice the longest gap of spec.backup.schedule "${input.spec.backup.schedule}" (${duration(gap)}). Its status.backup and BackupHealthy condition say what happens.`,
      source: `${SOURCES.function}: ${lastBackup}, from the Database's status.backup.lastSuccessfulTime`,
    },
  };
  return [failed, overdue];
}

/** A restore drill failed, newer than every one that passed: the backups may not restore. */
function verificationRule(input: DatabaseCall): AlertRule {
  const sel = own(input);
  const name = appName(input.owner);
  const { lastVerified, lastFailedVerification } = DATABASE_GAUGES;
  return {
    alert: 'DatabaseBackupVerificationFailed',
    expr: `${newest(lastFailedVerification, sel)} > ${newest(`${lastVerified}${sel} or ${lastFailedVerification}${sel} * 0`, '')}`,
    for: '1m',
    labels: { severity: 'warning' },
    annotations: {
      summary: `Database ${name}: a backup failed its restore drill`,
      description: `The newest restore drill of Database ${name} failed, and none has passed since: status.backup.lastVerification and the BackupVerified condition say why.`,
      source: `${SOURCES.function}: ${lastFailedVerification} and ${lastVerified}, from the Database's status.backup.lastVerification and lastVerifiedTime`,
    },
  };
}

/**
 * The function answers this Database Fatal (bad input, a change refused
 * because it would lose data): Crossplane then applies nothing, so the
 * Database stays as it was until someone fixes the spec. Per reason, newer
 * than the newest answer that was not Fatal, for ten minutes.
 */
function fatalRule(input: DatabaseCall): AlertRule {
  const sel = own(input);
  const name = appName(input.owner);
  const { lastAnswer, lastFatal } = DATABASE_GAUGES;
  return {
    alert: 'DatabaseFunctionFatal',
    expr: `${newest(lastFatal, sel, 'database_namespace, database, reason')} > on (database_namespace, database) group_left () ${newest(`${lastAnswer}${sel} or ${lastFatal}${sel} * 0`, '')}`,
    for: '10m',
    labels: { severity: 'warning' },
    annotations: {
      summary: `Database ${name}: the function refuses it ({{ $labels.reason }})`,
      description: `function-platform answers Database ${name} with a Fatal result ({{ $labels.reason }}), so nothing of it changes: its events and \`kubectl describe\` say what to fix.`,
      source: `${SOURCES.function}: ${lastFatal} and ${lastAnswer}, set on each answer to this Database`,
    },
  };
}

/**
 * The Database's PrometheusRule and the CRD it asks for. Until the CRD is
 * read (the first call of a reconcile) a PrometheusRule already composed
 * stays: leaving it out would have Crossplane delete it.
 */
export function planAlerts(r: Resolution): { resources: Desired[]; requirements: Record<string, Requirement> } {
  const { input, placement, backups, instances } = r;
  const requirements = {
    [ALERTS_CRD]: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      matchName: PROMETHEUS_RULE_CRD,
    },
  };
  const answer = input.required.get(ALERTS_CRD);
  const installed = answer === undefined ? input.observed.has(ALERTS_KEY) : answer.length > 0;
  if (!installed) return { resources: [], requirements };
  const rules = [
    // Only where the Database takes DatabaseBackups: RDS keeps its own (status.backup, BackupHealthy).
    ...(backups && input.spec.backup.enabled ? backupRules(input) : []),
    // Where its backups are drilled (verification.ts).
    ...(backups &&
    input.spec.backup.enabled &&
    input.spec.backup.verify?.enabled !== false &&
    placement.backup.drill !== undefined
      ? [verificationRule(input)]
      : []),
    ...(placement.alertRules?.(input, instances.live) ?? []),
    fatalRule(input),
  ].map((rule) => ({ ...rule, labels: { ...rule.labels, database: appName(input.owner) } }));
  const object = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: meta(input.owner, input.spec, baseName(input.owner)),
    spec: { groups: [{ name: `database-${input.owner.namespace}-${appName(input.owner)}`, rules }] },
  };
  // A record of what to watch: it never holds up the Database's readiness.
  return { resources: [{ key: ALERTS_KEY, object, independent: true }], requirements };
}
