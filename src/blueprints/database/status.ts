// What a Database tells its user: phase, endpoint, connection Secret, backup
// and AWS figures, and the one sentence naming what blocks readiness.
import type { ExternalFacts } from '../../facts.js';
import type { Verdict } from '../../kinds/index.js';
import { condition, record, str, type Obj } from '../../kube.js';
import { judge } from '../../kinds/index.js';
import { firstBlocking, type Plan, type Summary } from '../blueprint.js';
import { AWS_KEYS, awsBackupStatus, instanceAddress, rdsIdentifier } from './aws.js';
import { clusterHost, CLUSTER_KEYS, cnpgOperator, cutoverProgress, readOnlyHost, keptOf, usesCnpg } from './cluster.js';
import { type DatabaseInput, names, type ResolvedSpec } from './common.js';
import { ENGINES } from './engine.js';
import type { BackupPlan } from './backups.js';
import type { ResolvedDatabase } from './index.js';
import { generationOfKey, keyOf, liveInstance } from './instances.js';
import { keptRds, rdsTargetReady, replicaAddress } from './aws.js';
import { pointOf } from './restore-source.js';
import { pendingVersion, rolesStatus, storageStatus, versionStatus } from './running.js';

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

function endpointStatus(input: DatabaseInput, spec: ResolvedSpec, live: number): Obj {
  if (spec.placement === 'aws') {
    const address = instanceAddress(input, live);
    return address ? { host: address.host, port: address.port, endpoint: `${address.host}:${address.port}` } : {};
  }
  const host = clusterHost(input, spec, live);
  const port = ENGINES[spec.engine].port;
  return { host, port, endpoint: `${host}:${port}` };
}

/** What the user reads while the RDS instance is not ready: AWS's own word for its state. */
function rdsBlocker(input: DatabaseInput, verdicts: ReadonlyMap<string, Verdict>, live: number): string | undefined {
  const verdict = verdicts.get(keyOf(AWS_KEYS.instance, live));
  if (!verdict || verdict.ready) return undefined;
  const inst = input.observed.get(keyOf(AWS_KEYS.instance, live));
  if (!inst) return `RDS instance ${rdsIdentifier(input, live)}: not created yet`;
  const state = str(inst, 'status', 'atProvider', 'status');
  const created = str(inst, 'status', 'atProvider', 'address') !== undefined;
  const said = condition(inst, 'Ready')?.message;
  const aws = state ? ` (AWS status: ${state})` : '';
  return `RDS instance ${rdsIdentifier(input, live)}: ${created ? 'not ready' : 'being created'}${aws}${said ? `: ${said}` : ''}`;
}

/** CloudNativePG's restorable window: from the ObjectStore's first recoverability point of the live cluster to now. */
export function cnpgWindow(input: DatabaseInput, spec: ResolvedSpec, liveName: string): Obj {
  if (!usesCnpg(spec)) return {};
  const store = input.observed.get(CLUSTER_KEYS.objectStore);
  const first = str(store, 'status', 'serverRecoveryWindow', liveName, 'firstRecoverabilityPoint');
  return first ? { earliestRestorableTime: first } : {};
}

/**
 * The DatabaseRestore cutover as the user reads it: status.restore,
 * status.restores and status.kept, the sentence while it runs, and the
 * events when it fails or switches.
 */
function cutoverStatus(
  resolved: ResolvedDatabase,
  plan: Plan,
  status: Obj,
  warnings: Summary['warnings'],
  notices: Summary['warnings'],
): { message: string; failed: boolean } | undefined {
  const { input, cutover, instances } = resolved;
  const spec = input.spec;
  // What the user must delete by hand: what was kept before, and what this call hands over.
  const kept = [...cutover.kept];
  for (const r of plan.releasing ?? []) {
    const g = generationOfKey(instances.base, r.key);
    if (g === undefined) continue;
    const said =
      spec.placement === 'aws'
        ? [keptRds(instances.name(g), 'the data before a restore')]
        : keptOf(input, spec, g, 'the data before a restore');
    for (const k of said) if (!kept.includes(k)) kept.push(k);
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
    const progress =
      spec.placement === 'aws'
        ? rdsTargetReady(input, target)
          ? { state: 'ready' as const, detail: `RDS instance ${instances.name(target.generation)} is available` }
          : {
              state: 'restoring' as const,
              detail: `RDS instance ${instances.name(target.generation)}: ${judgeDetail(input, instances.base, target.generation)}`,
            }
        : cutoverProgress(input, spec, target);
    const into = instances.name(target.generation);
    const head = `restoring ${input.owner.name} ${target.from} into ${into}`;
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

function judgeDetail(input: DatabaseInput, base: string, generation: number): string {
  const obj = input.observed.get(keyOf(base, generation));
  return obj ? judge(obj).detail : 'being created';
}

/** The summary of a call. */
export function databaseStatus(
  resolved: ResolvedDatabase,
  facts: ExternalFacts | undefined,
  plan: Plan,
  verdicts: ReadonlyMap<string, Verdict>,
): Summary {
  const { input, backups, restore, instances } = resolved;
  const spec = input.spec;
  const warnings: Summary['warnings'] = [];
  const notices: Summary['warnings'] = [];
  const status: Obj = { ...endpointStatus(input, spec, instances.live) };
  if (instances.generations.length > 0) status['instance'] = instances.name(instances.live);
  if (plan.resources.some((r) => r.key === CLUSTER_KEYS.connection))
    status['connectionSecret'] = names.connection(input.owner);
  const backup = backups
    ? { ...backups.status, ...cnpgWindow(input, spec, instances.name(instances.live)) }
    : awsBackupStatus(input, spec, facts);
  if (backup && Object.keys(backup).length > 0) status['backup'] = backup;
  // What AWS said on this call, or the last known facts (with the time they were read) when it said nothing.
  const said = facts?.aws;
  const aws = said?.instance ? { ...said.instance, observedAt: said.observedAt } : record(input.xr, 'status', 'aws');
  if (aws) status['aws'] = aws;
  if (backups) warnings.push(...backups.warnings);
  const kept = instances.generations.length > 0 ? '; status.aws keeps the facts last read' : '';
  for (const message of said?.warnings ?? []) warnings.push({ reason: 'AwsUnavailable', message: `${message}${kept}` });

  let blocker: string | undefined;
  // The verdict behind the blocker, when a composed resource is what blocks.
  let blocking: Verdict | undefined;
  let reason = 'Provisioning';
  if (spec.placement === 'cluster' && usesCnpg(spec)) {
    const operator = cnpgOperator(input);
    if (operator === 'missing') {
      blocker =
        'CloudNativePG is not installed in this cluster: highAvailability needs its operator (clusters.postgresql.cnpg.io); install it, or set highAvailability: false';
      reason = 'OperatorMissing';
      warnings.push({ reason, message: blocker });
    } else if (operator === 'unknown') {
      blocker = 'checking whether the CloudNativePG operator is installed';
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
  if (blocker === undefined && spec.placement === 'aws') {
    blocker = rdsBlocker(input, verdicts, instances.live);
    if (blocker !== undefined) blocking = verdicts.get(keyOf(AWS_KEYS.instance, instances.live));
  }
  if (blocker === undefined) {
    const first = firstBlocking(plan, verdicts);
    blocker = first?.message;
    blocking = first?.verdict;
  }
  // Only backups hold it back: the database itself serves (its workload ready, its Secret there). Said so, and
  // Degraded, not Provisioning: a two-line Database with nowhere to put backups read as still being created.
  let servesWithoutBackups = false;
  if (blocker === undefined && backups?.blocker) {
    blocker = `${backups.blocker}; ${spec.engine} ${String(versionStatus(input, spec, facts, resolved.gate.requested)['running'] ?? spec.version)} accepts connections at ${String(status['endpoint'])} meanwhile`;
    reason = backups.health.reason;
    servesWithoutBackups = true;
  }
  if (blocker === undefined && spec.placement === 'aws' && !status['connectionSecret']) {
    blocker = `waiting for provider-upjet-aws to write the connection Secret of RDS instance ${rdsIdentifier(input, instances.live)}`;
  }
  const { gate, growth } = resolved;
  const ro =
    spec.placement === 'aws'
      ? replicaAddress(input, spec, instances.live)
      : usesCnpg(spec) && spec.replicas > 0
        ? { host: readOnlyHost(input, instances.live), port: ENGINES[spec.engine].port }
        : undefined;
  const roles = rolesStatus(
    input,
    spec,
    status['instance'] as string | undefined,
    status['endpoint'] as string | undefined,
    ro,
  );
  Object.assign(status, roles.status);
  if (roles.failover) notices.push({ reason: 'Failover', message: roles.failover });
  const version = versionStatus(input, spec, facts, gate.requested);
  status['version'] = version;
  warnings.push(...gate.warnings);
  status['storage'] = storageStatus(input, spec, growth?.claim, growth?.capacityGB);
  if (growth) warnings.push(...growth.warnings);
  const upgrade = gate.waiting ?? pendingVersion(input, spec, version);
  if (spec.maxStorageGB !== undefined && spec.placement !== 'aws')
    warnings.push({
      reason: 'FieldIgnored',
      message: `spec.maxStorageGB is for placement aws (RDS storage autoscaling); in the cluster it changes nothing: grow spec.storageGB`,
    });
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
        : servesWithoutBackups
          ? 'Degraded'
          : phaseOf(ready, input.xr, blocking);
  status['phase'] = phase;
  const conditions = [
    { type: 'BackupHealthy', ...backupHealth(input, spec, backups) },
    ...(growth?.condition ? [{ type: 'StorageResized', ...growth.condition }] : []),
  ];
  if (ready) {
    return {
      ready,
      reason: cutover ? (cutover.failed ? 'RestoreFailed' : 'Restoring') : resizing ? 'Resizing' : 'Available',
      message:
        cutover?.message ??
        resizing ??
        `${spec.engine} ${String(version['running'] ?? spec.version)} accepts connections at ${String(status['endpoint'])}${upgrade ? `; ${upgrade}` : ''}`,
      status,
      warnings,
      notices,
      conditions,
    };
  }
  if (reason === 'Provisioning') reason = phase === 'Provisioning' ? 'Provisioning' : phase;
  if (phase === 'Restoring' && reason === 'Restoring') reason = 'Restoring';
  return { ready, reason, message: blocker!, status, warnings, notices, conditions };
}

/** The BackupHealthy condition: the cluster's from its DatabaseBackups; on AWS from RDS's automated backups. */
function backupHealth(
  input: DatabaseInput,
  spec: ResolvedSpec,
  backups: BackupPlan | undefined,
): { ok: boolean; reason: string; message: string } {
  if (backups) return backups.health;
  if (!spec.backup.enabled)
    return {
      ok: false,
      reason: 'BackupsDisabled',
      message: 'spec.backup.enabled is false: RDS keeps one day of automated backups',
    };
  const latest = str(liveInstance(input.observed, AWS_KEYS.instance), 'status', 'atProvider', 'latestRestorableTime');
  return latest
    ? {
        ok: true,
        reason: 'AutomatedBackups',
        message: `RDS automated backups, kept ${spec.backup.retentionDays} days; restorable to ${latest}`,
      }
    : { ok: false, reason: 'NoRestorableTime', message: 'RDS reports no restorable time yet' };
}
