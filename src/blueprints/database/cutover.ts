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
import { judge } from '../../kinds/index.js';
import { list, str, type Obj } from '../../kube.js';
import type { Requirement } from '../blueprint.js';
import { appName, type DatabaseInput, type ResolvedSpec } from './common.js';
import { keyOf, RESTORE_LABEL } from './instances.js';
import { describeSource, judgeBackup, judgePoint, pointOf, type Source, type Window } from './restore-source.js';

/** Required resources: the namespace's DatabaseRestores, and the backup the active one names. */
export const RESTORES = 'database-restores';
export const CUTOVER_BACKUP = 'cutover-backup';

const RESTORES_KEPT_IN_STATUS = 10;

export type CutoverPhase = 'Pending' | 'Restoring' | 'Switched' | 'Failed';

/** The restore being built: the generation it builds, and from what. */
export interface Target {
  restore: string;
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
  /** A DatabaseRestore that cannot be done (its own answer says why, naming the field). */
  refused?: { restore: string; why: string };
  /** Other DatabaseRestores waiting for the active one. */
  queued: string[];
}

interface Requested {
  name: string;
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
    out.push({
      name: str(r, 'metadata', 'name') ?? '',
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
  const done = new Set(restores.map((r) => str(r, 'name')));
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
    queued: [],
  };
  // Which generation was built for which restore, from the instances' labels.
  const builtFor = new Map<string, number>();
  for (const g of observedGens) {
    const r = restoreLabel(input.observed.get(keyOf(base, g)));
    if (r) builtFor.set(r, g);
  }
  // The live generation was built for a restore that has now switched: remember it.
  const liveRestore = restoreLabel(input.observed.get(keyOf(base, live)));
  if (liveRestore && !done.has(liveRestore)) {
    const previousLive = observedGens.filter((g) => g < live).pop();
    plan.restores = [
      ...restores,
      {
        name: liveRestore,
        instance: instances.name(live),
        ...(previousLive !== undefined ? { previousInstance: instances.name(previousLive) } : {}),
        ...(str(input.observed.get(keyOf(base, live)), 'metadata', 'annotations', POINT_ANNOTATION)
          ? { restorePoint: str(input.observed.get(keyOf(base, live)), 'metadata', 'annotations', POINT_ANNOTATION) }
          : {}),
        switchedAt: input.now.toISOString(),
      },
    ].slice(-RESTORES_KEPT_IN_STATUS);
    done.add(liveRestore);
  }

  // The active restore: the oldest one requested that has not switched. A Database still being created
  // (or made from a backup) restores nothing yet: its first instance is not serving.
  const serving = created && judge(input.observed.get(keyOf(base, live))).ready;
  const pending = requested(input).filter((r) => !done.has(r.name) && r.phase !== 'Switched');
  for (const r of pending) {
    if (plan.target || plan.refused || (!serving && !builtFor.has(r.name))) {
      plan.queued.push(r.name);
      continue;
    }
    try {
      const backupName = str(r.spec, 'fromBackup', 'name');
      if (backupName)
        plan.requirements[CUTOVER_BACKUP] = {
          apiVersion: 'example.com/v1',
          kind: 'DatabaseBackup',
          matchName: backupName,
          namespace: input.owner.namespace,
        };
      const answer = input.required.get(CUTOVER_BACKUP);
      // Not answered yet: ask, and decide on the next call of this reconcile.
      if (backupName && answer === undefined && !builtFor.has(r.name)) break;
      const source = judgeRequest(r.spec, spec, window, answer?.[0], input.now, appName(input.owner));
      const generation = builtFor.get(r.name) ?? Math.max(live, ...observedGens) + 1;
      const from =
        source.kind === 'point'
          ? `to ${source.time ?? 'its latest restorable time'}`
          : `from ${describeSource(source)}`;
      plan.target = { restore: r.name, generation, source, from };
    } catch (err) {
      if (!(err instanceof SpecError)) throw err;
      // A generation already built for it stays until the user deletes the DatabaseRestore.
      const built = builtFor.get(r.name);
      if (built !== undefined && built !== live) plan.release.push(built);
      plan.refused = { restore: r.name, why: err.message };
    }
  }
  for (const g of observedGens)
    if (g !== live && g !== plan.target?.generation && !plan.release.includes(g)) plan.release.push(g);
  return plan;
}

/** On a restored instance: the time its data is from, for status.restores. */
export const POINT_ANNOTATION = 'function-platform.dev/restore-point';

function restoreLabel(obj: Obj | undefined): string | undefined {
  const own = str(obj, 'metadata', 'labels', RESTORE_LABEL);
  if (own) return own;
  // A provider-kubernetes Object carries it on what it wraps.
  return str(obj, 'spec', 'forProvider', 'manifest', 'metadata', 'labels', RESTORE_LABEL);
}

/**
 * The labels and annotations an instance carries: a restored generation its
 * DatabaseRestore and the time its data is from; an instance made from
 * another Database's data that Database's database name.
 */
export function restoredMeta(
  target: Target | undefined,
  database?: string,
): { labels: Record<string, string>; annotations: Record<string, string> } {
  const point = target ? pointOf(target.source) : undefined;
  return {
    labels: target ? { [RESTORE_LABEL]: target.restore } : {},
    annotations: {
      ...(point ? { [POINT_ANNOTATION]: point } : {}),
      ...(database ? { [DBNAME_ANNOTATION]: database } : {}),
    },
  };
}

/** On an instance made from another Database's data: the database inside it. */
export const DBNAME_ANNOTATION = 'function-platform.dev/dbname';
