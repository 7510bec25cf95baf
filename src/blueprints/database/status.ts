// What a Database tells its user: phase, endpoint, connection Secret, backup
// and AWS figures, and the one sentence naming what blocks readiness, in the
// words of the Database's placement where it has its own.
import type { ExternalFacts } from '../../facts.js';
import type { Verdict } from '../../kinds/index.js';
import { record, str, type Obj } from '../../kube.js';
import { firstBlocking, type Plan, type Summary } from '../blueprint.js';
import { appName, names, type StoreSource } from '../lifecycle/database.js';
import { CONNECTION_KEY, generationOfKey, type Instances } from '../lifecycle/instances.js';
import type { DatabaseCall, GrowthPlan, Health, Placement } from '../lifecycle/placements/placement.js';
import { pointOf } from '../lifecycle/source.js';
import type { StorePlan } from '../lifecycle/object-store.js';
import type { BackupPlan } from './backups.js';
import type { CutoverPlan } from './cutover.js';
import type { RestorePlan } from './restore.js';
import { pendingVersion, rolesStatus, storageStatus, versionStatus } from './running.js';
import type { UpgradeGate } from './upgrade.js';

/** What status reads of the call's resolution (database/index.ts resolves it). */
export interface Resolution {
  input: DatabaseCall;
  placement: Placement;
  backups?: BackupPlan;
  restore: RestorePlan;
  gate: UpgradeGate;
  growth?: GrowthPlan;
  instances: Instances;
  cutover: CutoverPlan;
  /** Who named the store backups go to, when there is one. */
  storeSource?: StoreSource;
  /** A store made for this Database (its managed resources), when one is asked for or was made. */
  store?: StorePlan;
  /** What the spec asks of the store that is not used, said. */
  storeWarnings?: Summary['warnings'];
}

/**
 * Where backups really go, for a place whose backups go to a store: the
 * store's address, the Secret's name (never what it holds) and who named it.
 * A DatabaseBackup of this Database reads it here (lifecycle/target.ts).
 */
function storeStatus({ input, placement, storeSource }: Resolution): Obj | undefined {
  const store = input.spec.backup.objectStore;
  if (!store || !placement.backup.needsObjectStore || !storeSource) return undefined;
  return {
    bucket: store.bucket,
    region: store.region,
    ...(store.endpoint ? { endpoint: store.endpoint } : {}),
    ...(store.prefix ? { prefix: store.prefix } : {}),
    credentialsSecretRef: { name: store.credentialsSecretRef.name },
    source: storeSource,
  };
}

type Phase = 'Provisioning' | 'Restoring' | 'Ready' | 'Updating' | 'Degraded';

/** Provisioning until first ready; after that, a change in flight is Updating and anything else Degraded. */
function phaseOf(ready: boolean, xr: Obj, blocking: Verdict | undefined): Phase {
  if (ready) return 'Ready';
  const previous = str(xr, 'status', 'phase');
  // Restoring from a backup at creation is still provisioning; a DatabaseRestore's cutover (status.restore) is not.
  const cutover = previous === 'Restoring' && record(xr, 'status', 'restore') !== undefined;
  if (previous === undefined || previous === 'Provisioning' || (previous === 'Restoring' && !cutover))
    return 'Provisioning';
  return blocking?.state === 'updating' ? 'Updating' : 'Degraded';
}

function endpointStatus(input: DatabaseCall, placement: Placement, live: number): Obj {
  const address = placement.endpoint(input, live);
  return address ? { host: address.host, port: address.port, endpoint: `${address.host}:${address.port}` } : {};
}

/**
 * The DatabaseRestore cutover as the user reads it: status.restore,
 * status.restores and status.kept, the sentence while it runs, and the
 * events when it fails or switches.
 */
function cutoverStatus(
  resolved: Resolution,
  plan: Plan,
  status: Obj,
  warnings: Summary['warnings'],
  notices: Summary['warnings'],
): { message: string; failed: boolean } | undefined {
  const { input, placement, cutover, instances } = resolved;
  // What the user must delete by hand: what was kept before, and what this call hands over.
  const kept = [...cutover.kept];
  for (const r of plan.releasing ?? []) {
    const g = generationOfKey(instances.base, r.key);
    if (g === undefined) continue;
    for (const k of placement.kept(input, g, 'the data before a restore')) if (!kept.includes(k)) kept.push(k);
  }
  if (kept.length > 0) status['kept'] = kept;
  if (cutover.restores.length > 0) status['restores'] = cutover.restores;
  const last = cutover.restores[cutover.restores.length - 1];
  // Each refusal is said (its DatabaseRestore says it too, naming the field); none holds up the others.
  const refusals = cutover.refused.map(({ restore, why }) => ({
    restore,
    message: `DatabaseRestore ${restore} cannot be done: ${why}`,
  }));
  for (const r of refusals) warnings.push({ reason: 'RestoreRefused', message: r.message });
  // The queue, in order: what each waiting DatabaseRestore waits behind (it reads status.restore.waiting).
  const waiting = cutover.queued.length > 0 ? { waiting: [...cutover.queued] } : {};
  const target = cutover.target;
  if (target) {
    const progress = cutover.progress!;
    const into = instances.name(target.generation);
    const head = `restoring ${appName(input.owner)} ${target.from} into ${into}`;
    const queued = cutover.queued.length > 0 ? `; waiting after it: ${cutover.queued.join(', ')}` : '';
    const message =
      progress.state === 'failed'
        ? `${head}: ${progress.detail}; ${instances.name(cutover.live)} still serves, unchanged. Delete DatabaseRestore ${target.restore} to hand ${into} over, then make another${queued}`
        : progress.state === 'ready'
          ? `${head}: switching the connection to ${into}${queued}`
          : `${head}: ${progress.detail}; ${instances.name(cutover.live)} serves until the switch${queued}`;
    status['restore'] = {
      name: target.restore,
      ...(target.uid ? { uid: target.uid } : {}),
      phase: progress.state === 'failed' ? 'Failed' : 'Restoring',
      instance: into,
      previousInstance: instances.name(cutover.live),
      ...(pointOf(target.source) ? { restorePoint: pointOf(target.source) } : {}),
      message,
      ...waiting,
    };
    if (progress.state === 'failed') warnings.push({ reason: 'RestoreFailed', message });
    return { message, failed: progress.state === 'failed' };
  }
  if (last) {
    const message = `switched to ${String(last['instance'])}, restored by DatabaseRestore ${String(last['name'])}${last['restorePoint'] ? ` (data from ${String(last['restorePoint'])})` : ''}${last['previousInstance'] ? `; ${String(last['previousInstance'])} is kept for you to delete (status.kept)` : ''}`;
    status['restore'] = { ...last, phase: 'Switched', message };
    if (cutover.justSwitched) notices.push({ reason: 'RestoreSwitched', message });
  }
  // Nothing being built: the oldest refusal is what the user reads here, unless requests wait for the Database.
  const refusal = refusals[0];
  if (refusal && cutover.queued.length === 0)
    status['restore'] = { name: refusal.restore, phase: 'Failed', message: refusal.message };
  if (cutover.queued.length > 0) {
    const message = cutover.lookingUp
      ? `looking up the DatabaseBackups that DatabaseRestore ${cutover.queued.join(', ')} name`
      : `DatabaseRestore ${cutover.queued.join(', ')} waits until the Database is ready`;
    status['restore'] = { name: cutover.queued[0], phase: 'Pending', message, ...waiting };
  }
  return undefined;
}

/** The summary of a call. */
export function databaseStatus(
  resolved: Resolution,
  facts: ExternalFacts | undefined,
  plan: Plan,
  verdicts: ReadonlyMap<string, Verdict>,
): Summary {
  const { input, placement, backups, restore, instances } = resolved;
  const spec = input.spec;
  const warnings: Summary['warnings'] = [];
  const notices: Summary['warnings'] = [];
  const status: Obj = { ...endpointStatus(input, placement, instances.live) };
  if (instances.generations.length > 0) status['instance'] = instances.name(instances.live);
  if (plan.resources.some((r) => r.key === CONNECTION_KEY)) status['connectionSecret'] = names.connection(input.owner);
  const store = storeStatus(resolved);
  const backup = {
    ...backups?.status,
    ...placement.backupStatus(input, instances.live, facts),
    ...(store ? { objectStore: store } : {}),
  };
  if (Object.keys(backup).length > 0) status['backup'] = backup;
  // What AWS said on this call, or the last known facts (with the time they were read) when it said nothing
  // or said it earlier than what status shows: replicas of the function each cache their own read, and
  // Crossplane's calls go to each in turn; the newest read wins, so status never moves back and forth.
  const said = facts?.aws;
  const known = record(input.xr, 'status', 'aws');
  const knownAt = str(known, 'observedAt');
  const aws =
    said?.instance && !(knownAt !== undefined && knownAt > said.observedAt)
      ? { ...said.instance, observedAt: said.observedAt }
      : known;
  // Where it lives, as the spec or the platform said: a DatabaseBackup's snapshot goes there too.
  const where =
    spec.placement === 'aws' && spec.aws
      ? { region: spec.aws.region, providerConfigName: spec.aws.providerConfigName }
      : undefined;
  if (aws || where) status['aws'] = { ...aws, ...where };
  if (backups) warnings.push(...backups.warnings);
  warnings.push(...(resolved.storeWarnings ?? []));
  const kept = instances.generations.length > 0 ? '; status.aws keeps the facts last read' : '';
  for (const message of said?.warnings ?? []) warnings.push({ reason: 'AwsUnavailable', message: `${message}${kept}` });

  let blocker: string | undefined;
  // The verdict behind the blocker, when a composed resource is what blocks.
  let blocking: Verdict | undefined;
  let reason = 'Provisioning';
  // What must be there first (an operator) says more than anything composed.
  const prerequisite = placement.prerequisite(input);
  if (prerequisite) {
    blocker = prerequisite.blocker;
    if (prerequisite.reason) {
      reason = prerequisite.reason;
      warnings.push({ reason, message: blocker });
    }
  }
  const restoring = restore.state !== 'none' && restore.state !== 'done';
  if (restore.status) Object.assign(status, restore.status);
  const cutover = cutoverStatus(resolved, plan, status, warnings, notices);
  // A restore in progress says more than the resource it waits for.
  if (blocker === undefined && restoring) {
    blocker = restore.message;
    reason = restore.state === 'failed' ? 'RestoreFailed' : 'Restoring';
    if (restore.state === 'failed') warnings.push({ reason, message: restore.message! });
  }
  // The live instance, in the place's own words where it has them.
  if (blocker === undefined) {
    const own = placement.instanceBlocker(input, verdicts, instances.live);
    blocker = own?.message;
    blocking = own?.verdict;
  }
  if (blocker === undefined) {
    const first = firstBlocking(plan, verdicts);
    blocker = first?.message;
    blocking = first?.verdict;
  }
  if (blocker === undefined && !status['connectionSecret'])
    blocker = placement.connectionPending(input, instances.live);
  // Backup trouble (nowhere to put them, overdue) never holds back a database that serves: it is Ready, and the
  // trouble is BackupHealthy False, a warning, phase Degraded and the sentence. Held back, an application team
  // waited on a Database that took connections, and anything that waits for Ready (a Helm hook, a dependsOn)
  // waited with it, for something only the platform team could fix.
  const backupTrouble = blocker === undefined ? backups?.trouble : undefined;
  const { gate, growth } = resolved;
  const roles = rolesStatus(
    input,
    placement,
    status['instance'] as string | undefined,
    status['endpoint'] as string | undefined,
    placement.readEndpoint(input, instances.live),
  );
  Object.assign(status, roles.status);
  if (roles.failover) notices.push({ reason: 'Failover', message: roles.failover });
  const version = versionStatus(input, placement, facts, gate.requested);
  status['version'] = gate.blocked ? { ...version, upgradeBlocked: gate.blocked } : version;
  warnings.push(...gate.warnings);
  status['storage'] = storageStatus(input, placement, growth);
  // What deleting it keeps, said while it lives (nothing runs once it is deleted), and said once as an event.
  const deletion = placement.deletion(input, instances.live, backups?.newest);
  status['deletion'] = { policy: spec.deletionPolicy, ...deletion };
  if (str(input.xr, 'status', 'deletion', 'keeps') !== deletion.keeps) {
    const now = deletion.lastBackup ? ` (now DatabaseBackup ${deletion.lastBackup.name})` : '';
    notices.push({ reason: 'DeletionKeeps', message: `${deletion.keeps}${now}` });
  }
  if (growth) warnings.push(...growth.warnings);
  if (growth?.notices) notices.push(...growth.notices);
  const upgrade = gate.waiting ?? pendingVersion(input, placement, version);
  const ready = blocker === undefined;
  // A cutover in flight: the live instance serves (ready), and the sentence tells the restore's story;
  // one that failed leaves the live instance as it was, and says so.
  // A volume growing: the database serves meanwhile, Updating, and the sentence says how far the volume is.
  const resizing = ready && !cutover ? growth?.updating : undefined;
  const phase =
    restoring || (ready && cutover && !cutover.failed)
      ? 'Restoring'
      : resizing
        ? 'Updating'
        : backupTrouble
          ? 'Degraded'
          : phaseOf(ready, input.xr, blocking);
  status['phase'] = phase;
  const conditions = [
    { type: 'BackupHealthy', ...backupHealth(resolved) },
    ...(growth?.condition ? [{ type: 'StorageResized', ...growth.condition }] : []),
    ...(backups?.verified ? [{ type: 'BackupVerified', ...backups.verified }] : []),
  ];
  if (ready) {
    return {
      ready,
      reason: cutover
        ? cutover.failed
          ? 'RestoreFailed'
          : 'Restoring'
        : resizing
          ? 'Resizing'
          : backupTrouble
            ? (backups!.troubleReason ?? backups!.health.reason)
            : 'Available',
      message:
        cutover?.message ??
        resizing ??
        `${backupTrouble ? `${backupTrouble}; ` : ''}${spec.engine} ${String(version['running'] ?? spec.version)} accepts connections at ${String(status['endpoint'])}${upgrade ? `; ${upgrade}` : ''}`,
      status,
      warnings,
      notices,
      conditions,
    };
  }
  if (reason === 'Provisioning') reason = phase === 'Provisioning' ? 'Provisioning' : phase;
  return { ready, reason, message: blocker!, status, warnings, notices, conditions };
}

/** The BackupHealthy condition: from the Database's DatabaseBackups, or from the backups the place keeps itself. */
function backupHealth({ input, placement, backups }: Resolution): Health {
  // Planned exactly where the place keeps none of its own (index.ts).
  return backups?.health ?? placement.automatedBackups!.health(input);
}
