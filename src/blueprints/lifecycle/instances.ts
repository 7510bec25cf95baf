// A Database's instances, whatever the placement. The first one (generation
// 0) is the one created with the Database; each DatabaseRestore of an
// existing Database builds the next generation beside the live one (`<base>-r1`,
// `-r2`, ...), whose composed resources carry the generation in their keys
// (`statefulset-r1`). Which generation is live is read off observed state,
// never remembered elsewhere, so a restarted function converges (as a
// Widget's live color is read off its Service); each placement says how
// (placements/). An instance a restore built carries how it was built (its
// DatabaseRestore, the source, the point in time) for as long as it exists,
// and an instance a restore replaced is handed over to the user.
import { keepsDataWhenDeleted } from '../../kinds/index.js';
import { list, type ObjectMeta, str, type Obj } from '../../kube.js';
import { boundedLabel } from '../../names.js';
import type { Desired, Owner } from '../blueprint.js';
import { baseName, type DatabaseInput, secretValue } from './database.js';
import { pointOf, type Source } from './source.js';

/** The key of a resource of `generation`: generation 0 keeps the key it always had. */
export function keyOf(key: string, generation: number): string {
  return generation === 0 ? key : `${key}-r${generation}`;
}

/** The generation a key names, for keys of `base` (`statefulset` → 0, `statefulset-r2` → 2). */
export function generationOfKey(base: string, key: string): number | undefined {
  if (key === base) return 0;
  if (!key.startsWith(`${base}-r`)) return undefined;
  const n = key.slice(base.length + 2);
  return /^[1-9][0-9]*$/.test(n) ? Number(n) : undefined;
}

/**
 * The generation whose `nameOf` is `name`: 0, or one of the numbers the name
 * carries after `-r` (names are bounded, so they are compared, not parsed).
 */
export function generationNamed(name: string, nameOf: (generation: number) => string): number | undefined {
  const candidates = [0, ...[...name.matchAll(/-r([1-9][0-9]*)/g)].map((m) => Number(m[1]))];
  return candidates.find((g) => nameOf(g) === name);
}

/**
 * `read` of observed state, done once a call: remembered for the call's
 * observed map (made anew for every call), so the phases may ask again.
 */
export function oncePerCall<T>(
  read: (observed: ReadonlyMap<string, Obj>) => T,
): (observed: ReadonlyMap<string, Obj>) => T {
  const seen = new WeakMap<ReadonlyMap<string, Obj>, T>();
  return (observed) => {
    if (seen.has(observed)) return seen.get(observed) as T;
    const value = read(observed);
    seen.set(observed, value);
    return value;
  };
}

/** The generations observed for one instance key, ascending. */
export function observedGenerations(observed: ReadonlyMap<string, Obj>, base: string): number[] {
  const out: number[] = [];
  for (const key of observed.keys()) {
    const g = generationOfKey(base, key);
    if (g !== undefined) out.push(g);
  }
  return out.sort((a, b) => a - b);
}

/** Whether any generation of this instance key exists. */
export function hasInstance(observed: ReadonlyMap<string, Obj>, base: string): boolean {
  return observedGenerations(observed, base).length > 0;
}

/**
 * The name of a generation's instance (StatefulSet, Cluster, RDS object):
 * 51 characters at most, as a StatefulSet's name must leave room for its
 * pods' revision label.
 */
export function instanceName(owner: Owner, generation: number): string {
  return generation === 0 ? baseName(owner) : boundedLabel(51, baseName(owner), `r${generation}`);
}

/** The pod's persistent volume claims of a StatefulSet, as its controller names them. */
export function claimNames(sts: Obj | undefined, name: string): string[] {
  return list(sts, 'spec', 'volumeClaimTemplates')
    .map((t) => str(t, 'metadata', 'name'))
    .filter((t): t is string => t !== undefined)
    .map((t) => `${t}-${name}-0`);
}

/** The connection Secret's key, whatever the placement. */
export const CONNECTION_KEY = 'connection';

/**
 * The live generation of an instance kind whose connection Secret names a
 * host: the generation whose host it names, else the oldest one observed
 * (nothing has switched yet).
 */
export function liveByConnection(
  observed: ReadonlyMap<string, Obj>,
  base: string,
  hostOf: (obj: Obj) => string | undefined,
): number {
  const generations = observedGenerations(observed, base);
  const host = secretValue(observed.get(CONNECTION_KEY), 'host');
  if (host) {
    for (const g of generations) if (hostOf(observed.get(keyOf(base, g))!) === host) return g;
  }
  return generations[0] ?? 0;
}

/**
 * For a placement whose connection Secret names the live generation's host:
 * which generation is live, its observed instance, and that instance read
 * through its kind's accessor (`view`, whose `hostOf` says the host it
 * serves at), each read once a call.
 */
export function byConnection<View>(
  base: string,
  view: (obj: Obj | undefined) => View | undefined,
  hostOf: (seen: View) => string | undefined,
) {
  const liveGeneration = oncePerCall((observed) =>
    liveByConnection(observed, base, (obj) => {
      const seen = view(obj);
      return seen === undefined ? undefined : hostOf(seen);
    }),
  );
  const liveInstance = (observed: ReadonlyMap<string, Obj>) => observed.get(keyOf(base, liveGeneration(observed)));
  return { liveGeneration, liveInstance, live: oncePerCall((observed) => view(liveInstance(observed))) };
}

/** A placement's instances as observed, read once a call. */
export interface Instances {
  /** The instance's composition-resource key, generation 0's. */
  base: string;
  live: number;
  generations: number[];
  /** What the user knows a generation's instance by: its StatefulSet or Cluster, its RDS identifier. */
  name(generation: number): string;
}

/** The restore being built: the generation it builds, and from what. */
export interface RestoreTarget {
  restore: string;
  /** The DatabaseRestore's uid: a new one of the same name is another restore. */
  uid?: string;
  generation: number;
  source: Source;
  /** Whence, in words: "from DatabaseBackup X (postgres 17, 1.2 GB)", "to 2026-12-01T09:30:00Z". */
  from: string;
}

/** On a restored generation's objects: the DatabaseRestore it was built for. */
export const RESTORE_LABEL = 'function-platform.dev/restore';
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
export function metaFor(
  observed: Obj | undefined,
  target?: RestoreTarget,
  extra: Record<string, string> = {},
): InstanceMeta {
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
 * A generation of an instance a placement makes from a source, as it is
 * composed: how it was made and what it carries, read back once it exists (a
 * later change would ask the provider to replace it), else as `fresh` says
 * for a new one; the first generation carries what the Database was made
 * from, and every one the database inside it when that is the source's.
 */
export function asMade<M>(
  call: {
    input: Pick<DatabaseInput, 'observed'>;
    restore: { database?: string; annotations?: Record<string, string> };
  },
  key: string,
  generation: number,
  madeOf: (observed: Obj) => M | undefined,
  fresh?: { made?: M; target?: RestoreTarget },
): { made?: M; meta: InstanceMeta } {
  const observed = call.input.observed.get(keyOf(key, generation));
  const made = observed ? madeOf(observed) : fresh?.made;
  const meta = metaFor(observed, fresh?.target, {
    ...(call.restore.database ? { [DBNAME_ANNOTATION]: call.restore.database } : {}),
    ...(generation === 0 ? call.restore.annotations : {}),
  });
  return { ...(made ? { made } : {}), meta };
}

/** How an observed instance was made from a source: its placement's record of it (`madeOf`), and the database it came with. */
export function madeFrom<M>(instance: Obj, madeOf: (observed: Obj) => M | undefined): { made?: M; database?: string } {
  const database = str(instance, 'metadata', 'annotations', DBNAME_ANNOTATION);
  const made = madeOf(instance);
  return { ...(database ? { database } : {}), ...(made ? { made } : {}) };
}

/** Metadata with the labels and annotations an instance carries (no annotations key when it carries none). */
export function withInstanceMeta(metadata: ObjectMeta, carried: InstanceMeta): ObjectMeta {
  if (Object.keys(carried.annotations).length > 0) metadata.annotations = carried.annotations;
  return metadata;
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
