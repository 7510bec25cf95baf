// The registry of kinds: everything the function knows about a Kubernetes
// kind, one file per API family. Readiness, the nothing-lost guard, claims
// mode and the tests' controllers all read it from here.
import { groupOf, kindOf, nameOf, record, str, type Obj } from '../kube.js';
import { APPS } from './apps.js';
import { AUTOSCALING } from './autoscaling.js';
import { AWS_IAM, AWS_RDS, AWS_S3 } from './aws.js';
import { BATCH } from './batch.js';
import { CERT_MANAGER } from './cert-manager.js';
import { CNPG } from './cnpg.js';
import { byReadyCondition } from './conditions.js';
import { CORE } from './core.js';
import type { Kind } from './kind.js';
import { MONITORING } from './monitoring.js';
import { NETWORKING } from './networking.js';
import { PLATFORM } from './platform.js';
import { POLICY } from './policy.js';
import { PROTECTION } from './protection.js';
import { isProviderKubernetesObject, providerKubernetesFamily, wrappedManifest } from './provider-kubernetes.js';
import { NOT_CREATED, progressing, ready, type Verdict } from './verdict.js';

export type { Kind } from './kind.js';
export { isProviderKubernetesObject, wrappedManifest } from './provider-kubernetes.js';
export { NOT_CREATED, type Verdict, type VerdictState } from './verdict.js';

const KINDS = new Map<string, Kind>();
const key = (group: string, kind: string) => `${group}/${kind}`;
for (const k of [
  ...APPS,
  ...CORE,
  ...BATCH,
  ...NETWORKING,
  ...POLICY,
  ...AUTOSCALING,
  ...CNPG,
  ...CERT_MANAGER,
  ...MONITORING,
  ...PROTECTION,
  ...AWS_RDS,
  ...AWS_S3,
  ...AWS_IAM,
  ...PLATFORM,
  ...providerKubernetesFamily(judge),
]) {
  KINDS.set(key(k.group, k.kind), k);
}

/** What the registry knows of an object's kind, if anything. */
export function kindFor(obj: unknown): Kind | undefined {
  return KINDS.get(key(groupOf(obj), kindOf(obj)));
}

/** Judges an observed object; undefined means it does not exist (yet). */
export function judge(observed: Obj | undefined): Verdict {
  if (!observed) return NOT_CREATED;
  if (str(observed, 'metadata', 'deletionTimestamp')) return progressing('being deleted');
  const known = kindFor(observed);
  if (known) return known.judge(observed);
  // Anything else that speaks the Ready condition; a kind of an extension API group must, Kubernetes' own need not.
  const group = groupOf(observed);
  return (
    byReadyCondition(observed) ??
    (group.includes('.') && !group.endsWith('k8s.io') ? progressing('waiting for a Ready condition') : ready())
  );
}

/** Does this object hold data? A provider-kubernetes Object holds what it wraps. */
export function holdsData(obj: Obj): boolean {
  if (isProviderKubernetesObject(obj)) {
    const wrapped = wrappedManifest(obj);
    return wrapped !== undefined && holdsData(wrapped);
  }
  const holds = kindFor(obj)?.holdsData;
  return typeof holds === 'function' ? holds(obj) : holds === true;
}

/** The label a restore drill's scratch instance carries: restored from a backup to be counted, then thrown away. */
export const SCRATCH_LABEL = 'function-platform.dev/scratch';

/** Is this observed object a drill's scratch instance, as composed (or inside the Object that wraps it)? */
export function isScratch(obj: Obj): boolean {
  const inner = isProviderKubernetesObject(obj) ? wrappedManifest(obj) : obj;
  return str(inner, 'metadata', 'labels', SCRATCH_LABEL) === 'drill';
}

/** Does deleting this observed data holder keep its data? A provider-kubernetes Object must, and so must what it wraps. */
export function keepsDataWhenDeleted(obj: Obj): boolean {
  const own = kindFor(obj)?.keepsDataWhenDeleted?.(obj) === true;
  if (!isProviderKubernetesObject(obj)) return own;
  // Deleting an Object that orphans keeps the object itself; one that does not deletes it, which must then keep its data.
  if (own) return true;
  const seen = record(obj, 'status', 'atProvider', 'manifest');
  return seen !== undefined && keepsDataWhenDeleted(seen);
}

/** The cluster-scoped apiVersion of a namespaced managed resource, for claims mode. */
export function clusterScopedApiVersion(obj: Obj): string | undefined {
  return kindFor(obj)?.clusterScoped;
}

/**
 * "Deployment my-widget-blue": how messages name a resource. A
 * provider-kubernetes Object is named by what it wraps, the thing the user knows.
 */
export function describe(obj: unknown, fallbackKey = ''): string {
  const shown = wrappedManifest(obj) ?? obj;
  return `${kindOf(shown) || 'resource'} ${nameOf(shown) || fallbackKey || '(unnamed)'}`;
}
