// A major version upgrade behind a backup. When the spec asks a Database for
// a newer major version than its instance is set to, where its placement
// upgrades in place (RDS, CloudNativePG, MySQL in a StatefulSet), the
// Database first composes a pinned DatabaseBackup `<db>-pre-<version>` and
// changes the version only once that backup is Completed: whatever the order
// in which things are observed, the version never moves before there is a
// backup of the data as it was. The backup stays composed for good (it holds
// a backup; retention never prunes a pinned one). Where the placement cannot
// upgrade in place (PostgreSQL in a StatefulSet), that is refused (rules.ts),
// saying how instead.
import { type DatabaseBackup, databaseBackupOf } from '../../kinds/platform.js';
import { boundedLabel } from '../../names.js';
import type { Desired } from '../blueprint.js';
import { appName, baseName, compareVersions, type DatabaseInput, type ResolvedSpec } from '../lifecycle/database.js';
import type { Placement } from '../lifecycle/placements/placement.js';
import { DATABASE_LABEL } from './backups.js';
import { runningVersion } from './observed.js';

/** Composition-resource keys of the pre-upgrade backups: `pre-upgrade-<version>`. */
export const PRE_UPGRADE_PREFIX = 'pre-upgrade-';

export interface UpgradeGate {
  /** The version asked for. */
  requested: string;
  /** The version the instance is composed with on this call: the one it is set to, until the gate opens. */
  effective: string;
  /** The pre-upgrade backups: the one this upgrade waits for, and every earlier one (they hold backups). */
  backups: Desired[];
  /** What the user reads while the upgrade waits for its backup. */
  waiting?: string;
  /** Set when the upgrade cannot go on by itself (its backup failed): status.version.upgradeBlocked. */
  blocked?: string;
  warnings: Array<{ reason: string; message: string }>;
}

const keyFor = (version: string) => `${PRE_UPGRADE_PREFIX}${version.replace(/\./g, '-')}`;

/** The pre-upgrade backup's name: `<db>-pre-<version>`, a DNS label. */
export function preUpgradeName(input: Pick<DatabaseInput, 'owner'>, version: string): string {
  return boundedLabel(63, baseName(input.owner), `pre-${version.replace(/\./g, '-')}`);
}

function backupObject(input: DatabaseInput, version: string): DatabaseBackup {
  return {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: {
      name: preUpgradeName(input, version),
      namespace: input.owner.namespace,
      labels: { [DATABASE_LABEL]: appName(input.owner) },
    },
    // Pinned: retention never removes the backup an upgrade was made behind.
    spec: { databaseRef: { name: appName(input.owner) }, pinned: true },
  };
}

/** Where an upgrade stands: the version to compose now, and the backups it needs. */
export function planUpgradeGate(input: DatabaseInput, spec: ResolvedSpec, placement: Placement): UpgradeGate {
  const gate: UpgradeGate = { requested: spec.version, effective: spec.version, backups: [], warnings: [] };
  // Every pre-upgrade backup taken stays, as it was composed.
  for (const key of input.observed.keys())
    if (key.startsWith(PRE_UPGRADE_PREFIX)) {
      const version = key.slice(PRE_UPGRADE_PREFIX.length).replace(/-/g, '.');
      gate.backups.push({ key, object: backupObject(input, version), independent: true });
    }
  // Where a major upgrade cannot be made in place, it is refused (rules.ts), not gated.
  if (!placement.upgradesInPlace(spec)) return gate;
  const running = runningVersion(spec.engine, input);
  if (running === undefined || compareVersions(spec.version, running) <= 0) return gate;
  const key = keyFor(spec.version);
  if (!gate.backups.some((b) => b.key === key))
    gate.backups.push({ key, object: backupObject(input, spec.version), independent: true });
  const backup = input.observed.get(key);
  const phase = databaseBackupOf(backup)?.phase;
  if (phase === 'Completed') return gate;
  // Not yet: the instance stays on the version it is set to.
  gate.effective = running;
  const name = preUpgradeName(input, spec.version);
  const upgrade = `the upgrade of ${spec.engine} ${running} to ${spec.version}`;
  if (phase === 'Failed') {
    const why = databaseBackupOf(backup)?.failureReason ?? 'no reason given';
    gate.waiting = `${upgrade} waits: its backup ${name} failed (${why}); delete DatabaseBackup ${name} to take it again, or set spec.version back to ${running}`;
    gate.blocked = gate.waiting;
    gate.warnings.push({ reason: 'UpgradeBlocked', message: gate.waiting });
  } else gate.waiting = `${upgrade} waits for its backup ${name} (${phase ?? 'Pending'})`;
  return gate;
}
