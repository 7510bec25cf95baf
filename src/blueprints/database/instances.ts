// A Database's instances. The first one (generation 0) is the one created
// with the Database; each DatabaseRestore of an existing Database builds the
// next generation beside the live one (`<base>-r1`, `-r2`, ...), whose
// composed resources carry the generation in their keys (`statefulset-r1`).
// Which generation is live is read off observed state, never remembered
// elsewhere, so a restarted function converges (as a Widget's live color is
// read off its Service):
//   StatefulSet     the role the client Service selects (`server`, `server-r1`);
//   CloudNativePG   the Cluster whose -rw Service the connection Secret names;
//   RDS             the instance whose address the connection Secret names.
import { list, str, type Obj } from '../../kube.js';
import { boundedLabel } from '../../names.js';
import type { Owner } from '../blueprint.js';
import { baseName, secretValue } from './common.js';

/** Composition-resource keys of one placement's instance, generation 0's names. */
export const INSTANCE_KEYS = {
  statefulset: 'statefulset',
  headless: 'headless',
  cnpg: 'cnpg-cluster',
  rds: 'rds-instance',
} as const;

/** The role label of a StatefulSet's pods: the client Service selects the live generation's. */
export const ROLE_LABEL = 'function-platform.dev/role';
/** On a restored generation's objects: the DatabaseRestore it was built for. */
export const RESTORE_LABEL = 'function-platform.dev/restore';

/** The key of a resource of `generation`: generation 0 keeps the key it always had. */
export function keyOf(key: string, generation: number): string {
  return generation === 0 ? key : `${key}-r${generation}`;
}

/** The generation a key names, for keys of `base` (`statefulset` → 0, `statefulset-r2` → 2). */
export function generationOfKey(base: string, key: string): number | undefined {
  if (key === base) return 0;
  const m = new RegExp(`^${base}-r([1-9][0-9]*)$`).exec(key);
  return m ? Number(m[1]) : undefined;
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

/**
 * The name of a generation's instance (StatefulSet, Cluster, RDS object):
 * 51 characters at most, as a StatefulSet's name must leave room for its
 * pods' revision label.
 */
export function instanceName(owner: Owner, generation: number): string {
  return generation === 0 ? baseName(owner) : boundedLabel(51, baseName(owner), `r${generation}`);
}

/** The pods' role of a StatefulSet generation. */
export function serverRole(generation: number): string {
  return generation === 0 ? 'server' : `server-r${generation}`;
}

/** The client Service and the connection Secret, whatever the placement. */
const SERVICE_KEY = 'service';
const CONNECTION_KEY = 'connection';

/** A StatefulSet Database's live generation: the one its client Service selects. */
function liveStatefulSetGeneration(observed: ReadonlyMap<string, Obj>): number {
  const role = str(observed.get(SERVICE_KEY), 'spec', 'selector', ROLE_LABEL);
  const m = role ? /^server(?:-r([1-9][0-9]*))?$/.exec(role) : null;
  if (m) return m[1] ? Number(m[1]) : 0;
  return observedGenerations(observed, INSTANCE_KEYS.statefulset)[0] ?? 0;
}

/**
 * The live generation of an instance kind whose connection Secret names a
 * host: the generation whose host it names, else the oldest one observed
 * (nothing has switched yet).
 */
function liveByConnection(
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

/** The host a CloudNativePG Cluster or an RDS instance serves at, from the observed object alone. */
const HOST_OF: Record<string, (obj: Obj) => string | undefined> = {
  [INSTANCE_KEYS.cnpg]: (obj) => {
    const name = str(obj, 'metadata', 'name');
    const ns = str(obj, 'metadata', 'namespace');
    return name && ns ? `${name}-rw.${ns}.svc.cluster.local` : undefined;
  },
  [INSTANCE_KEYS.rds]: (obj) => str(obj, 'status', 'atProvider', 'address'),
};

/** The live generation of an instance key (statefulset, cnpg-cluster or rds-instance). */
export function liveGeneration(observed: ReadonlyMap<string, Obj>, base: string): number {
  if (base === INSTANCE_KEYS.statefulset) return liveStatefulSetGeneration(observed);
  return liveByConnection(observed, base, HOST_OF[base] ?? (() => undefined));
}

/** The live generation's observed instance. */
export function liveInstance(observed: ReadonlyMap<string, Obj>, base: string): Obj | undefined {
  return observed.get(keyOf(base, liveGeneration(observed, base)));
}

/** Whether any generation of this instance key exists. */
export function hasInstance(observed: ReadonlyMap<string, Obj>, base: string): boolean {
  return observedGenerations(observed, base).length > 0;
}

/** The pod's persistent volume claims of a StatefulSet, as its controller names them. */
export function claimNames(sts: Obj | undefined, name: string): string[] {
  return list(sts, 'spec', 'volumeClaimTemplates')
    .map((t) => str(t, 'metadata', 'name'))
    .filter((t): t is string => t !== undefined)
    .map((t) => `${t}-${name}-0`);
}
