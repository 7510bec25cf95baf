// A restore of an existing Database, as a cutover. A DatabaseRestore names
// the Database; the Database (which reads its DatabaseRestores through
// Crossplane's required resources) builds the restored instance as its next
// generation beside the live one, waits until it holds the data and is ready,
// then moves its connection there (each placement says how: its module in
// lifecycle/placements/ builds, watches and switches). The instance from before is then handed to the user (kept, not managed) once
// deleting it is seen to keep its data. The Database composes the restored
// instance, not the DatabaseRestore: it becomes the Database's own, and a
// DatabaseRestore deleted later must not take it along.
//
// Every step is read from observed state (each placement says how its live
// generation is found); the Database's status keeps only what the user
// reads afterwards (which restores switched, what was kept).
import { SpecError } from '../../errors.js';
import { judge } from '../../kinds/index.js';
import { databaseRestoreOf } from '../../kinds/platform.js';
import { list, str, type Obj } from '../../kube.js';
import type { Requirement } from '../blueprint.js';
import { appName, type DatabaseInput, type ResolvedSpec } from '../lifecycle/database.js';
import {
  FROM_ANNOTATION,
  type InstanceMeta,
  type Instances,
  instanceMeta,
  keyOf,
  POINT_ANNOTATION,
  RESTORE_LABEL,
  RESTORE_UID_ANNOTATION,
  type RestoreTarget,
  SOURCE_ANNOTATION,
} from '../lifecycle/instances.js';
import type { DatabaseCall, Placement, Progress } from '../lifecycle/placements/placement.js';
import { judgeRequest } from '../lifecycle/restore-source.js';
import { describeSource, type Source, type Window } from '../lifecycle/source.js';

/** Required resources: the namespace's DatabaseRestores, and the backup each waiting one names. */
export const RESTORES = 'database-restores';
export const CUTOVER_BACKUP = 'cutover-backup';
/** Required resources: what handed-over generations left under their names (Placement.leftBehind). */
export const LEFT_BEHIND = 'left-behind';

/** The requirement that reads the DatabaseBackup `name` (one per backup named, so that answers never mix). */
export function cutoverBackupKey(name: string): string {
  return `${CUTOVER_BACKUP}:${name}`;
}

const RESTORES_KEPT_IN_STATUS = 10;

export type CutoverPhase = 'Pending' | 'Restoring' | 'Switched' | 'Failed';

export interface CutoverPlan {
  requirements: Record<string, Requirement>;
  /** The generation that serves now. */
  live: number;
  target?: RestoreTarget;
  /** Generations neither live nor being built: handed to the user. */
  release: number[];
  /** Restores that switched, oldest first (status.restores), and what was kept (status.kept). */
  restores: Obj[];
  kept: string[];
  /**
   * DatabaseRestores that cannot be done, oldest first (each one's own answer
   * says why, naming the field). A refusal holds nothing up: the requests
   * after it are judged as if it were not there, and it is judged again on
   * every call until it starts (its backup may complete, or be made).
   */
  refused: Array<{ restore: string; why: string }>;
  /** DatabaseRestores waiting for the active one (or for the Database to serve), in the order they will run. */
  queued: string[];
  /** Some DatabaseBackup a waiting request names is not read yet (the first call of a reconcile). */
  lookingUp?: boolean;
  /** A restore first seen switched on this call: the Database says so once. */
  justSwitched?: string;
  /** How far the cutover into `target` has come (the switch happens once it is ready). */
  progress?: Progress;
}

interface Requested {
  name: string;
  uid?: string;
  created: number;
  spec: Obj;
  phase?: string;
}

/** The DatabaseRestores of this Database, oldest first. */
function requested(input: DatabaseInput): Requested[] {
  const me = appName(input.owner);
  const out: Requested[] = [];
  for (const obj of input.required.get(RESTORES) ?? []) {
    const r = databaseRestoreOf(obj)!;
    if (r.database !== me || r.deletionTimestamp) continue;
    out.push({
      name: r.name ?? '',
      ...(r.uid ? { uid: r.uid } : {}),
      created: Date.parse(r.creationTimestamp ?? '') || 0,
      spec: r.spec,
      ...(r.phase ? { phase: r.phase } : {}),
    });
  }
  return out.sort((a, b) => a.created - b.created || a.name.localeCompare(b.name));
}

/** Where the Database's DatabaseRestores stand, given its instances. */
export function planCutover(
  input: DatabaseCall,
  spec: ResolvedSpec,
  placement: Placement,
  instances: Instances,
  created: boolean,
  window: Window,
): CutoverPlan {
  const { base, live, generations: observedGens } = instances;
  const previous = (input.xr['status'] ?? {}) as Obj;
  const restores = list(previous, 'restores').filter((r): r is Obj => typeof r === 'object' && r !== null);
  const kept = list(previous, 'kept').filter((k): k is string => typeof k === 'string');
  const plan: CutoverPlan = {
    requirements: {
      [RESTORES]: {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseRestore',
        namespace: input.owner.namespace,
        matchLabels: {},
      },
    },
    live,
    release: [],
    restores,
    kept,
    refused: [],
    queued: [],
  };
  // A restore is known by its name and uid: another of the same name, made later, is another restore.
  const same = (e: { name?: string; uid?: string }, r: { name: string; uid?: string }) =>
    e.name === r.name && (!e.uid || !r.uid || e.uid === r.uid);
  const switched = (r: Requested) => plan.restores.some((e) => same({ name: str(e, 'name'), uid: str(e, 'uid') }, r));
  // Which generation was built for which restore, from what the instances carry (kept for as long as they exist).
  const built = observedGens.flatMap((g) => {
    const meta = instanceMeta(input.observed.get(keyOf(base, g)));
    const name = meta.labels[RESTORE_LABEL];
    return name ? [{ generation: g, name, uid: meta.annotations[RESTORE_UID_ANNOTATION], meta }] : [];
  });
  // The live generation was built for a restore that has now switched: remember it.
  const liveBuilt = built.find((b) => b.generation === live);
  if (liveBuilt && !plan.restores.some((e) => same({ name: str(e, 'name'), uid: str(e, 'uid') }, liveBuilt))) {
    const previousLive = observedGens.filter((g) => g < live).pop();
    const point = liveBuilt.meta.annotations[POINT_ANNOTATION];
    plan.restores = [
      ...restores,
      {
        name: liveBuilt.name,
        ...(liveBuilt.uid ? { uid: liveBuilt.uid } : {}),
        instance: instances.name(live),
        ...(previousLive !== undefined ? { previousInstance: instances.name(previousLive) } : {}),
        ...(point ? { restorePoint: point } : {}),
        switchedAt: input.now.toISOString(),
      },
    ].slice(-RESTORES_KEPT_IN_STATUS);
    plan.justSwitched = liveBuilt.name;
  }

  // The active restore: the oldest one requested that has not switched and can be done. A Database still being
  // created (or made from a backup) restores nothing yet: its first instance is not serving.
  const serving = created && judge(input.observed.get(keyOf(base, live))).ready;
  const pending = requested(input).filter((q) => !switched(q) && q.phase !== 'Switched');
  // Every backup named is asked for at once, so that one more call of the reconcile answers them all.
  for (const r of pending) {
    const backupName = str(r.spec, 'fromBackup', 'name');
    if (backupName && !built.some((b) => b.generation !== live && same(b, r)))
      plan.requirements[cutoverBackupKey(backupName)] = {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        matchName: backupName,
        namespace: input.owner.namespace,
      };
  }
  // The one being built goes on, whatever was requested before it: judged once, when it started, it is built from
  // what was judged then, whatever happens to the backup or the window since.
  for (const r of pending) {
    const building = built.find((b) => b.generation !== live && same(b, r));
    if (!building) continue;
    plan.target = {
      restore: r.name,
      ...(r.uid ? { uid: r.uid } : {}),
      generation: building.generation,
      source: sourceOf(building.meta, appName(input.owner), spec, placement),
      from: building.meta.annotations[FROM_ANNOTATION] ?? 'its backup',
    };
    break;
  }
  // A new generation is numbered past every one still there, handed over or not.
  const leftBehind = placement.leftBehind;
  if (leftBehind && pending.length > 0 && !plan.target) plan.requirements[LEFT_BEHIND] = leftBehind.requirement(input);
  const left = leftBehind ? input.required.get(LEFT_BEHIND) : [];
  const taken = (left ?? []).flatMap((o) => leftBehind?.generation(input, o) ?? []);
  let unanswered = false;
  for (const r of pending) {
    if (r.name === plan.target?.restore) continue;
    if (unanswered || !serving) {
      plan.queued.push(r.name);
      continue;
    }
    const backupName = str(r.spec, 'fromBackup', 'name');
    const answer = backupName ? input.required.get(cutoverBackupKey(backupName)) : undefined;
    // Not answered yet (the first call of a reconcile): decided on the next call, in the same order.
    if ((backupName && answer === undefined) || (left === undefined && !plan.target)) {
      unanswered = true;
      plan.lookingUp = true;
      plan.queued.push(r.name);
      continue;
    }
    try {
      // Every request is judged now, so that a refusal is said at once; one that can be done waits its turn.
      const source = judgeRequest(r.spec, spec, window, answer?.[0], input.now, appName(input.owner));
      if (plan.target) {
        plan.queued.push(r.name);
        continue;
      }
      const generation = Math.max(live, ...observedGens, ...taken) + 1;
      const from =
        source.kind === 'point'
          ? `to ${source.time ?? 'its latest restorable time'}`
          : `from ${describeSource(source)}`;
      plan.target = { restore: r.name, ...(r.uid ? { uid: r.uid } : {}), generation, source, from };
    } catch (err) {
      if (!(err instanceof SpecError)) throw err;
      // Refused: said, and out of the way of the requests after it.
      plan.refused.push({ restore: r.name, why: err.message });
    }
  }
  for (const g of observedGens)
    if (g !== live && g !== plan.target?.generation && !plan.release.includes(g)) plan.release.push(g);
  if (plan.target) plan.progress = placement.progress(input, plan.target);
  return plan;
}

/** What a restored generation was built from, as its instance carries it: the backup's location, or the point. */
function sourceOf(meta: InstanceMeta, database: string, spec: ResolvedSpec, placement: Placement): Source {
  const location = meta.annotations[SOURCE_ANNOTATION];
  const point = meta.annotations[POINT_ANNOTATION];
  if (!location) return { kind: 'point', database, ...(point ? { time: point } : {}) };
  return {
    kind: 'backup',
    method: placement.backup.name,
    name: meta.labels[RESTORE_LABEL] ?? '',
    database,
    engine: spec.engine,
    version: spec.version,
    location,
    ...(point ? { completedAt: point } : {}),
  };
}

/** Required resources: each object status.kept names (`kept-0`, `kept-1`, ...), to see whether it is still there. */
export const KEPT_PREFIX = 'kept-';

/**
 * The plan with status.kept as it still is: a sentence whose object the user
 * has deleted since is no longer listed. Each object is read (one required
 * resource each); until it has been read, and where the placement cannot read
 * it (an RDS instance), the sentence stays.
 */
export function keptStillThere(input: DatabaseCall, placement: Placement, plan: CutoverPlan): CutoverPlan {
  const kept: string[] = [];
  const requirements = { ...plan.requirements };
  plan.kept.forEach((sentence, i) => {
    const object = placement.keptObject?.(input, sentence);
    if (object) requirements[`${KEPT_PREFIX}${i}`] = object;
    const answer = object ? input.required.get(`${KEPT_PREFIX}${i}`) : undefined;
    if (answer === undefined || answer.length > 0) kept.push(sentence);
  });
  return { ...plan, kept, requirements };
}
