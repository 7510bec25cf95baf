// A Database's backups in the cluster: one DatabaseBackup per due slot of
// spec.backup.schedule (its name fixed by the slot, so every reconcile of the
// slot composes the same one), retention, and how backups are doing.
//
// The schedule is the function's, not a CronJob's: the Database composes the
// DatabaseBackup of the newest slot that has passed, once the database has
// served; a slot that passed with no call is not taken late but reported.
// Retention lets a backup older than retentionDays go, the stored object
// first (a removal Job) and the record after, never the newest Completed one
// and never a pinned one: the one exception the nothing-lost guard makes.
import { minuteStamp } from '../../clock.js';
import { jobOf } from '../../kinds/batch.js';
import { type DatabaseBackup, type DatabaseBackupView, databaseBackupOf } from '../../kinds/platform.js';
import { record, str, type Obj } from '../../kube.js';
import { boundedLabel } from '../../names.js';
import { firedAtOrBefore, nextFiring } from '../../spec/cron.js';
import type { Desired, Requirement } from '../blueprint.js';
import { storePath } from '../lifecycle/commands.js';
import {
  appName,
  baseName,
  type CredentialKeys,
  type DatabaseInput,
  type ResolvedSpec,
  type StoreSource,
  USER_CREDENTIAL_KEYS,
} from '../lifecycle/database.js';
import { removeJob } from '../lifecycle/jobs.js';
import type { Health } from '../lifecycle/placements/placement.js';
import { planDrills } from './verification.js';

/** Composition-resource keys: `scheduled-backup-<slot>` and its removal `backup-removal-<slot>`. */
export const SCHEDULED_PREFIX = 'scheduled-backup-';
export const REMOVAL_PREFIX = 'backup-removal-';
export const SLOT_LABEL = 'function-platform.dev/backup-slot';
export const DATABASE_LABEL = 'function-platform.dev/database';

const DAY_MS = 86_400_000;

function slotTime(stamp: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(stamp);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!)) : undefined;
}

/** The DatabaseBackup of a slot: at most 63 characters, as its dump Job's name derives from it. */
export function scheduledBackupName(input: Pick<DatabaseInput, 'owner'>, stamp: string): string {
  return boundedLabel(63, baseName(input.owner), stamp);
}

/** What retention reads of a DatabaseBackup. */
function backupRecord(b: DatabaseBackupView) {
  return { phase: b.phase, completedAt: b.completedAt, location: b.location, method: b.method, pinned: b.pinned };
}

/** A scheduled backup the Database composed, as observed. */
interface Taken {
  key: string;
  stamp: string;
  slot: Date;
  object: Obj;
  phase: string | undefined;
  completedAt: string | undefined;
  location: string | undefined;
  method: string | undefined;
  pinned: boolean;
}

function taken(input: DatabaseInput): Taken[] {
  const out: Taken[] = [];
  for (const [key, object] of input.observed) {
    if (!key.startsWith(SCHEDULED_PREFIX)) continue;
    const stamp = key.slice(SCHEDULED_PREFIX.length);
    const slot = slotTime(stamp);
    if (!slot) continue;
    out.push({
      key,
      stamp,
      slot,
      object,
      ...backupRecord(databaseBackupOf(object)!),
    });
  }
  return out.sort((a, b) => a.slot.getTime() - b.slot.getTime());
}

function backupObject(input: DatabaseInput, stamp: string, requested?: string): DatabaseBackup {
  const { owner } = input;
  return {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: {
      name: scheduledBackupName(input, stamp),
      namespace: owner.namespace,
      labels: { [DATABASE_LABEL]: appName(owner), [SLOT_LABEL]: stamp },
    },
    // No `pinned`: a user may pin a scheduled backup, and the function does not own that field.
    spec: {
      databaseRef: { name: appName(owner) },
      // A restore drill asked of it (verification.ts): kept as asked, so nothing is asked twice.
      ...(requested ? { verification: { requested } } : {}),
    },
  };
}

/** Required resource: the object store's credentials Secret, to say when it cannot work (never to echo it). */
export const STORE_CREDENTIALS = 'backup-store-credentials';
/** Values that stand where a credential should be: the examples' `replace-me` and its kind. */
const PLACEHOLDER = /^(?:|replace[-_ ]?me|change[-_ ]?me|todo|placeholder|example|x{3,}|\*+|<[^>]*>)$/i;

/**
 * What is wrong with the store's credentials Secret as read, if anything:
 * missing, a key missing, or a value that is a placeholder. Names the Secret
 * and the keys, never a value.
 */
export function credentialsProblem(
  secret: Obj | undefined,
  name: string,
  namespace: string,
  field = 'spec.backup.objectStore.credentialsSecretRef',
  keys: CredentialKeys = USER_CREDENTIAL_KEYS,
): string | undefined {
  // The keys a dump and CloudNativePG's plugin read from it.
  const CREDENTIAL_KEYS = [keys.accessKeyId, keys.secretAccessKey];
  const where = `Secret ${name} (${field})`;
  if (!secret) return `${where} does not exist in namespace ${namespace}: backups cannot write to the object store`;
  const data = (record(secret, 'data') ?? {}) as Record<string, unknown>;
  const value = (key: string): string | undefined =>
    typeof data[key] === 'string'
      ? Buffer.from(data[key] as string, 'base64')
          .toString('utf8')
          .trim()
      : undefined;
  const missing = CREDENTIAL_KEYS.filter((k) => value(k) === undefined);
  if (missing.length > 0) return `${where} has no ${missing.join(' or ')}: backups cannot write to the object store`;
  const placeholders = CREDENTIAL_KEYS.filter((k) => PLACEHOLDER.test(value(k) ?? ''));
  if (placeholders.length > 0)
    return `${where} holds a placeholder, not a credential, in ${placeholders.join(' and ')}: the object store will refuse every backup; put the store's own keys there`;
  return undefined;
}

/** What the Database's backups compose and say on this call. */
export interface BackupPlan {
  resources: Desired[];
  /** The credentials Secret, read to say when it cannot work. */
  requirements: Record<string, Requirement>;
  retiring: Array<{ key: string; why: string }>;
  /** status.backup */
  status: Obj;
  /** The newest Completed backup: retention never removes it, and it stays in the store when the Database goes. */
  newest?: { name: string; location?: string; completedAt?: string };
  /** The BackupHealthy condition. */
  health: { ok: boolean; reason: string; message: string };
  /** Backup trouble to say in the Database's sentence (phase Degraded); it never holds back readiness. */
  trouble?: string;
  /** The reason that trouble is given under, when it is not BackupHealthy's (a failed restore drill). */
  troubleReason?: string;
  /** The BackupVerified condition, once a restore drill has ended. */
  verified?: Health;
  warnings: Array<{ reason: string; message: string }>;
}

/** Where the store's Secret was named, as the user reads it: the Database's spec, or the platform's Input. */
const CREDENTIALS_FIELD: Record<StoreSource, string> = {
  spec: 'spec.backup.objectStore.credentialsSecretRef',
  platform:
    "the platform's default store, defaults.database.backup.objectStore.credentialsSecretRef in the Composition",
  provisioned: "the connection Secret of the access key made for this Database's backups",
};

/**
 * `waiting`: the store made for this Database is not there yet (what it
 * waits for, in words): no backup is taken, and BackupHealthy says so.
 */
export function planBackups(
  input: DatabaseInput,
  spec: ResolvedSpec,
  storeSource: StoreSource = 'spec',
  waiting?: string,
  drilling: { drills: boolean; busy?: string } = { drills: true },
): BackupPlan {
  const records = taken(input);
  const drills = planDrills(input, spec, records, drilling.drills, drilling.busy);
  const out = scheduleAndRetain(input, spec, storeSource, waiting, records, drills.requests);
  Object.assign(out.status, drills.status);
  out.warnings.push(...drills.warnings);
  if (drills.condition) out.verified = drills.condition;
  if (!out.trouble && drills.trouble) {
    out.trouble = drills.trouble;
    out.troubleReason = 'VerificationFailed';
  }
  return out;
}

/** The backups of the schedule's slots and retention over them, `requests` the drills asked of each. */
function scheduleAndRetain(
  input: DatabaseInput,
  spec: ResolvedSpec,
  storeSource: StoreSource,
  waiting: string | undefined,
  records: Taken[],
  requests: ReadonlyMap<string, string>,
): BackupPlan {
  const { now, owner } = input;
  const store = spec.backup.objectStore;
  const out: BackupPlan = { resources: [], requirements: {}, retiring: [], status: {}, health: HEALTHY, warnings: [] };

  // Retention, over what was taken. Stay: the newest Completed one, pinned ones, the newest of all (its
  // slot says what was taken: dropped, the slot would be taken again), and a dump there is no store to remove from.
  const completed = records.filter((r) => r.phase === 'Completed');
  const keep = completed[completed.length - 1];
  const newestTaken = records[records.length - 1];
  const cutoff = now.getTime() - spec.backup.retentionDays * DAY_MS;
  for (const r of records) {
    const age = Date.parse(r.completedAt ?? '') || r.slot.getTime();
    const isDump = r.phase === 'Completed' && r.method === 'dump' && r.location?.startsWith('s3://') === true;
    const expired =
      r !== keep &&
      r !== newestTaken &&
      !r.pinned &&
      !(isDump && !store) &&
      age < cutoff &&
      (r.phase === 'Completed' || r.phase === 'Failed');
    if (!expired) {
      out.resources.push({
        key: r.key,
        object: backupObject(input, r.stamp, requests.get(r.stamp)),
        independent: true,
      });
      continue;
    }
    const removalKey = `${REMOVAL_PREFIX}${r.stamp}`;
    // A dump is one object, removed here; CloudNativePG's ObjectStore prunes its own by the same retention.
    const stored = isDump && store;
    const removal = input.observed.get(removalKey);
    const removing = jobOf(removal);
    if (stored && removing?.failed)
      out.warnings.push({
        reason: 'BackupRemovalFailed',
        message: `retention could not remove ${r.location}: ${removing.failed.message ?? 'the removal Job failed'}; the record stays until it is removed`,
      });
    if (stored && !removing?.complete) {
      // The stored object goes first; the record stays until its removal is seen done.
      out.resources.push({
        key: r.key,
        object: backupObject(input, r.stamp, requests.get(r.stamp)),
        independent: true,
      });
      out.resources.push({
        key: removalKey,
        independent: true,
        object: removeJob(
          boundedLabel(63, scheduledBackupName(input, r.stamp), 'rm'),
          owner.namespace,
          scheduledBackupName(input, r.stamp),
          store,
          r.location!,
        ),
      });
      continue;
    }
    out.retiring.push({
      key: r.key,
      why: `older than spec.backup.retentionDays (${spec.backup.retentionDays})${stored ? '; its stored object is removed' : ''}`,
    });
  }

  // From Completed records only (the newest is never pruned): not from an earlier version's CronJob.
  const lastSuccess = keep?.completedAt;
  if (lastSuccess) out.status['lastSuccessfulTime'] = lastSuccess;
  if (keep)
    out.newest = {
      name: databaseBackupOf(keep.object)?.name ?? scheduledBackupName(input, keep.stamp),
      ...(keep.location ? { location: keep.location } : {}),
      ...(keep.completedAt ? { completedAt: keep.completedAt } : {}),
    };
  // Only a place that holds a backup is named.
  if (keep && store) out.status['location'] = storePath(store, appName(owner));
  const failedAfter = records.filter((r) => r.phase === 'Failed' && (!keep || r.slot.getTime() > keep.slot.getTime()));
  const lastFailed = failedAfter[failedAfter.length - 1];
  if (lastFailed) {
    const seen = databaseBackupOf(lastFailed.object);
    const why = seen?.failureReason ?? seen?.message;
    const name = seen?.name ?? scheduledBackupName(input, lastFailed.stamp);
    out.status['lastFailure'] = `${name}: ${why ?? 'failed'}`;
    // When it failed (its slot when it says no time): the function's metrics read it (src/metrics.ts).
    out.status['lastFailedTime'] = lastFailed.completedAt ?? lastFailed.slot.toISOString();
    out.warnings.push({
      reason: 'BackupFailed',
      message: `DatabaseBackup ${name} failed: ${why ?? 'no reason given'}`,
    });
  }

  if (!spec.backup.enabled) {
    out.health = {
      ok: false,
      reason: 'BackupsDisabled',
      message: 'spec.backup.enabled is false: no backups are taken',
    };
    return out;
  }
  if (!store && waiting) {
    // Being made: not trouble (the database serves, phase stays), but no backup has anywhere to go yet.
    out.health = { ok: false, reason: 'ObjectStoreProvisioning', message: waiting };
    return out;
  }
  if (!store) {
    out.trouble =
      'backups have nowhere to go: set spec.backup.objectStore (bucket, region, credentialsSecretRef) to an S3 or S3-compatible store off this cluster (or ask the platform team for a default store in the Composition), or set spec.backup.enabled: false';
    out.health = { ok: false, reason: 'NoObjectStore', message: out.trouble };
    out.warnings.push({ reason: 'NoObjectStore', message: out.trouble });
    return out;
  }
  const next = nextFiring(spec.backup.schedule, now);
  if (next) out.status['nextScheduledTime'] = next.toISOString();
  // The credentials: read (the answer stays in the function's memory of this call only) to say when they cannot
  // work, before a backup fails on them.
  const secretName = store.credentialsSecretRef.name;
  out.requirements[STORE_CREDENTIALS] = {
    apiVersion: 'v1',
    kind: 'Secret',
    matchName: secretName,
    namespace: owner.namespace,
  };
  const answer = input.required.get(STORE_CREDENTIALS);
  const credentials =
    answer === undefined
      ? undefined
      : credentialsProblem(
          answer[0],
          secretName,
          owner.namespace,
          CREDENTIALS_FIELD[storeSource],
          store.credentialKeys ?? USER_CREDENTIAL_KEYS,
        );
  if (credentials) out.warnings.push({ reason: 'BackupCredentials', message: credentials });

  // The slot now due, and the one before it (one schedule period back).
  const [due, before] = firedAtOrBefore(spec.backup.schedule, now, 2);
  const created = Date.parse(str(input.xr, 'metadata', 'creationTimestamp') ?? '');
  const phase = str(input.xr, 'status', 'phase');
  const served = phase !== undefined && phase !== 'Provisioning' && phase !== 'Restoring';
  if (due && served && !(due.getTime() < created) && !(newestTaken && newestTaken.slot >= due)) {
    const stamp = minuteStamp(due);
    out.resources.push({
      key: `${SCHEDULED_PREFIX}${stamp}`,
      object: backupObject(input, stamp, requests.get(stamp)),
      independent: true,
    });
    if (newestTaken && before && newestTaken.slot < before) {
      out.status['missedSlot'] = before.toISOString();
      out.warnings.push({
        reason: 'BackupMissed',
        message: `no backup was taken for the slot at ${before.toISOString()} (nothing reconciled this Database then); missed slots are not taken late, the one at ${due.toISOString()} is being taken`,
      });
    }
  }

  // Overdue: two slots have come since the last success (or since the first backup was taken, when none has
  // succeeded yet), whatever the gaps between slots (weekdays only, twice a day).
  const since = Date.parse(lastSuccess ?? '') || records[0]?.slot.getTime();
  const first = since !== undefined ? nextFiring(spec.backup.schedule, new Date(since)) : undefined;
  const overdueAt = first ? nextFiring(spec.backup.schedule, first)?.getTime() : undefined;
  if (overdueAt !== undefined && now.getTime() >= overdueAt) {
    const message = `${lastSuccess ? `the last successful backup finished at ${lastSuccess}` : 'no backup has succeeded yet'}: overdue since ${new Date(overdueAt).toISOString()} (two scheduled backups since)${out.status['lastFailure'] ? `; last failure ${String(out.status['lastFailure'])}` : ''}`;
    out.health = { ok: false, reason: 'BackupOverdue', message };
    out.trouble = `backups are overdue: ${message}`;
    out.warnings.push({ reason: 'BackupOverdue', message: out.trouble });
    return out;
  }
  if (lastFailed) {
    out.health = {
      ok: false,
      reason: 'BackupFailed',
      message: `last backup failed: ${String(out.status['lastFailure'])}`,
    };
    return out;
  }
  if (credentials) {
    out.health = { ok: false, reason: 'BackupCredentials', message: credentials };
    return out;
  }
  out.health = lastSuccess
    ? { ok: true, reason: 'BackupsHealthy', message: `the last backup finished at ${lastSuccess}` }
    : {
        ok: true,
        reason: 'NoBackupYet',
        message: next ? `the first backup is due at ${next.toISOString()}` : 'no backup taken yet',
      };
  return out;
}

const HEALTHY = { ok: true, reason: 'BackupsHealthy', message: '' };
