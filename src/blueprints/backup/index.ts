// The DatabaseBackup blueprint: one backup of a Database, taken with the
// mechanism of its placement, and recorded with its outcome, read from what
// was composed and never assumed:
//   in the cluster      a dump Job to object storage (job.ts), retried with
//                       twice the memory when killed for it, three times at most;
//   CloudNativePG       a Backup through the Barman Cloud plugin;
//   AWS                 an RDS Snapshot managed resource.
// A finished backup's phase is kept in its status: the dump Job goes once its
// outcome is recorded, the Snapshot (which holds the data) stays.
import type { ValidateFunction } from 'ajv';
import { type DatabaseBackupSpec, databasebackupSpecSchema } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { condition, num, record, str, type Obj } from '../../kube.js';
import { specValidator } from '../../spec/validate.js';
import type { Blueprint, BlueprintInput, Desired, Plan, Summary } from '../blueprint.js';
import { rdsIdentifierOf } from '../database/aws.js';
import { baseName } from '../database/common.js';
import { entry } from '../manifest.js';
import {
  attemptKey,
  describeFailure,
  dumpJob,
  dumpLocation,
  JOB_NAME_LABEL,
  jobName,
  podLabels,
  MAX_ATTEMPTS,
  memoryFor,
  podOutcome,
} from './job.js';
import { DATABASE, databaseRequirement, type Lookup, lookUp } from './target.js';

const validate = specValidator<DatabaseBackupSpec>(validators.databasebackup as ValidateFunction);

export const BACKUP_KEYS = { snapshot: 'rds-snapshot', cnpg: 'cnpg-backup' } as const;
/**
 * The required resource that is the pods of this backup's Jobs: every
 * attempt's, by labels that do not change between attempts. Crossplane asks
 * again within one reconcile while the requirements change, so they must not
 * depend on what their own answer decides (the attempt).
 */
export const POD = 'pod';

/** The pod of one attempt's Job, among the backup's pods. */
function podOf(input: BlueprintInput<DatabaseBackupSpec>, attempt: number): Obj | undefined {
  const job = jobName(input.owner, attempt);
  return input.required.get(POD)?.find((p) => str(p, 'metadata', 'labels', JOB_NAME_LABEL) === job);
}
const CNPG_PLUGIN = 'barman-cloud.cloudnative-pg.io';
const TERMINAL = new Set(['Completed', 'Failed']);

export interface ResolvedBackup {
  input: BlueprintInput<DatabaseBackupSpec>;
  lookup: Lookup;
  /** The status the composite has: a finished backup keeps it. */
  previous: Obj;
  /** The dump attempt of this call (1 to 3). */
  attempt: number;
}

/** The dump attempt now: the newest one composed, the next after one killed for memory. */
function currentAttempt(input: BlueprintInput<DatabaseBackupSpec>, previous: Obj): number {
  let attempt = Math.max(1, num(previous, 'attempts') ?? 1);
  while (input.observed.has(attemptKey(attempt + 1))) attempt++;
  const job = input.observed.get(attemptKey(attempt));
  if (job && condition(job, 'Failed')?.status === 'True' && attempt < MAX_ATTEMPTS) {
    const failed = podOutcome(podOf(input, attempt)).failed;
    if (failed?.reason === 'OOMKilled') return attempt + 1;
  }
  return attempt;
}

function resolve(raw: unknown, ctx: BlueprintInput<unknown>): ResolvedBackup {
  const spec = validate(raw);
  const input = { ...ctx, spec };
  const lookup = lookUp(ctx.required.get(DATABASE), spec.databaseRef.name, ctx.owner.namespace);
  const previous = record(ctx.xr, 'status') ?? {};
  return { input, lookup, previous, attempt: currentAttempt(input, previous) };
}

function compose(r: ResolvedBackup): Plan {
  const { input, lookup, previous, attempt } = r;
  const owner = input.owner;
  const requirements: NonNullable<Plan['requirements']> = {
    [DATABASE]: databaseRequirement(input.spec.databaseRef.name, owner.namespace),
  };
  const resources: Desired[] = [];
  // Until the Database is known (Crossplane answers requirements on the next
  // call of the same reconcile), or when it cannot be backed up, what exists
  // stays exactly as it is: a Fatal here would stop the reconcile, and an
  // omission would delete a snapshot.
  if (lookup.state !== 'found') {
    for (const [key, obj] of input.observed) resources.push({ key, object: asDesired(obj) });
    return { resources, requirements };
  }
  const { target } = lookup;
  switch (target.method) {
    case 'dump': {
      // Recorded as finished: the Job has done its part.
      if (TERMINAL.has(str(previous, 'phase') ?? '')) break;
      resources.push({ key: attemptKey(attempt), object: dumpJob(owner, target, attempt) });
      requirements[POD] = {
        apiVersion: 'v1',
        kind: 'Pod',
        matchLabels: podLabels(owner),
        namespace: owner.namespace,
      };
      break;
    }
    case 'cnpg':
      resources.push({
        key: BACKUP_KEYS.cnpg,
        object: {
          apiVersion: 'postgresql.cnpg.io/v1',
          kind: 'Backup',
          metadata: { name: owner.name, namespace: owner.namespace },
          spec: {
            // The cluster it was taken of stays so, whichever instance serves the Database later.
            cluster: {
              name:
                str(input.observed.get(BACKUP_KEYS.cnpg), 'spec', 'cluster', 'name') ??
                target.instance ??
                baseName(target.owner),
            },
            method: 'plugin',
            pluginConfiguration: { name: CNPG_PLUGIN },
          },
        },
      });
      break;
    case 'rds-snapshot': {
      const aws = target.spec.aws!;
      resources.push({
        key: BACKUP_KEYS.snapshot,
        object: {
          apiVersion: 'rds.aws.m.upbound.io/v1beta1',
          kind: 'Snapshot',
          // The snapshot's identifier is the object's name: unique in the namespace.
          metadata: { name: owner.name, namespace: owner.namespace },
          spec: {
            forProvider: {
              region: aws.region,
              // The instance it was taken of stays so, whichever instance serves the Database later.
              dbInstanceIdentifier:
                str(input.observed.get(BACKUP_KEYS.snapshot), 'spec', 'forProvider', 'dbInstanceIdentifier') ??
                target.instance ??
                rdsIdentifierOf(target.owner),
            },
            providerConfigRef: { kind: 'ClusterProviderConfig', name: aws.providerConfigName },
          },
        },
      });
      break;
    }
  }
  return { resources, requirements };
}

/** Labels and fields the Job controller adds to a Job it admitted: not ours to apply. */
const JOB_CONTROLLER_LABELS = ['controller-uid', 'batch.kubernetes.io/controller-uid', 'job-name', JOB_NAME_LABEL];

/** An observed object as desired again: what it is and its spec, none of what the server or controllers wrote. */
function asDesired(obj: Obj): Obj {
  const meta = (obj['metadata'] ?? {}) as Obj;
  const {
    resourceVersion: _v,
    uid: _u,
    generation: _g,
    creationTimestamp: _c,
    managedFields: _m,
    ownerReferences: _o,
    ...kept
  } = meta;
  const { status: _s, metadata: _meta, ...rest } = structuredClone(obj);
  const spec = rest['spec'] as Obj | undefined;
  if (str(obj, 'kind') === 'Job' && spec) {
    delete spec['selector'];
    const labels = record(spec, 'template', 'metadata', 'labels');
    for (const l of JOB_CONTROLLER_LABELS) if (labels) delete labels[l];
  }
  return { ...rest, metadata: kept };
}

type Phase = 'Pending' | 'Running' | 'Completed' | 'Failed';

function summary(phase: Phase, message: string, fields: Obj, warnings: Summary['warnings'] = []): Summary {
  const ready = phase === 'Completed';
  return {
    ready,
    message,
    reason: phase === 'Failed' ? 'BackupFailed' : phase,
    status: { phase, ...fields },
    warnings,
  };
}

function status(r: ResolvedBackup): Summary {
  const { input, lookup, previous, attempt } = r;
  const ref = input.spec.databaseRef.name;
  if (lookup.state === 'unknown') return summary('Pending', `looking up Database ${ref}`, {});
  if (lookup.state === 'missing')
    return summary(
      'Pending',
      `Database ${ref} does not exist in namespace ${input.owner.namespace}; nothing was composed`,
      {},
    );
  if (lookup.state === 'refused')
    return summary('Pending', `Database ${ref} cannot be backed up: ${lookup.why}; nothing was composed`, {});
  const { target } = lookup;
  const base = { method: target.method, engine: target.spec.engine, version: target.spec.version };
  const phase = str(previous, 'phase');
  if (phase && TERMINAL.has(phase) && target.method === 'dump') {
    // What was recorded stays: the composite's own status is the record.
    const { ready: _ready, message, ...kept } = previous;
    return summary(phase as Phase, typeof message === 'string' ? message : phase, { ...kept, ...base });
  }
  switch (target.method) {
    case 'dump':
      return dumpStatus(r, base);
    case 'cnpg':
      return cnpgStatus(input.observed.get(BACKUP_KEYS.cnpg), base);
    case 'rds-snapshot':
      return snapshotStatus(input.observed.get(BACKUP_KEYS.snapshot), base, attempt);
  }
}

function dumpStatus(r: ResolvedBackup, base: Obj): Summary {
  const { input, attempt } = r;
  const target = (r.lookup as Extract<Lookup, { state: 'found' }>).target;
  const job = input.observed.get(attemptKey(attempt));
  const location = dumpLocation(input.owner, target).url;
  const fields = { ...base, attempts: attempt, location, restorable: false };
  if (!job)
    return summary(
      'Pending',
      `starting the dump of Database ${input.spec.databaseRef.name} (attempt ${attempt} of ${MAX_ATTEMPTS}, ${memoryFor(attempt)})`,
      fields,
    );
  const startedAt = str(job, 'status', 'startTime');
  const outcome = podOutcome(podOf(input, attempt));
  if (condition(job, 'Complete')?.status === 'True') {
    const size = outcome.report?.sizeBytes;
    return summary(
      'Completed',
      `dumped Database ${input.spec.databaseRef.name} to ${location}${size !== undefined ? ` (${size} bytes)` : ''}`,
      {
        ...fields,
        ...(startedAt ? { startedAt } : {}),
        completedAt:
          str(job, 'status', 'completionTime') ?? condition(job, 'Complete')?.lastTransitionTime ?? startedAt,
        ...(size !== undefined ? { sizeBytes: size } : {}),
        restorable: true,
      },
    );
  }
  if (condition(job, 'Failed')?.status === 'True') {
    const why = outcome.failed
      ? describeFailure(outcome.failed, memoryFor(attempt))
      : `the Job failed: ${condition(job, 'Failed')?.message ?? condition(job, 'Failed')?.reason ?? 'no reason given'}`;
    const message = `attempt ${attempt} of ${MAX_ATTEMPTS}: ${why}`;
    return summary(
      'Failed',
      message,
      {
        ...fields,
        ...(startedAt ? { startedAt } : {}),
        completedAt: condition(job, 'Failed')?.lastTransitionTime ?? startedAt,
        failureReason: why,
      },
      [{ reason: 'BackupFailed', message }],
    );
  }
  const retry =
    attempt > 1
      ? ` (attempt ${attempt} of ${MAX_ATTEMPTS}, with ${memoryFor(attempt)} after the last was killed for memory)`
      : '';
  // The Job to look at, and its pod as the kubelet reports it (on fake nodes it runs forever: nothing runs in it).
  const running = jobName(input.owner, attempt);
  const pod = podOf(input, attempt);
  const podName = str(pod, 'metadata', 'name');
  const watch = `; Job ${running} runs it${podName ? ` (pod ${podName}: ${str(pod, 'status', 'phase') ?? 'Pending'})` : ''}, its logs: kubectl logs -n ${input.owner.namespace} job/${running} --all-containers`;
  return summary('Running', `dumping Database ${input.spec.databaseRef.name} to ${location}${retry}${watch}`, {
    ...fields,
    ...(startedAt ? { startedAt } : {}),
  });
}

function cnpgStatus(backup: Obj | undefined, base: Obj): Summary {
  const name = str(backup, 'metadata', 'name');
  const phase = str(backup, 'status', 'phase');
  const fields = {
    ...base,
    attempts: 1,
    restorable: false,
    ...(str(backup, 'status', 'startedAt') ? { startedAt: str(backup, 'status', 'startedAt') } : {}),
  };
  const location = str(backup, 'status', 'destinationPath');
  if (phase === 'completed') {
    return summary('Completed', `CloudNativePG backup ${name} completed`, {
      ...fields,
      completedAt: str(backup, 'status', 'stoppedAt'),
      restorable: true,
      ...(location ? { location } : {}),
    });
  }
  if (phase === 'failed') {
    const why = str(backup, 'status', 'error') ?? 'no reason given';
    return summary('Failed', `CloudNativePG backup ${name} failed: ${why}`, { ...fields, failureReason: why }, [
      { reason: 'BackupFailed', message: `CloudNativePG backup ${name} failed: ${why}` },
    ]);
  }
  if (!backup) return summary('Pending', 'creating the CloudNativePG Backup', fields);
  return summary(
    phase ? 'Running' : 'Pending',
    `CloudNativePG backup ${name}: ${phase ?? 'waiting for the operator'}`,
    fields,
  );
}

function snapshotStatus(snapshot: Obj | undefined, base: Obj, attempt: number): Summary {
  const name = str(snapshot, 'metadata', 'name');
  const fields = { ...base, attempts: attempt, restorable: false };
  if (!snapshot) return summary('Pending', 'creating the RDS snapshot', fields);
  const ready = condition(snapshot, 'Ready');
  const aws = str(snapshot, 'status', 'atProvider', 'status');
  const location = `rds-snapshot:${str(snapshot, 'metadata', 'annotations', 'crossplane.io/external-name') ?? name}`;
  if (ready?.status === 'True' && (aws === undefined || aws === 'available')) {
    const size = num(snapshot, 'status', 'atProvider', 'allocatedStorage');
    return summary('Completed', `RDS snapshot ${name} is available`, {
      ...fields,
      location,
      completedAt: ready.lastTransitionTime,
      restorable: true,
      ...(size !== undefined ? { sizeBytes: size * 2 ** 30 } : {}),
    });
  }
  if (aws === 'failed' || (ready?.status === 'False' && ready.reason === 'ReconcileError')) {
    const why = ready?.message ?? `AWS status ${aws}`;
    return summary('Failed', `RDS snapshot ${name} failed: ${why}`, { ...fields, failureReason: why }, [
      { reason: 'BackupFailed', message: `RDS snapshot ${name} failed: ${why}` },
    ]);
  }
  return summary('Running', `RDS snapshot ${name}: ${aws ?? 'being created'}`, { ...fields, location });
}

export const databaseBackup: Blueprint<ResolvedBackup> = {
  ...entry('databasebackup'),
  specSchema: databasebackupSpecSchema,
  resolve: (raw, ctx) => resolve(raw, ctx as BlueprintInput<unknown>),
  compose: (resolved) => compose(resolved),
  status: (resolved) => status(resolved),
};
