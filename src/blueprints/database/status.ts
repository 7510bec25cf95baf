// What a Database tells its user: phase, endpoint, connection Secret, backup
// and AWS figures, and the one sentence naming what blocks readiness.
import type { ExternalFacts } from '../../facts.js';
import type { Verdict } from '../../kinds/index.js';
import { condition, field, record, str, type Obj } from '../../kube.js';
import { firstBlocking, type Plan, type Summary } from '../blueprint.js';
import { AWS_KEYS, awsBackupStatus, instanceAddress, rdsIdentifier } from './aws.js';
import type { BackupPlan } from './backups.js';
import type { RestorePlan } from './restore.js';
import { clusterHost, CLUSTER_KEYS, cnpgOperator, observedStatefulSetGB, usesCnpg } from './cluster.js';
import { type DatabaseInput, names, type ResolvedSpec } from './common.js';
import { ENGINES } from './engine.js';

type Phase = 'Provisioning' | 'Restoring' | 'Ready' | 'Updating' | 'Degraded';

/** Provisioning until first ready; after that, a change in flight is Updating and anything else Degraded. */
function phaseOf(ready: boolean, xr: Obj, blocking: Verdict | undefined): Phase {
  if (ready) return 'Ready';
  const previous = str(xr, 'status', 'phase');
  if (previous === undefined || previous === 'Provisioning' || previous === 'Restoring') return 'Provisioning';
  return blocking?.state === 'updating' ? 'Updating' : 'Degraded';
}

function endpointStatus(input: DatabaseInput, spec: ResolvedSpec): Obj {
  if (spec.placement === 'aws') {
    const address = instanceAddress(input);
    return address ? { host: address.host, port: address.port, endpoint: `${address.host}:${address.port}` } : {};
  }
  const host = clusterHost(input, spec);
  const port = ENGINES[spec.engine].port;
  return { host, port, endpoint: `${host}:${port}` };
}

/** What the user reads while the RDS instance is not ready: AWS's own word for its state. */
function rdsBlocker(input: DatabaseInput, verdicts: ReadonlyMap<string, Verdict>): string | undefined {
  const verdict = verdicts.get(AWS_KEYS.instance);
  if (!verdict || verdict.ready) return undefined;
  const inst = input.observed.get(AWS_KEYS.instance);
  if (!inst) return `RDS instance ${rdsIdentifier(input)}: not created yet`;
  const state = str(inst, 'status', 'atProvider', 'status');
  const created = str(inst, 'status', 'atProvider', 'address') !== undefined;
  const said = condition(inst, 'Ready')?.message;
  const aws = state ? ` (AWS status: ${state})` : '';
  return `RDS instance ${rdsIdentifier(input)}: ${created ? 'not ready' : 'being created'}${aws}${said ? `: ${said}` : ''}`;
}

/** The summary of a call; `input.spec` is the resolved spec. */
export function databaseStatus(
  input: DatabaseInput & { spec: ResolvedSpec },
  facts: ExternalFacts | undefined,
  plan: Plan,
  verdicts: ReadonlyMap<string, Verdict>,
  backups: BackupPlan | undefined,
  restore?: RestorePlan,
): Summary {
  const spec = input.spec;
  const warnings: Summary['warnings'] = [];
  const status: Obj = { ...endpointStatus(input, spec) };
  if (plan.resources.some((r) => r.key === CLUSTER_KEYS.connection))
    status['connectionSecret'] = names.connection(input.owner);
  const backup = backups ? backups.status : awsBackupStatus(input, spec);
  if (backup && Object.keys(backup).length > 0) status['backup'] = backup;
  // What AWS said on this call, or the last known facts (with the time they were read) when it said nothing.
  const said = facts?.aws;
  const aws = said?.instance ? { ...said.instance, observedAt: said.observedAt } : record(input.xr, 'status', 'aws');
  if (aws) status['aws'] = aws;
  if (backups) warnings.push(...backups.warnings);
  const kept = input.observed.has(AWS_KEYS.instance) ? '; status.aws keeps the facts last read' : '';
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
  if (blocker === undefined && spec.placement === 'aws') {
    blocker = rdsBlocker(input, verdicts);
    if (blocker !== undefined) blocking = verdicts.get(AWS_KEYS.instance);
  }
  const restoring = restore !== undefined && restore.state !== 'none' && restore.state !== 'done';
  if (restore?.status) Object.assign(status, restore.status);
  // A restore in progress says more than the resource it waits for.
  if (blocker === undefined && restoring) {
    blocker = restore.message;
    reason = restore.state === 'failed' ? 'RestoreFailed' : 'Restoring';
    if (restore.state === 'failed') warnings.push({ reason, message: restore.message! });
  }
  if (blocker === undefined) {
    const first = firstBlocking(plan, verdicts);
    blocker = first?.message;
    blocking = first?.verdict;
  }
  if (blocker === undefined && backups?.blocker) blocker = backups.blocker;
  if (blocker === undefined && spec.placement === 'aws' && !status['connectionSecret']) {
    blocker = `waiting for provider-upjet-aws to write the connection Secret of RDS instance ${rdsIdentifier(input)}`;
  }
  const sts = input.observed.get(CLUSTER_KEYS.statefulset);
  const stsGB = observedStatefulSetGB(input);
  if (sts && stsGB !== undefined && spec.storageGB > stsGB) {
    // A StatefulSet's claim templates are immutable: growing its volume is the volume's business.
    warnings.push({
      reason: 'VolumeResizeNeeded',
      message: `spec.storageGB grew to ${spec.storageGB}; expand the volume, if its StorageClass allows: kubectl patch pvc data-${String(field(sts, 'metadata', 'name'))}-0 -n ${input.owner.namespace} -p '{"spec":{"resources":{"requests":{"storage":"${spec.storageGB}Gi"}}}}'`,
    });
  }
  const ready = blocker === undefined;
  const phase = restoring ? 'Restoring' : phaseOf(ready, input.xr, blocking);
  status['phase'] = phase;
  const conditions = [{ type: 'BackupHealthy', ...backupHealth(input, spec, backups) }];
  if (ready) {
    return {
      ready,
      reason: 'Available',
      message: `${spec.engine} ${spec.version} accepts connections at ${String(status['endpoint'])}`,
      status,
      warnings,
      conditions,
    };
  }
  if (reason === 'Provisioning') reason = phase === 'Provisioning' ? 'Provisioning' : phase;
  if (phase === 'Restoring' && reason === 'Restoring') reason = 'Restoring';
  return { ready, reason, message: blocker!, status, warnings, conditions };
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
  const latest = str(input.observed.get(AWS_KEYS.instance), 'status', 'atProvider', 'latestRestorableTime');
  return latest
    ? {
        ok: true,
        reason: 'AutomatedBackups',
        message: `RDS automated backups, kept ${spec.backup.retentionDays} days; restorable to ${latest}`,
      }
    : { ok: false, reason: 'NoRestorableTime', message: 'RDS reports no restorable time yet' };
}
