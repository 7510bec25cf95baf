// Restore drills of a Database's backups (spec.backup.verify): on the verify
// schedule the Database asks its newest Completed scheduled backup for one (a
// new spec.verification.requested on that DatabaseBackup, the slot's minute
// stamp; the DatabaseBackup runs it, backup/drill.ts), one at a time, never
// while a restore or an upgrade is on its way. What the drills found is read
// back from the DatabaseBackups: status.backup.lastVerifiedTime and
// lastVerification, the BackupVerified condition, and Degraded when the
// newest good backup is the one that failed its drill.
import { minuteStamp } from '../../clock.js';
import { num, type Obj, record, str } from '../../kube.js';
import { firedAtOrBefore } from '../../spec/cron.js';
import type { DatabaseInput, ResolvedSpec } from '../lifecycle/database.js';
import type { Health } from '../lifecycle/placements/placement.js';

/** A scheduled backup as the drills read it. */
export interface DrilledBackup {
  stamp: string;
  object: Obj;
  phase: string | undefined;
}

export interface DrillPlan {
  /** spec.verification.requested of each scheduled backup, by slot stamp: as composed before, and the one asked now. */
  requests: Map<string, string>;
  /** status.backup's lastVerifiedTime and lastVerification. */
  status: Obj;
  /** The BackupVerified condition, once a drill has ended. */
  condition?: Health;
  /** The newest good backup failed its drill: the Database is Degraded, and this says why. */
  trouble?: string;
  warnings: Array<{ reason: string; message: string }>;
}

const ENDED = new Set(['Passed', 'Failed', 'Incomplete']);

/**
 * The drills of this call. `busy`: what runs that a drill must not run beside
 * (a restore, an upgrade), if anything; `drills`: whether the placement's
 * backup method has a drill scheduled (an RDS snapshot is drilled only on request:
 * the Database schedules no backups there).
 */
export function planDrills(
  input: DatabaseInput,
  spec: ResolvedSpec,
  records: DrilledBackup[],
  drills: boolean,
  busy: string | undefined,
): DrillPlan {
  const out: DrillPlan = { requests: new Map(), status: {}, warnings: [] };
  for (const r of records) {
    const asked = str(r.object, 'spec', 'verification', 'requested');
    if (asked) out.requests.set(r.stamp, asked);
  }
  const name = (r: DrilledBackup) => str(r.object, 'metadata', 'name') ?? r.stamp;
  const drillOf = (r: DrilledBackup) => record(r.object, 'status', 'verification');
  const ended = records
    .map((r) => ({ r, v: drillOf(r) }))
    .filter((x): x is { r: DrilledBackup; v: Obj } => x.v !== undefined && ENDED.has(str(x.v, 'result') ?? ''))
    .sort((a, b) => Date.parse(str(a.v, 'verifiedAt') ?? '') - Date.parse(str(b.v, 'verifiedAt') ?? ''));
  const passed = ended.filter((x) => str(x.v, 'result') === 'Passed');
  const lastPassed = passed[passed.length - 1];
  if (lastPassed) out.status['lastVerifiedTime'] = str(lastPassed.v, 'verifiedAt');
  const last = ended[ended.length - 1];
  if (last) {
    const tables = num(last.v, 'tables');
    const rows = num(last.v, 'rows');
    const reason = str(last.v, 'reason');
    out.status['lastVerification'] = {
      backup: name(last.r),
      result: str(last.v, 'result'),
      verifiedAt: str(last.v, 'verifiedAt'),
      ...(tables !== undefined ? { tables } : {}),
      ...(rows !== undefined ? { rows } : {}),
      ...(reason ? { reason } : {}),
    };
    if (str(last.v, 'result') === 'Passed') {
      out.condition = {
        ok: true,
        reason: 'Verified',
        message: `DatabaseBackup ${name(last.r)} was restored into a scratch server at ${str(last.v, 'verifiedAt')}: ${tables} tables, ${rows} rows, in ${num(last.v, 'durationSeconds') ?? 0} s`,
      };
    } else if (str(last.v, 'result') === 'Incomplete') {
      // No verdict on the backup: said, and the next drill is asked on the next slot; nothing is Degraded.
      out.condition = {
        ok: false,
        reason: 'VerificationIncomplete',
        message: `the restore drill of DatabaseBackup ${name(last.r)} stopped before it could judge it, at ${str(last.v, 'verifiedAt')}: ${reason ?? 'no reason given'}`,
      };
    } else {
      const message = `DatabaseBackup ${name(last.r)} failed its restore drill at ${str(last.v, 'verifiedAt')}: ${reason ?? 'no reason given'}`;
      out.condition = { ok: false, reason: 'VerificationFailed', message };
      out.warnings.push({ reason: 'VerificationFailed', message });
      // The newest good backup is the one a restore would use: not proven, the Database says so.
      const completed = records.filter((r) => r.phase === 'Completed');
      if (completed[completed.length - 1] === last.r) out.trouble = `the newest backup cannot be trusted: ${message}`;
    }
  }

  // A new drill: when the verify schedule has fired since the last one asked, of the newest Completed backup.
  if (!spec.backup.enabled || spec.backup.verify?.enabled === false || !drills || busy) return out;
  const running = records.some((r) => {
    const asked = out.requests.get(r.stamp);
    const v = drillOf(r);
    return (
      asked !== undefined && r.phase === 'Completed' && (str(v, 'request') !== asked || str(v, 'result') === 'Running')
    );
  });
  if (running) return out;
  const newest = records.filter((r) => r.phase === 'Completed').pop();
  const [due] = firedAtOrBefore(spec.backup.verify?.schedule ?? '0 5 * * 0', input.now, 1);
  if (!newest || !due) return out;
  const stamp = minuteStamp(due);
  if ([...out.requests.values()].includes(stamp)) return out;
  out.requests.set(newest.stamp, stamp);
  return out;
}
