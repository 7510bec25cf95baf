// protection.crossplane.io: Crossplane v2's Usage, which orders deletions. A
// Usage of an object makes Crossplane's webhook refuse that object's deletion
// (409, naming the Usage and its reason) until the Usage goes. Its Ready
// condition comes from Crossplane's Usage controller, which runs only with
// core's webhooks on; without them the Usage protects nothing and never turns
// Ready, so it is judged ready once it exists: it never holds anything up.
import { exists } from './conditions.js';
import type { Family } from './kind.js';

export const USAGE_API_VERSION = 'protection.crossplane.io/v1beta1';
/** The CRD that serves Usages: asked for, so a cluster without it (Crossplane v1) is never sent one. */
export const USAGE_CRD = 'usages.protection.crossplane.io';

export const PROTECTION: Family = [
  { group: 'protection.crossplane.io', kind: 'Usage', judge: exists },
  // A claim's composite holds a cluster-scoped managed resource with one.
  { group: 'protection.crossplane.io', kind: 'ClusterUsage', judge: exists },
];

/** What a Usage names: an object in the Usage's namespace, or a cluster-scoped one. */
export interface UsageRef {
  apiVersion: string;
  kind: string;
  name: string;
}

/**
 * A Usage by reason (the refusal says it), and `by` an object when it holds
 * only while that object exists: composed, it lets go once `by` is gone. Never
 * `by` the composite that composes it (see lifecycle/deletion-order.ts).
 */
export interface UsageSpec {
  of: UsageRef;
  by?: UsageRef;
  reason: string;
  /** Delete `of` once the Usage goes, if its deletion was refused meanwhile. */
  replayDeletion: boolean;
}

/** A namespaced Usage. */
export function usage(name: string, namespace: string, spec: UsageSpec) {
  const { of } = spec;
  return {
    apiVersion: USAGE_API_VERSION,
    kind: 'Usage',
    metadata: { name, namespace },
    spec: {
      of: { apiVersion: of.apiVersion, kind: of.kind, resourceRef: { name: of.name } },
      ...(spec.by
        ? { by: { apiVersion: spec.by.apiVersion, kind: spec.by.kind, resourceRef: { name: spec.by.name } } }
        : {}),
      reason: spec.reason,
      replayDeletion: spec.replayDeletion,
    },
  };
}
