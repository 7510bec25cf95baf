// A restore of an existing Database, as a cutover. A DatabaseRestore names
// the Database; the Database (which reads its DatabaseRestores through
// Crossplane's required resources) builds the restored instance as its next
// generation beside the live one, waits until it holds the data and is ready,
// then moves its connection there: the client Service's selector in a
// StatefulSet, the connection Secret's host for CloudNativePG and RDS. The
// instance from before is then handed to the user (kept, not managed) once
// deleting it is seen to keep its data. The Database composes the restored
// instance, not the DatabaseRestore: it becomes the Database's own, and a
// DatabaseRestore deleted later must not take it along.
//
// Every step is read from observed state (instances.ts says how the live
// generation is found); the Database's status keeps only what the user
// reads afterwards (which restores switched, what was kept).
import { SpecError } from '../../errors.js';
import { judge, keepsDataWhenDeleted } from '../../kinds/index.js';
import { list, str, type Obj } from '../../kube.js';
import type { Desired, Requirement } from '../blueprint.js';
import { appName, type DatabaseInput, type ResolvedSpec } from './common.js';
import { keyOf, RESTORE_LABEL } from './instances.js';
import { methodFor } from '../backup/target.js';
import { describeSource, judgeBackup, judgePoint, pointOf, type Source, type Window } from './restore-source.js';

/** Required resources: the namespace's DatabaseRestores, and the backup each waiting one names. */
export const RESTORES = 'database-restores';
export const CUTOVER_BACKUP = 'cutover-backup';

/** The requirement that reads the DatabaseBackup `name` (one per backup named, so that answers never mix). */
export function cutoverBackupKey(name: string): string {
  return `${CUTOVER_BACKUP}:${name}`;
}

const RESTORES_KEPT_IN_STATUS = 10;

export type CutoverPhase = 'Pending' | 'Restoring' | 'Switched' | 'Failed';

/** The restore being built: the generation it builds, and from what. */
export interface Target {
  restore: string;
  /** The DatabaseRestore's uid: a new one of the same name is another restore. */
  uid?: string;
  generation: number;
  source: Source;
  /** Whence, in words: "from DatabaseBackup X (postgres 17, 1.2 GB)", "to 2026-12-01T09:30:00Z". */
  from: string;
}

export interface CutoverPlan {
  requirements: Record<string, Requirement>;
  /** The generation that serves now. */
  live: number;
  target?: Target;
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
  for (const r of input.required.get(RESTORES) ?? []) {
    if (str(r, 'spec', 'databaseRef', 'name') !== me || str(r, 'metadata', 'deletionTimestamp')) continue;
    const uid = str(r, 'metadata', 'uid');
    out.push({
      name: str(r, 'metadata', 'name') ?? '',
      ...(uid ? { uid } : {}),
      created: Date.parse(str(r, 'metadata', 'creationTimestamp') ?? '') || 0,
      spec: (r['spec'] ?? {}) as Obj,
      ...(str(r, 'status', 'phase') ? { phase: str(r, 'status', 'phase') } : {}),
    });
  }
  return out.sort((a, b) => a.created - b.created || a.name.localeCompare(b.name));
}

/**
 * Judges a DatabaseRestore's request against the Database it restores; throws
 * SpecError naming the field. The DatabaseRestore's own blueprint answers
 * with the same words.
 */
export function judgeRequest(
  spec: Obj,
  database: ResolvedSpec,
  window: Window,
  backup: Obj | undefined,
  now: Date,
  databaseName: string,
): Source {
  const from = str(spec, 'fromBackup', 'name');
  const point = str(spec, 'pointInTime');
  if (Boolean(from) === (point !== undefined))
    throw new SpecError(['spec needs exactly one of fromBackup and pointInTime']);
  if (from) {
    if (!backup)
      throw new SpecError([
        `spec.fromBackup.name names DatabaseBackup ${from}, which does not exist in this namespace`,
      ]);
    const source = judgeBackup('spec.fromBackup.name', backup, database);
    if (source.database !== databaseName)
      throw new SpecError([
        `spec.fromBackup.name: DatabaseBackup ${from} is a backup of Database ${source.database}, not of ${databaseName}; restore it into a new Database with spec.restore.fromBackup`,
      ]);
    return source;
  }
  judgePoint('spec.pointInTime', point, database, window, now);
  if (methodFor(database) === 'cnpg' && !database.backup.objectStore)
    throw new SpecError([
      `spec.pointInTime: Database ${databaseName} has no spec.backup.objectStore, so CloudNativePG keeps no archive to recover from`,
    ]);
  if (window.earliest === undefined)
    throw new SpecError([
      `spec.pointInTime: Database ${databaseName} has no restorable window yet (status.backup.earliestRestorableTime): its first backup or archived WAL is not there`,
    ]);
  return { kind: 'point', database: databaseName, ...(point ? { time: point } : {}) };
}

/** A placement's instances as observed (instances.ts reads them). */
export interface Instances {
  /** The instance's composition-resource key, generation 0's. */
  base: string;
  live: number;
  generations: number[];
  /** What the user knows a generation's instance by: its StatefulSet or Cluster, its RDS identifier. */
  name(generation: number): string;
}

/** Where the Database's DatabaseRestores stand, given its instances. */
export function planCutover(
  input: DatabaseInput,
  spec: ResolvedSpec,
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
      source: sourceOf(building.meta, appName(input.owner), spec),
      from: building.meta.annotations[FROM_ANNOTATION] ?? 'its backup',
    };
    break;
  }
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
    if (backupName && answer === undefined) {
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
      const generation = Math.max(live, ...observedGens) + 1;
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
  return plan;
}

/** What a restored generation was built from, as its instance carries it: the backup's location, or the point. */
function sourceOf(meta: InstanceMeta, database: string, spec: ResolvedSpec): Source {
  const location = meta.annotations[SOURCE_ANNOTATION];
  const point = meta.annotations[POINT_ANNOTATION];
  if (!location) return { kind: 'point', database, ...(point ? { time: point } : {}) };
  return {
    kind: 'backup',
    method: methodFor(spec),
    name: meta.labels[RESTORE_LABEL] ?? '',
    database,
    engine: spec.engine,
    version: spec.version,
    location,
    ...(point ? { completedAt: point } : {}),
  };
}

/** What a restored instance carries: the time its data is from, the restore's uid, its source and how it was told. */
export const POINT_ANNOTATION = 'function-platform.dev/restore-point';
export const RESTORE_UID_ANNOTATION = 'function-platform.dev/restore-uid';
export const SOURCE_ANNOTATION = 'function-platform.dev/restore-source';
export const FROM_ANNOTATION = 'function-platform.dev/restore-from';
/** On an instance made from another Database's data: the database inside it. */
export const DBNAME_ANNOTATION = 'function-platform.dev/dbname';

const ANNOTATIONS = [POINT_ANNOTATION, RESTORE_UID_ANNOTATION, SOURCE_ANNOTATION, FROM_ANNOTATION, DBNAME_ANNOTATION];

export interface InstanceMeta {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** What an observed instance carries of the above, read back so that every later answer keeps it. */
export function instanceMeta(obj: Obj | undefined): InstanceMeta {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  const restore = str(obj, 'metadata', 'labels', RESTORE_LABEL);
  if (restore) labels[RESTORE_LABEL] = restore;
  for (const a of ANNOTATIONS) {
    const v = str(obj, 'metadata', 'annotations', a);
    if (v) annotations[a] = v;
  }
  return { labels, annotations };
}

/**
 * The labels and annotations an instance is composed with: what it already
 * carries (it keeps them while it exists: how it was made must not be
 * forgotten, even when a status write is lost), else, for the generation a
 * restore builds, that restore and its source, and `extra` (for an instance
 * made from another Database's data: whence, and that Database's database name).
 */
export function metaFor(observed: Obj | undefined, target?: Target, extra: Record<string, string> = {}): InstanceMeta {
  const fresh: InstanceMeta = { labels: {}, annotations: {} };
  if (target) {
    const point = pointOf(target.source);
    fresh.labels[RESTORE_LABEL] = target.restore;
    if (point) fresh.annotations[POINT_ANNOTATION] = point;
    if (target.uid) fresh.annotations[RESTORE_UID_ANNOTATION] = target.uid;
    if (target.source.kind === 'backup') fresh.annotations[SOURCE_ANNOTATION] = target.source.location;
    fresh.annotations[FROM_ANNOTATION] = target.from;
  }
  Object.assign(fresh.annotations, extra);
  const kept = instanceMeta(observed);
  return { labels: { ...fresh.labels, ...kept.labels }, annotations: { ...fresh.annotations, ...kept.annotations } };
}

/**
 * The generations a cutover hands over: each is let go once deleting its
 * observed object (as Crossplane sent it) keeps the data, and until then is
 * composed by `keep` so that it will (volumes retained, the external resource
 * orphaned).
 */
export function handOver(
  input: Pick<DatabaseInput, 'composed'>,
  base: string,
  release: readonly number[],
  why: string,
  keep: (generation: number) => Desired[],
): { resources: Desired[]; releasing: Array<{ key: string; why: string }> } {
  const out = { resources: [] as Desired[], releasing: [] as Array<{ key: string; why: string }> };
  for (const g of release) {
    const key = keyOf(base, g);
    const observed = input.composed.get(key);
    if (observed && keepsDataWhenDeleted(observed)) out.releasing.push({ key, why });
    else out.resources.push(...keep(g));
  }
  return out;
}
