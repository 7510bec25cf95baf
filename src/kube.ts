// Plain Kubernetes objects as they travel through the function: JSON-shaped
// records, read defensively because observed state is whatever the cluster says.

/** A Kubernetes object as JSON. */
export type Obj = Record<string, unknown>;

/** A condition as Kubernetes and Crossplane write them. */
export interface KubeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a nested field; undefined when any step is missing or not an object. */
export function field(obj: unknown, ...path: string[]): unknown {
  let cur: unknown = obj;
  for (const key of path) {
    if (!isObj(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

export function str(obj: unknown, ...path: string[]): string | undefined {
  const v = field(obj, ...path);
  return typeof v === 'string' ? v : undefined;
}

export function num(obj: unknown, ...path: string[]): number | undefined {
  const v = field(obj, ...path);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function record(obj: unknown, ...path: string[]): Obj | undefined {
  const v = field(obj, ...path);
  return isObj(v) ? v : undefined;
}

export function list(obj: unknown, ...path: string[]): unknown[] {
  const v = field(obj, ...path);
  return Array.isArray(v) ? v : [];
}

/** The named condition of an object's status, if it has one. */
export function condition(obj: unknown, type: string): KubeCondition | undefined {
  for (const c of list(obj, 'status', 'conditions')) {
    if (isObj(c) && c['type'] === type && typeof c['status'] === 'string') {
      return c as unknown as KubeCondition;
    }
  }
  return undefined;
}

export function kindOf(obj: unknown): string {
  return str(obj, 'kind') ?? '';
}

export function nameOf(obj: unknown): string {
  return str(obj, 'metadata', 'name') ?? '';
}

/** The API group of an apiVersion: '' for the core group. */
export function groupOf(obj: unknown): string {
  const apiVersion = str(obj, 'apiVersion') ?? '';
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The metadata the function writes on what it composes. */
export type ObjectMeta = {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }>;
};

/** An object the function composes: its kind and metadata typed, the rest its kind's own. */
export type Composed<Kind extends string = string, Spec = unknown> = {
  apiVersion: string;
  kind: Kind;
  metadata: ObjectMeta;
  spec: Spec;
};

/** The fields `names` of the object at `path` in `obj`, each where `read` finds one of its type. */
function fields<const K extends string, T>(
  obj: unknown,
  path: readonly string[],
  names: readonly K[],
  read: (at: unknown, name: string) => T | undefined,
): { [P in K]?: T } {
  const at = field(obj, ...path);
  const out: { [P in K]?: T } = {};
  for (const name of names) {
    const v = read(at, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** The string fields `names` of the object at `path` in `obj`, where they are strings. */
export const strings = <const K extends string>(obj: unknown, path: readonly string[], names: readonly K[]) =>
  fields(obj, path, names, str);

/** The numeric fields `names` of the object at `path` in `obj`, where they are finite numbers. */
export const numbers = <const K extends string>(obj: unknown, path: readonly string[], names: readonly K[]) =>
  fields(obj, path, names, num);
