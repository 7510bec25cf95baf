// Claims mode: a cluster-scoped composite made from a claim (Crossplane v1,
// or legacy XRDs on v2). Such a composite cannot compose namespaced objects,
// so the same manifests travel inside provider-kubernetes Objects that target
// the claim's namespace, and AWS resources use the cluster-scoped API groups
// with their Secrets in the claim's namespace. Blueprints never see the
// difference: observed Objects are unwrapped before they read them, and
// their desired objects are wrapped afterwards. (Unwrapping serves both modes:
// in-cluster high availability composes namespaced Objects too.)
import type { Owner } from './blueprints/blueprint.js';
import { clusterScopedApiVersion, isProviderKubernetesObject, wrappedManifest } from './kinds/index.js';
import { isObj, kindOf, nameOf, record, str, type Obj } from './kube.js';

const OBJECT_API = 'kubernetes.crossplane.io/v1alpha2';

/** A cluster-wide unique name for something that lives in the claim's namespace. */
function clusterName(owner: Owner, name: string, kind?: string): string {
  const parts = [kind?.toLowerCase(), owner.namespace, name].filter(Boolean);
  return parts.join('-').slice(0, 253);
}

/**
 * What a blueprint should see for an observed Object: the wrapped object as
 * the provider last observed it. Secret data may be left out of the provider's
 * observation, so it is taken from what we asked for.
 */
export function unwrap(observed: Obj): Obj {
  if (!isProviderKubernetesObject(observed)) return observed;
  const desired = wrappedManifest(observed) ?? {};
  const seen = record(observed, 'status', 'atProvider', 'manifest');
  if (!seen) return desired;
  if (kindOf(seen) === 'Secret' && !isObj(seen['data']) && isObj(desired['data']))
    return { ...seen, data: desired['data'] };
  return seen;
}

function objectFor(owner: Owner, manifest: Obj, managementPolicies: unknown): Obj {
  const policies = Array.isArray(managementPolicies) ? managementPolicies : ['*'];
  return {
    apiVersion: OBJECT_API,
    kind: 'Object',
    metadata: { name: clusterName(owner, nameOf(manifest), kindOf(manifest)) },
    spec: {
      managementPolicies: policies,
      // Said outright, as for managed resources: an Object that may not delete what it wraps orphans it.
      ...(policies.includes('*') || policies.includes('Delete') ? {} : { deletionPolicy: 'Orphan' }),
      forProvider: {
        manifest: { ...manifest, metadata: { ...(record(manifest, 'metadata') ?? {}), namespace: owner.namespace } },
      },
      providerConfigRef: { name: 'default' },
    },
  };
}

function clusterScopedManagedResource(owner: Owner, obj: Obj, apiVersion: string): Obj {
  const spec = { ...(record(obj, 'spec') ?? {}) };
  const forProvider = { ...(record(spec, 'forProvider') ?? {}) };
  // References name other managed resources, which are renamed the same way.
  for (const ref of ['bucketRef', 'dbSubnetGroupNameRef', 'replicateSourceDbRef', 'userRef', 'policyArnRef']) {
    const name = str(forProvider, ref, 'name');
    if (name) forProvider[ref] = { name: clusterName(owner, name) };
  }
  const password = record(forProvider, 'passwordSecretRef');
  if (password) forProvider['passwordSecretRef'] = { ...password, namespace: owner.namespace };
  spec['forProvider'] = forProvider;
  const connection = record(spec, 'writeConnectionSecretToRef');
  if (connection) spec['writeConnectionSecretToRef'] = { ...connection, namespace: owner.namespace };
  const config = str(spec, 'providerConfigRef', 'name');
  spec['providerConfigRef'] = { name: config ?? 'default' };
  const policies = spec['managementPolicies'];
  spec['deletionPolicy'] =
    Array.isArray(policies) && !policies.includes('*') && !policies.includes('Delete') ? 'Orphan' : 'Delete';
  const { namespace: _namespace, ...metadata } = record(obj, 'metadata') ?? {};
  return { apiVersion, kind: kindOf(obj), metadata: { ...metadata, name: clusterName(owner, nameOf(obj)) }, spec };
}

/**
 * A Usage of a namespaced managed resource holds its cluster-scoped twin,
 * renamed as the resource itself is: a ClusterUsage, since Crossplane finds
 * a namespaced Usage only for objects of its own namespace. Undefined for a
 * Usage of anything else (the claim), which travels in an Object as it is.
 */
function clusterUsageOfTwin(owner: Owner, obj: Obj): Obj | undefined {
  const of = record(obj, 'spec', 'of');
  const scoped = of ? clusterScopedApiVersion(of) : undefined;
  const name = str(of, 'resourceRef', 'name');
  if (!of || !scoped || !name) return undefined;
  return {
    apiVersion: str(obj, 'apiVersion'),
    kind: 'ClusterUsage',
    metadata: { name: clusterName(owner, nameOf(obj)) },
    spec: {
      ...record(obj, 'spec'),
      of: { ...of, apiVersion: scoped, resourceRef: { name: clusterName(owner, name) } },
    },
  };
}

/** What a claim's composite composes in place of a blueprint's object. */
export function wrap(owner: Owner, obj: Obj): Obj {
  const scoped = clusterScopedApiVersion(obj);
  if (scoped) return clusterScopedManagedResource(owner, obj, scoped);
  const clusterUsage = kindOf(obj) === 'Usage' ? clusterUsageOfTwin(owner, obj) : undefined;
  if (clusterUsage) return clusterUsage;
  // A namespaced Object the blueprint composes (its management policies matter) becomes a cluster-scoped one.
  if (isProviderKubernetesObject(obj))
    return objectFor(owner, wrappedManifest(obj) ?? {}, record(obj, 'spec')?.['managementPolicies']);
  return objectFor(owner, obj, undefined);
}
