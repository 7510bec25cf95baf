// The Database blueprint: in the cluster or on AWS, one connection Secret,
// backups, and refusal of every change that would lose data.
import { type DatabaseSpec, databaseSpecSchema } from '../../generated/schemas.js';
import { condition, field, list, num, record, str, type Obj } from '../../kube.js';
import type { Verdict } from '../../kinds/index.js';
import { cronProblem } from '../../spec/cron.js';
import type { ValidateFunction } from 'ajv';
import * as validators from '../../generated/validators.js';
import { SpecError, specValidator } from '../../spec/validate.js';
import { type Blueprint, type BlueprintInput, firstBlocking, type Plan, type Summary } from '../blueprint.js';
import { AWS_KEYS, awsBackupStatus, composeAws, instanceAddress, rdsIdentifier } from './aws.js';
import {
  clusterBackupStatus,
  clusterHost,
  CLUSTER_KEYS,
  cnpgOperator,
  composeCluster,
  observedBackupVolumeGB,
  observedCnpgGB,
  observedStatefulSetGB,
  usesCnpg,
} from './cluster.js';
import { compareVersions, ENGINE_LABEL, majorVersion, names, resolve, type ResolvedSpec } from './common.js';
import { ENGINES } from './engine.js';

const validate = specValidator<DatabaseSpec>(validators.database as ValidateFunction);

type Observed = Omit<BlueprintInput<unknown>, 'spec'>;

/** The rules the XRD states in CEL, which a JSON Schema validator cannot evaluate. */
export function checkDatabaseRules(spec: DatabaseSpec): void {
  const problems: string[] = [];
  if (spec.placement === 'aws' && !spec.aws?.region) problems.push('spec.aws.region is required with placement aws');
  if (spec.placement === 'aws' && spec.storageGB < 20) problems.push(`spec.storageGB is ${spec.storageGB}; spec.storageGB must be at least 20 with placement aws (the RDS minimum)`);
  if (spec.placement === 'cluster' && spec.highAvailability && spec.engine === 'mysql') {
    problems.push('spec.highAvailability is true; highAvailability in the cluster needs engine postgres (CloudNativePG)');
  }
  const cron = cronProblem(spec.backup.schedule);
  if (cron) problems.push(`spec.backup.schedule is ${JSON.stringify(spec.backup.schedule)}; ${cron}`);
  if (spec.version !== undefined && !ENGINES[spec.engine].versions.includes(spec.version)) {
    problems.push(`spec.version is ${JSON.stringify(spec.version)}; spec.version must be one the engine supports: postgres 14, 15, 16, 17; mysql 8.0, 8.4`);
  }
  if (problems.length > 0) throw new SpecError(problems);
}

/** The engine that exists, read from what was composed. */
function observedEngine(o: Observed): string | undefined {
  for (const obj of o.observed.values()) {
    const label = str(obj, 'metadata', 'labels', ENGINE_LABEL);
    if (label) return label;
  }
  return str(o.observed.get(AWS_KEYS.instance), 'spec', 'forProvider', 'engine');
}

function observedPlacement(o: Observed): 'cluster' | 'aws' | undefined {
  if (o.observed.has(AWS_KEYS.instance) || o.observed.has(AWS_KEYS.bucket)) return 'aws';
  if (o.observed.has(CLUSTER_KEYS.statefulset) || o.observed.has(CLUSTER_KEYS.cnpg) || o.observed.has(CLUSTER_KEYS.credentials)) return 'cluster';
  return undefined;
}

/** The major version the database runs, read from what was composed. */
export function runningVersion(engine: DatabaseSpec['engine'], o: Observed): string | undefined {
  const tagOf = (image: string | undefined) => (image?.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : undefined);
  const sts = o.observed.get(CLUSTER_KEYS.statefulset);
  const container = list(sts, 'spec', 'template', 'spec', 'containers').find((c) => str(c, 'name') === 'db');
  const candidates = [
    tagOf(str(container, 'image')),
    tagOf(str(o.observed.get(CLUSTER_KEYS.cnpg), 'spec', 'imageName')),
    str(o.observed.get(AWS_KEYS.instance), 'spec', 'forProvider', 'engineVersion'),
  ];
  for (const c of candidates) {
    const major = majorVersion(engine, c);
    if (major) return major;
  }
  return undefined;
}

/** The spec with every default, the version taken from the running database when the spec names none. */
export function resolveFor(spec: DatabaseSpec, o: Observed): ResolvedSpec {
  return resolve(spec, runningVersion(spec.engine, o));
}

function observedStorageGB(o: Observed): number | undefined {
  const input = o as BlueprintInput<DatabaseSpec>;
  const rds = o.observed.get(AWS_KEYS.instance);
  const sizes = [
    observedStatefulSetGB(input),
    observedCnpgGB(input),
    observedBackupVolumeGB(input),
    num(rds, 'spec', 'forProvider', 'allocatedStorage'),
    num(rds, 'status', 'atProvider', 'allocatedStorage'),
  ].filter((n): n is number => n !== undefined);
  return sizes.length > 0 ? Math.max(...sizes) : undefined;
}

/** Changes that would lose or strand data are refused before anything is composed. */
export function checkAgainstObserved(spec: ResolvedSpec, o: Observed): void {
  const problems: string[] = [];
  const engine = observedEngine(o);
  if (engine !== undefined && engine !== spec.engine) {
    problems.push(`spec.engine is ${spec.engine} but the database is ${engine}; spec.engine cannot be changed once the Database exists`);
  }
  const placement = observedPlacement(o);
  if (placement !== undefined && placement !== spec.placement) {
    problems.push(`spec.placement is ${spec.placement} but the database runs on ${placement}; spec.placement cannot be changed once the Database exists`);
  }
  const running = runningVersion(spec.engine, o);
  // An engine change is refused above; versions of different engines do not compare.
  if (running !== undefined && (engine === undefined || engine === spec.engine)) {
    const cmp = compareVersions(spec.version, running);
    if (cmp < 0) problems.push(`spec.version is ${spec.version} but the database runs ${running}; spec.version cannot go down`);
    if (cmp > 0 && spec.engine === 'postgres' && o.observed.has(CLUSTER_KEYS.statefulset)) {
      problems.push(
        `spec.version is ${spec.version} but the database runs ${running}: a postgres major upgrade in a StatefulSet needs pg_upgrade, which the official image does not do; create a new Database on ${spec.version} and move the data, or use highAvailability (CloudNativePG upgrades in place)`,
      );
    }
  }
  const storage = observedStorageGB(o);
  if (storage !== undefined && spec.storageGB < storage) {
    problems.push(`spec.storageGB is ${spec.storageGB} but the database has ${Math.round(storage)}; spec.storageGB may grow but never shrink`);
  }
  if (spec.placement === 'cluster' && placement === 'cluster') {
    if (usesCnpg(spec) && o.observed.has(CLUSTER_KEYS.statefulset)) {
      problems.push('spec.highAvailability cannot be turned on for an existing in-cluster database: it would replace the StatefulSet and its volume; move the data to a new highly available Database instead');
    }
    if (!usesCnpg(spec) && o.observed.has(CLUSTER_KEYS.cnpg)) {
      problems.push('spec.highAvailability cannot be turned off for an existing CloudNativePG database: it would delete the Cluster and its volumes; move the data to a new Database instead');
    }
  }
  if (problems.length > 0) throw new SpecError(problems);
}

function compose(input: BlueprintInput<DatabaseSpec>): Plan {
  const spec = resolveFor(input.spec, input);
  return spec.placement === 'aws' ? composeAws(input, spec) : composeCluster(input, spec);
}

type Phase = 'Provisioning' | 'Ready' | 'Updating' | 'Degraded';

/** Provisioning until first ready; after that, a change in flight is Updating and anything else Degraded. */
function phaseOf(ready: boolean, xr: Obj, blocking: Verdict | undefined): Phase {
  if (ready) return 'Ready';
  const previous = str(xr, 'status', 'phase');
  if (previous === undefined || previous === 'Provisioning') return 'Provisioning';
  return blocking?.state === 'updating' ? 'Updating' : 'Degraded';
}

function endpointStatus(input: BlueprintInput<DatabaseSpec>, spec: ResolvedSpec): Obj {
  if (spec.placement === 'aws') {
    const address = instanceAddress(input);
    return address ? { host: address.host, port: address.port, endpoint: `${address.host}:${address.port}` } : {};
  }
  const host = clusterHost(input, spec);
  const port = ENGINES[spec.engine].port;
  return { host, port, endpoint: `${host}:${port}` };
}

/** What the user reads while the RDS instance is not ready: AWS's own word for its state. */
function rdsBlocker(input: BlueprintInput<DatabaseSpec>, verdicts: ReadonlyMap<string, Verdict>): string | undefined {
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

function summarize(input: BlueprintInput<DatabaseSpec>, plan: Plan, verdicts: ReadonlyMap<string, Verdict>): Summary {
  const spec = resolveFor(input.spec, input);
  const warnings: Summary['warnings'] = [];
  const status: Obj = { ...endpointStatus(input, spec) };
  if (plan.resources.some((r) => r.key === CLUSTER_KEYS.connection)) status['connectionSecret'] = names.connection(input.owner);
  const backup = spec.placement === 'aws' ? awsBackupStatus(input, spec) : clusterBackupStatus(input, spec);
  if (backup) status['backup'] = backup;
  // What AWS said on this call, or the last known facts (with the time they were read) when it said nothing.
  const facts = input.facts?.aws;
  const aws = facts?.instance ? { ...facts.instance, observedAt: facts.observedAt } : record(input.xr, 'status', 'aws');
  if (aws) status['aws'] = aws;
  // On AWS the newest backup is only known from reading the bucket: keep the last time read until a newer one is.
  const newest = facts?.newestBackup ?? (spec.placement === 'aws' ? str(input.xr, 'status', 'backup', 'lastSuccessfulTime') : undefined);
  if (newest && status['backup']) status['backup'] = { ...(status['backup'] as Obj), lastSuccessfulTime: newest };
  const kept = input.observed.has(AWS_KEYS.instance) ? '; status.aws keeps the facts last read' : '';
  for (const message of facts?.warnings ?? []) warnings.push({ reason: 'AwsUnavailable', message: `${message}${kept}` });

  let blocker: string | undefined;
  // The verdict behind the blocker, when a composed resource is what blocks.
  let blocking: Verdict | undefined;
  let reason = 'Provisioning';
  if (spec.placement === 'cluster' && usesCnpg(spec)) {
    const operator = cnpgOperator(input);
    if (operator === 'missing') {
      blocker = 'CloudNativePG is not installed in this cluster: highAvailability needs its operator (clusters.postgresql.cnpg.io); install it, or set highAvailability: false';
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
  if (blocker === undefined) {
    const first = firstBlocking(plan, verdicts);
    blocker = first?.message;
    blocking = first?.verdict;
  }
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
  const phase = phaseOf(ready, input.xr, blocking);
  status['phase'] = phase;
  if (ready) {
    return { ready, reason: 'Available', message: `${spec.engine} ${spec.version} accepts connections at ${String(status['endpoint'])}`, status, warnings };
  }
  if (reason === 'Provisioning') reason = phase === 'Provisioning' ? 'Provisioning' : phase;
  return { ready, reason, message: blocker!, status, warnings };
}

export const database: Blueprint<DatabaseSpec> = {
  name: 'database',
  kinds: ['Database', 'XDatabase'],
  conditionType: 'DatabaseReady',
  specSchema: databaseSpecSchema,
  parse(raw, observed) {
    const spec = validate(raw);
    checkDatabaseRules(spec);
    checkAgainstObserved(resolveFor(spec, observed), observed);
    // AWS said no before anything was created: refuse rather than compose what would fail.
    const refusal = observed.facts?.aws?.notOrderable;
    if (refusal) throw new SpecError([`${refusal.field}: ${refusal.message}`]);
    return spec;
  },
  compose,
  summarize,
};
