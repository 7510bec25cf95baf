// provider-kubernetes Objects (kubernetes.crossplane.io cluster-scoped,
// kubernetes.m.crossplane.io namespaced): an Object is what it wraps. Its own
// Ready condition must hold, then the wrapped object is judged as itself.
import { type Composed, groupOf, kindOf, record, type Obj } from '../kube.js';
import { byReadyCondition, orphansOnDelete } from './conditions.js';
import type { Family } from './kind.js';
import { progressing, type Verdict } from './verdict.js';

export const OBJECT_GROUPS = ['kubernetes.crossplane.io', 'kubernetes.m.crossplane.io'] as const;

export function isProviderKubernetesObject(obj: unknown): boolean {
  return kindOf(obj) === 'Object' && (OBJECT_GROUPS as readonly string[]).includes(groupOf(obj));
}

/** The manifest an Object asks for. */
export function wrappedManifest(obj: unknown): Obj | undefined {
  return isProviderKubernetesObject(obj) ? record(obj, 'spec', 'forProvider', 'manifest') : undefined;
}

/** Judges an Object; `judgeWrapped` is the registry's judge, for what it wraps. */
export function providerKubernetesFamily(judgeWrapped: (obj: Obj) => Verdict): Family {
  const judge = (obj: Obj): Verdict => {
    const own = byReadyCondition(obj);
    if (own && !own.ready) return own;
    const manifest = record(obj, 'status', 'atProvider', 'manifest');
    if (!manifest) return progressing('waiting for provider-kubernetes to observe the object');
    return judgeWrapped(manifest);
  };
  // Deleting an Object whose management policies leave out Delete orphans what it wraps.
  return OBJECT_GROUPS.map((group) => ({ group, kind: 'Object', judge, keepsDataWhenDeleted: orphansOnDelete }));
}

/** A namespaced provider-kubernetes Object as the function composes it: what it wraps, and what it may do with it. */
export type KubernetesObject<Manifest> = Composed<
  'Object',
  { managementPolicies: string[]; forProvider: { manifest: Manifest } }
>;
