// The DatabaseBackup blueprint: one backup of a Database, taken with the
// backup method of its placement (lifecycle/placements/: a dump Job to object
// storage, a CloudNativePG Backup, an RDS Snapshot), and recorded with its
// outcome, read from what was composed and never assumed.
import type { ValidateFunction } from 'ajv';
import { type DatabaseBackupSpec, databasebackupSpecSchema } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { isScratch } from '../../kinds/index.js';
import { record, str, type Obj } from '../../kube.js';
import { specValidator } from '../../spec/validate.js';
import type { Blueprint, BlueprintInput, Context, Desired, Plan, Summary } from '../blueprint.js';
import {
  type BackupPhase,
  backupSummary,
  currentAttempt,
  TERMINAL,
  VERIFY_KEY,
} from '../lifecycle/placements/backup-methods.js';
import { JOB_NAME_LABEL } from '../lifecycle/jobs.js';
import { drillOverdue } from '../lifecycle/placements/backup-methods.js';
import { planDrill } from './drill.js';
import type { BackupCall, Drill } from '../lifecycle/placements/placement.js';
import { HOLD_KEY, holdDatabase, USAGES, usagesRequirement } from '../lifecycle/deletion-order.js';
import { DATABASE, databaseRequirement, type Lookup, lookUp } from '../lifecycle/target.js';
import { entry } from '../manifest.js';

const validate = specValidator<DatabaseBackupSpec>(validators.databasebackup as ValidateFunction);

export interface ResolvedBackup {
  input: BlueprintInput<DatabaseBackupSpec>;
  lookup: Lookup;
  /** The status the composite has: a finished backup keeps it. */
  previous: Obj;
  /** The dump attempt of this call (1 to 3). */
  attempt: number;
  /** The restore drill asked of it (spec.verification), once the Database is known. */
  drill?: Drill;
}

function resolve(raw: unknown, ctx: Context): ResolvedBackup {
  const spec = validate(raw);
  const input = { ...ctx, spec };
  const lookup = lookUp(ctx.required.get(DATABASE), spec.databaseRef.name, ctx.owner.namespace);
  const previous = record(ctx.xr, 'status') ?? {};
  const resolved: ResolvedBackup = { input, lookup, previous, attempt: currentAttempt(input, previous) };
  if (lookup.state === 'found') resolved.drill = planDrill(callOf({ ...resolved, lookup }));
  return resolved;
}

/** The call as the Database's placement's backup method reads it. */
function callOf(r: ResolvedBackup & { lookup: { state: 'found' } }): BackupCall {
  return { input: r.input, target: r.lookup.target, previous: r.previous, attempt: r.attempt };
}

function compose(r: ResolvedBackup): Plan {
  const { input, lookup } = r;
  const owner = input.owner;
  const requirements: NonNullable<Plan['requirements']> = {
    [DATABASE]: databaseRequirement(input.spec.databaseRef.name, owner.namespace),
  };
  const resources: Desired[] = [];
  // Until the Database is known (Crossplane answers requirements on the next
  // call of the same reconcile), or when it cannot be backed up, what exists
  // stays exactly as it is: a Fatal here would stop the reconcile, and an
  // omission would delete a snapshot.
  requirements[USAGES] = usagesRequirement;
  if (lookup.state !== 'found') {
    // A Database that is gone, or that cannot be backed up, is read by nothing: held by nothing. Nor is a drill
    // of it finished: what the drill made goes (its record says it stopped).
    const stopped = drillStopped(r) !== undefined;
    for (const [key, obj] of input.observed) {
      // A Database that cannot be backed up now (refused) is there still: its drill waits, six hours at most.
      const gone = (lookup.state === 'missing' || stopped) && (key === VERIFY_KEY || isScratch(obj));
      const ended = (lookup.state !== 'unknown' && key === HOLD_KEY) || gone;
      if (!ended) resources.push({ key, object: asDesired(obj) });
    }
    return withDiscarding(input, { resources, requirements });
  }
  const taken = lookup.target.placement.backup.take(callOf({ ...r, lookup }));
  const drill = r.drill;
  // While it reads the Database (as observed: a dump's pod runs), the backup holds it: a deletion is refused,
  // naming this backup. One waiting to start holds nothing, so a broken Database can always be deleted.
  const hold = lookup.target.placement.backup.reads(callOf({ ...r, lookup }))
    ? holdDatabase(
        input,
        input.spec.databaseRef.name,
        'is taking a backup of it: delete the Database once the backup is Completed or Failed',
      )
    : [];
  return withDiscarding(input, {
    resources: [...resources, ...taken.resources, ...(drill?.resources ?? []), ...hold],
    requirements: { ...requirements, ...taken.requirements, ...drill?.requirements },
  });
}

/** A drill's scratch instance goes once nothing composes it (its drill recorded, a newer one asked, the Database gone). */
function withDiscarding(input: BlueprintInput<DatabaseBackupSpec>, plan: Plan): Plan {
  const keys = new Set(plan.resources.map((d) => d.key));
  const discarding = [...input.observed]
    .filter(([key, obj]) => !keys.has(key) && isScratch(obj))
    .map(([key]) => ({ key, why: 'the restore drill it was made for has ended' }));
  return discarding.length > 0 ? { ...plan, discarding } : plan;
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

/**
 * Why a drill under way stops while its Database cannot be read, if it does:
 * the Database is gone, or has been refused (its spec invalid) past the
 * drill's deadline; a scratch instance that bills by the hour (RDS) must not
 * wait on a spec nobody fixes. What the drill made then goes.
 */
function drillStopped(r: ResolvedBackup): string | undefined {
  const drill = record(r.previous, 'verification');
  if (str(drill, 'result') !== 'Running') return undefined;
  const ref = r.input.spec.databaseRef.name;
  if (r.lookup.state === 'missing') return `Database ${ref} is gone: the drill stopped, and what it made was removed`;
  if (r.lookup.state === 'refused' && drillOverdue(r.input.now, str(drill, 'startedAt') ?? ''))
    return `Database ${ref} has been refused for 6 hours (${r.lookup.why}): the drill stopped, and what it made was removed`;
  return undefined;
}

/**
 * A finished backup's record when its Database cannot be read (deleted, or
 * not answered yet): its outcome does not depend on the Database any more, so
 * it stays Completed or Failed, with the Database's absence said.
 */
function recorded(r: ResolvedBackup): Summary | undefined {
  const phase = str(r.previous, 'phase');
  if (!phase || !TERMINAL.has(phase)) return undefined;
  const { ready: _ready, message, conditions: _conditions, ...kept } = r.previous;
  const said = typeof message === 'string' ? message : phase;
  if (r.lookup.state === 'unknown') return backupSummary(phase as BackupPhase, said, kept);
  const gone =
    r.lookup.state === 'refused'
      ? `; Database ${r.input.spec.databaseRef.name} is refused now (${r.lookup.why}), this record stays`
      : `; Database ${r.input.spec.databaseRef.name} is gone, this record and what it stored stay`;
  // A drill under way stops with its Database: what it made goes (compose), and its record says so.
  const drill = record(r.previous, 'verification');
  const why = drillStopped(r);
  if (why) {
    const now = r.input.now.toISOString();
    const seconds = Math.max(0, Math.round((Date.parse(now) - Date.parse(str(drill, 'startedAt') ?? now)) / 1000));
    kept['verification'] = { ...drill, result: 'Incomplete', verifiedAt: now, durationSeconds: seconds, reason: why };
  }
  return backupSummary(phase as BackupPhase, said.endsWith(gone) ? said : `${said}${gone}`, kept);
}

function status(r: ResolvedBackup): Summary {
  const { input, lookup } = r;
  const ref = input.spec.databaseRef.name;
  if (lookup.state !== 'found') {
    const kept = recorded(r);
    if (kept) return kept;
  }
  if (lookup.state === 'unknown') return backupSummary('Pending', `looking up Database ${ref}`, {});
  if (lookup.state === 'missing')
    return backupSummary(
      'Pending',
      `Database ${ref} does not exist in namespace ${input.owner.namespace}; nothing was composed`,
      {},
    );
  if (lookup.state === 'refused')
    return backupSummary('Pending', `Database ${ref} cannot be backed up: ${lookup.why}; nothing was composed`, {});
  const { target } = lookup;
  const method = target.placement.backup;
  const summary = method.read(callOf({ ...r, lookup }), {
    method: method.name,
    engine: target.spec.engine,
    version: target.spec.version,
  });
  // The drill's record replaces the one carried over from before.
  const { verification: _before, ...rest } = summary.status;
  const drill = r.drill;
  return {
    ...summary,
    status: { ...rest, ...(drill?.status ? { verification: drill.status } : {}) },
    warnings: [...summary.warnings, ...(drill?.warnings ?? [])],
    ...(str(drill?.status, 'result') === 'Running' ? { working: true } : {}),
  };
}

export const databaseBackup: Blueprint<ResolvedBackup> = {
  ...entry('databasebackup', databasebackupSpecSchema),
  resolve,
  compose,
  status,
};
