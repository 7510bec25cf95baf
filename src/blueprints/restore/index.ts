// The DatabaseRestore blueprint: a restore of an existing Database, asked for
// as its own object. The Database does the work (its cutover.ts: the
// restored instance is its next generation, and it moves its connection
// there); this blueprint judges the request with the same words the Database
// uses and reports how the restore goes as the Database says it in its status.
// A spec that is not valid is Fatal, naming the field. A request that is valid
// but cannot be done against the Database and its backups as they are (a
// point in time of a StatefulSet, a backup that does not exist or is not
// Completed) is phase Refused with the reason, naming the field: it composes
// nothing, so there is nothing a Fatal answer would protect, and the reason
// belongs where `kubectl get databaserestores` shows it. It is judged again on
// every call until the Database takes it up.
import type { ValidateFunction } from 'ajv';
import { SpecError } from '../../errors.js';
import { type DatabaseRestoreSpec, databaserestoreSpecSchema } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { list, record, str, type Obj } from '../../kube.js';
import { specValidator } from '../../spec/validate.js';
import type { Blueprint, BlueprintInput, Context, Desired, Plan, Summary } from '../blueprint.js';
import { appName } from '../lifecycle/database.js';
import { judgeRequest } from '../lifecycle/restore-source.js';
import { windowOf } from '../lifecycle/source.js';
import { holdDatabase, keptHold, USAGES, usagesRequirement } from '../lifecycle/deletion-order.js';
import { DATABASE, databaseRequirement, type Lookup, lookUp } from '../lifecycle/target.js';
import { entry } from '../manifest.js';

/** The required resource that is the DatabaseBackup restored from. */
export const BACKUP = 'backup';

/** The XRD's CEL rules, mirrored. */
function checkRules(spec: DatabaseRestoreSpec): void {
  if (Boolean(spec.fromBackup) === (spec.pointInTime !== undefined))
    throw new SpecError(['spec needs exactly one of fromBackup and pointInTime']);
}

const validate = specValidator<DatabaseRestoreSpec>(validators.databaserestore as ValidateFunction, 'spec', checkRules);

/** What was asked for, in the words status.requested keeps. */
function requestedOf(spec: DatabaseRestoreSpec): string {
  return spec.fromBackup ? `fromBackup ${spec.fromBackup.name}` : `pointInTime ${spec.pointInTime}`;
}

export interface ResolvedRestore {
  input: BlueprintInput<DatabaseRestoreSpec>;
  lookup: Lookup;
  /** The Database as found, for its status (the restore's progress, its restorable window). */
  database?: Obj;
  /** The DatabaseBackup named, once Crossplane answered (an empty list: it does not exist). */
  backup?: Obj[];
  /** Why it cannot be done as things are, naming the field. */
  refusal?: string;
}

function resolve(raw: unknown, ctx: Context): ResolvedRestore {
  const spec = validate(raw);
  const previous = record(ctx.xr, 'status') ?? {};
  const requested = str(previous, 'requested');
  if (requested !== undefined && requested !== requestedOf(spec))
    throw new SpecError([
      `spec asks for ${requestedOf(spec)} but this DatabaseRestore was made for ${requested}; spec cannot be changed; make another DatabaseRestore`,
    ]);
  const answer = ctx.required.get(DATABASE);
  const lookup = lookUp(answer, spec.databaseRef.name, ctx.owner.namespace);
  const input = { ...ctx, spec };
  const backup = spec.fromBackup ? ctx.required.get(BACKUP) : undefined;
  const resolved: ResolvedRestore = {
    input,
    lookup,
    ...(answer?.[0] ? { database: answer[0] } : {}),
    ...(backup ? { backup } : {}),
  };
  // Judged before the Database takes it up; once it has (building, switched), its backup may be pruned and its
  // window may move on, and that is fine: what was judged is what is built.
  if (
    lookup.state === 'found' &&
    !reported(resolved) &&
    !switched(resolved) &&
    (!spec.fromBackup || backup !== undefined)
  ) {
    const db = answer![0]!;
    try {
      judgeRequest(
        spec as unknown as Obj,
        lookup.target.spec,
        windowOf(db),
        backup?.[0],
        ctx.now,
        spec.databaseRef.name,
      );
    } catch (err) {
      if (!(err instanceof SpecError)) throw err;
      resolved.refusal = err.message;
    }
  }
  return resolved;
}

/**
 * What the Database says of this restore (this one: by name, and by uid where
 * the Database recorded it). The Database knows the request it reads: in
 * claims mode the claim, whose name is the claim's and whose uid is not the
 * composite's this call is for, so there the name says it.
 */
function reported(r: ResolvedRestore): Obj | undefined {
  const { owner } = r.input;
  const name = appName(owner);
  const uid = owner.claim ? undefined : owner.uid;
  const mine = (x: unknown) => str(x, 'name') === name && (!str(x, 'uid') || !uid || str(x, 'uid') === uid);
  const current = record(r.database, 'status', 'restore');
  // A refusal is this blueprint's to say (Fatal, naming the field), not the Database's.
  if (current && mine(current) && !(str(current, 'phase') === 'Failed' && !str(current, 'instance'))) return current;
  const done = list(r.database, 'status', 'restores').find(mine);
  return done ? { ...(done as Obj), phase: 'Switched' } : undefined;
}

function switched(r: ResolvedRestore): boolean {
  return str(r.input.xr, 'status', 'phase') === 'Switched' || str(reported(r), 'phase') === 'Switched';
}

function compose(r: ResolvedRestore): Plan {
  const { spec, owner } = r.input;
  const requirements: NonNullable<Plan['requirements']> = {
    [DATABASE]: databaseRequirement(spec.databaseRef.name, owner.namespace),
  };
  if (spec.fromBackup)
    requirements[BACKUP] = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      matchName: spec.fromBackup.name,
      namespace: owner.namespace,
    };
  requirements[USAGES] = usagesRequirement;
  // The restored instance is the Database's. What is this restore's own: while the Database builds it, the Usage
  // that refuses the Database's deletion, naming this restore.
  const said = reported(r);
  let resources: Desired[] = [];
  if (r.lookup.state === 'found' && str(said, 'phase') === 'Restoring')
    resources = holdDatabase(
      r.input,
      spec.databaseRef.name,
      `is restoring it${str(said, 'instance') ? ` into ${str(said, 'instance')}` : ''}: delete the Database once it has switched, or delete the DatabaseRestore first`,
    );
  // The Database not read as it is on this call (not answered yet, or refused): what holds it stays until it is.
  else if (r.lookup.state !== 'found' && r.lookup.state !== 'missing') resources = keptHold(r.input);
  return { resources, requirements };
}

function status(r: ResolvedRestore): Summary {
  const { spec, owner } = r.input;
  const db = spec.databaseRef.name;
  const base = { requested: requestedOf(spec) };
  const pending = (message: string): Summary => ({
    ready: false,
    reason: 'Pending',
    message,
    status: { ...base, phase: 'Pending' },
    warnings: [],
  });
  const said = reported(r);
  const previous = record(r.input.xr, 'status') ?? {};
  // Switched is final: whatever becomes of the Database since (its short history forgotten, or deleted under
  // Retain and created again, when this reads it missing for a while), the record stays. A request that said
  // Pending again would be taken up again by a Database of that name, and roll its data back to the backup.
  if (str(previous, 'phase') === 'Switched' && str(said, 'phase') !== 'Switched') {
    const { ready: _r, ...kept } = previous;
    return {
      ready: true,
      reason: 'Switched',
      message: str(previous, 'message') ?? 'switched',
      status: kept,
      warnings: [],
    };
  }
  if (r.lookup.state === 'unknown') return pending(`looking up Database ${db}`);
  if (r.lookup.state === 'missing') return pending(`Database ${db} does not exist in namespace ${owner.namespace}`);
  if (r.lookup.state === 'refused') return pending(`Database ${db} cannot be restored: ${r.lookup.why}`);
  if (spec.fromBackup && r.backup === undefined) return pending(`looking up DatabaseBackup ${spec.fromBackup.name}`);
  if (r.refusal !== undefined) {
    const message = `refused: ${r.refusal}`;
    return {
      ready: false,
      reason: 'Refused',
      message,
      status: { ...base, phase: 'Refused' },
      warnings: [{ reason: 'RestoreRefused', message }],
    };
  }
  if (!said) {
    // The Database refused it on its own reading (its restorable window as it observes it): said as such.
    const current = record(r.database, 'status', 'restore');
    if (str(current, 'name') === owner.name && str(current, 'phase') === 'Failed' && !str(current, 'instance')) {
      const message = `refused by Database ${db}: ${str(current, 'message') ?? 'it cannot be done'}`;
      return {
        ready: false,
        reason: 'Refused',
        message,
        status: { ...base, phase: 'Refused' },
        warnings: [{ reason: 'RestoreRefused', message }],
      };
    }
    return pending(waitingFor(r, db));
  }
  const phase = str(said, 'phase') ?? 'Pending';
  const fields: Obj = { ...base, phase };
  for (const k of ['instance', 'previousInstance', 'restorePoint', 'switchedAt'])
    if (str(said, k)) fields[k] = str(said, k);
  // A switch the Database records only in its history (status.restores) has no sentence of its own: made here.
  const message =
    str(said, 'message') ??
    (phase === 'Switched'
      ? `switched Database ${db} to ${String(fields['instance'] ?? 'the restored instance')}${fields['restorePoint'] ? ` (data from ${String(fields['restorePoint'])})` : ''}${fields['previousInstance'] ? `; ${String(fields['previousInstance'])} is kept for you to delete (status.kept)` : ''}`
      : phase);
  if (phase === 'Switched') {
    const kept = list(r.database, 'status', 'kept').filter(
      (k): k is string =>
        typeof k === 'string' && (!fields['previousInstance'] || k.includes(String(fields['previousInstance']))),
    );
    if (kept.length > 0) fields['kept'] = kept;
  }
  return {
    ready: phase === 'Switched',
    reason: phase === 'Failed' ? 'RestoreFailed' : phase,
    message,
    status: fields,
    warnings: phase === 'Failed' ? [{ reason: 'RestoreFailed', message }] : [],
  };
}

/**
 * What a DatabaseRestore the Database has not taken up waits behind, exactly:
 * the restore being built and those queued before it (the Database lists its
 * queue in status.restore.waiting), a Database that does not serve yet, or the
 * Database's next reconcile.
 */
function waitingFor(r: ResolvedRestore, db: string): string {
  const { name } = r.input.owner;
  const head = `waiting for Database ${db} to start the restore`;
  const current = record(r.database, 'status', 'restore');
  const active = str(current, 'name');
  const activePhase = str(current, 'phase');
  const queue = list(current, 'waiting').filter((w): w is string => typeof w === 'string');
  const place = queue.indexOf(name);
  const ahead = place > 0 ? queue.slice(0, place) : [];
  const instance = str(current, 'instance');
  // A Failed restore holds the queue only if it built something (its instance); a refused request the
  // Database shows there when nothing is being built holds nothing up.
  const holding = activePhase === 'Restoring' || (activePhase === 'Failed' && instance !== undefined);
  if (active && active !== name && holding) {
    const what =
      activePhase === 'Failed'
        ? 'which failed and holds the queue until it is deleted'
        : `which is restoring it${instance ? ` into ${instance}` : ''}`;
    const then = ahead.length > 0 ? `, then ${ahead.join(', ')}` : '';
    return `${head} after DatabaseRestore ${active} (${what})${then}; this one starts once ${ahead[ahead.length - 1] ?? active} has switched`;
  }
  const status = record(r.database, 'status');
  if (place >= 0 || status?.['ready'] === false) {
    const phase = str(status, 'phase');
    const message = str(status, 'message');
    const after = ahead.length > 0 ? `, after ${ahead.join(', ')}` : '';
    return `${head} once it serves${after} (it is ${phase ?? 'not ready'}${message ? `: ${message}` : ''})`;
  }
  return `${head} (it does at its next reconcile, within a minute; a change to the Database, such as an annotation, makes it now)`;
}

export const databaseRestore: Blueprint<ResolvedRestore> = {
  ...entry('databaserestore', databaserestoreSpecSchema),
  resolve,
  compose,
  status,
};
