// The metadata Crossplane puts on a composed resource before it applies it
// (internal/controller/apiextensions/composite, v2.2: composition_render.go,
// names/), for the suites that apply composed objects to a bare API server to
// have them judged. How Crossplane really composes is tested under real
// Crossplane in test/e2e.
import { createHash } from 'node:crypto';
import { RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import type { Json } from './apiserver.js';

export const FIELD_OWNER_XR = 'apiextensions.crossplane.io/composite';
export const FIELD_OWNER_COMPOSED_PREFIX = 'apiextensions.crossplane.io/composed';
export const LABEL_COMPOSITE = 'crossplane.io/composite';
export const LABEL_CLAIM_NAME = 'crossplane.io/claim-name';
export const LABEL_CLAIM_NAMESPACE = 'crossplane.io/claim-namespace';

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

/** ComposedFieldOwnerName: a field owner unique per XR name and group-kind. */
export function composedFieldOwner(xr: Json): string {
  const group = groupOf(String(xr['apiVersion']));
  const gk = group ? `${String(xr['kind'])}.${group}` : String(xr['kind']);
  const h = createHash('sha256')
    .update(String(xr['metadata']['name']) + gk)
    .digest('hex');
  return `${FIELD_OWNER_COMPOSED_PREFIX}/${h}`;
}

/** names.ChildName: <parent>-<12 hex of sha256(uid + key)>, truncated to 63. */
export function childName(parent: string, uid: string, key: string): string {
  const suffix = createHash('sha256')
    .update(uid + key)
    .digest('hex')
    .slice(0, 12);
  let p = parent && !parent.endsWith('-') ? `${parent}-` : parent;
  if ((p + suffix).length <= 63) return p + suffix;
  const max = 63 - 12;
  p = p.slice(0, max);
  return p.endsWith('-') ? p + suffix : `${p.slice(0, max - 1)}-${suffix}`;
}

/**
 * RenderComposedResourceMetadata plus the name Crossplane picks: the observed
 * object's name and namespace when there is one; else the function's name, or
 * names.ChildName of generateName, the XR's uid and the key. Namespaced XRs
 * force their namespace; the composite (and claim) labels, the
 * composition-resource-name annotation and a controller reference to the XR.
 */
export function renderComposedMetadata(xr: Json, key: string, resource: Json | undefined, seen?: Json): Json {
  const cd = structuredClone(resource ?? {}) as Json;
  const meta: Json = (cd['metadata'] ??= {});
  const namespace: string | undefined = xr['metadata']['namespace'];
  const compositeLabel = xr['metadata']['labels']?.[LABEL_COMPOSITE] ?? xr['metadata']['name'];
  if (seen) {
    meta['name'] = seen['metadata']['name'];
    if (seen['metadata']['namespace']) meta['namespace'] = seen['metadata']['namespace'];
    else delete meta['namespace'];
  }
  if (!meta['name'] && !meta['generateName']) meta['generateName'] = `${compositeLabel}-`;
  if (namespace) meta['namespace'] = namespace;
  meta['annotations'] = { ...(meta['annotations'] ?? {}), [RESOURCE_NAME_ANNOTATION]: key };
  const labels: Json = { [LABEL_COMPOSITE]: compositeLabel };
  const claimName = xr['metadata']['labels']?.[LABEL_CLAIM_NAME];
  const claimNamespace = xr['metadata']['labels']?.[LABEL_CLAIM_NAMESPACE];
  if (claimName && claimNamespace)
    Object.assign(labels, { [LABEL_CLAIM_NAME]: claimName, [LABEL_CLAIM_NAMESPACE]: claimNamespace });
  meta['labels'] = { ...(meta['labels'] ?? {}), ...labels };
  const owner = {
    apiVersion: xr['apiVersion'],
    kind: xr['kind'],
    name: xr['metadata']['name'],
    uid: xr['metadata']['uid'],
    controller: true,
    blockOwnerDeletion: true,
  };
  const others: Json[] = (meta['ownerReferences'] ?? []).filter(
    (o: Json) => o['uid'] !== owner.uid && o['controller'] !== true,
  );
  meta['ownerReferences'] = [...others, owner];
  if (!meta['name']) {
    meta['name'] = childName(meta['generateName'], String(owner.uid), key);
    delete meta['generateName'];
  }
  return cd;
}
