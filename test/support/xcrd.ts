// The CustomResourceDefinitions Crossplane creates for a
// CompositeResourceDefinition, as its definition and offered controllers do
// (crossplane internal/xcrd, now crossplane-runtime pkg/xcrd: crd.go and
// schemas.go, ForCompositeResource and ForCompositeResourceClaim). Written
// from that code, so an API server can judge our objects against exactly the
// schema a cluster would serve for them.
//
// What the generated XR CRD keeps of the XRD's schema, and what it drops, is
// Crossplane's choice, reproduced here on purpose:
// - the root: only `description` and `x-kubernetes-validations`;
// - metadata: `{type: object, properties: {name: {type: string, maxLength: 63}}}`;
// - spec: `required`, `x-kubernetes-preserve-unknown-fields`,
//   `x-kubernetes-validations`, `oneOf`, `description` and `properties`, plus
//   Crossplane's machinery (spec.crossplane.* for modern XRs, spec.* for legacy
//   ones and claims), which overrides properties of the same name;
// - status: `required`, `x-kubernetes-validations`, `description`, `oneOf`,
//   `properties`, plus `conditions` (and for legacy XRs and claims
//   `connectionDetails` and `claimConditionTypes`);
// - anything else on spec or status (`default`, `type`, ...) is not copied.
type Json = Record<string, any>;

export const CATEGORY_COMPOSITE = 'composite';
export const CATEGORY_CLAIM = 'claim';
const MAX_NAME_LENGTH = 63;

export type XrdScope = 'Namespaced' | 'Cluster' | 'LegacyCluster';

/** The XRD's scope with the default of its API version: v2 Namespaced, v1 LegacyCluster. */
export function scopeOf(xrd: Json): XrdScope {
  const scope = xrd['spec']?.['scope'];
  if (scope === 'Namespaced' || scope === 'Cluster' || scope === 'LegacyCluster') return scope;
  return String(xrd['apiVersion']).endsWith('/v2') ? 'Namespaced' : 'LegacyCluster';
}

const str = { type: 'string' };

const labelSelector = () => ({
  type: 'object',
  required: ['matchLabels'],
  properties: { matchLabels: { type: 'object', additionalProperties: { type: 'string' } } },
});

const nameRef = () => ({ type: 'object', required: ['name'], properties: { name: { ...str } } });

/** CompositeResourceSpecProps. */
export function compositeSpecProps(scope: XrdScope, defaultUpdatePolicy?: string): Json {
  const props: Json = {
    compositionRef: nameRef(),
    compositionSelector: labelSelector(),
    compositionRevisionRef: nameRef(),
    compositionRevisionSelector: labelSelector(),
    compositionUpdatePolicy: {
      type: 'string',
      enum: ['Automatic', 'Manual'],
      ...(defaultUpdatePolicy ? { default: defaultUpdatePolicy } : {}),
    },
    resourceRefs: {
      type: 'array',
      items: {
        type: 'object',
        properties: { apiVersion: { ...str }, name: { ...str }, namespace: { ...str }, kind: { ...str } },
        required: ['apiVersion', 'kind'],
      },
      'x-kubernetes-list-type': 'atomic',
    },
  };
  // Namespaced XRs don't get to reference composed resources in other namespaces.
  if (scope === 'Namespaced') {
    props['resourceRefs'] = {
      type: 'array',
      items: {
        type: 'object',
        properties: { apiVersion: { ...str }, name: { ...str }, kind: { ...str } },
        required: ['apiVersion', 'kind'],
      },
      'x-kubernetes-list-type': 'atomic',
    };
  }
  if (scope === 'LegacyCluster') {
    props['claimRef'] = {
      type: 'object',
      required: ['apiVersion', 'kind', 'namespace', 'name'],
      properties: { apiVersion: { ...str }, kind: { ...str }, namespace: { ...str }, name: { ...str } },
    };
    props['writeConnectionSecretToRef'] = {
      type: 'object',
      required: ['name', 'namespace'],
      properties: { name: { ...str }, namespace: { ...str } },
    };
    return props;
  }
  return { crossplane: { type: 'object', description: 'Configures how Crossplane will reconcile this composite resource', properties: props } };
}

/** CompositeResourceClaimSpecProps. */
export function claimSpecProps(defaultDeletePolicy?: string): Json {
  return {
    compositionRef: nameRef(),
    compositionSelector: labelSelector(),
    compositionRevisionRef: nameRef(),
    compositionRevisionSelector: labelSelector(),
    compositionUpdatePolicy: { type: 'string', enum: ['Automatic', 'Manual'] },
    compositeDeletePolicy: {
      type: 'string',
      enum: ['Background', 'Foreground'],
      ...(defaultDeletePolicy ? { default: defaultDeletePolicy } : {}),
    },
    resourceRef: {
      type: 'object',
      required: ['apiVersion', 'kind', 'name'],
      properties: { apiVersion: { ...str }, kind: { ...str }, name: { ...str } },
    },
    writeConnectionSecretToRef: { type: 'object', required: ['name'], properties: { name: { ...str } } },
  };
}

/** CompositeResourceStatusProps. */
export function compositeStatusProps(scope: XrdScope): Json {
  const props: Json = {
    conditions: {
      description: 'Conditions of the resource.',
      type: 'array',
      'x-kubernetes-list-map-keys': ['type'],
      'x-kubernetes-list-type': 'map',
      items: {
        type: 'object',
        required: ['lastTransitionTime', 'reason', 'status', 'type'],
        properties: {
          lastTransitionTime: { type: 'string', format: 'date-time' },
          message: { ...str },
          reason: { ...str },
          status: { ...str },
          type: { ...str },
          observedGeneration: { type: 'integer', format: 'int64' },
        },
      },
    },
  };
  if (scope === 'LegacyCluster') {
    props['connectionDetails'] = { type: 'object', properties: { lastPublishedTime: { type: 'string', format: 'date-time' } } };
    props['claimConditionTypes'] = { type: 'array', 'x-kubernetes-list-type': 'set', items: { ...str } };
  }
  return props;
}

function printerColumns(scope: XrdScope): Json[] {
  const legacy = scope === 'LegacyCluster';
  return [
    { name: 'SYNCED', type: 'string', jsonPath: ".status.conditions[?(@.type=='Synced')].status" },
    { name: 'READY', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
    { name: 'COMPOSITION', type: 'string', jsonPath: legacy ? '.spec.compositionRef.name' : '.spec.crossplane.compositionRef.name' },
    { name: 'COMPOSITIONREVISION', type: 'string', jsonPath: legacy ? '.spec.compositionRevisionRef.name' : '.spec.crossplane.compositionRevisionRef.name', priority: 1 },
    { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ];
}

const claimPrinterColumns = (): Json[] => [
  { name: 'SYNCED', type: 'string', jsonPath: ".status.conditions[?(@.type=='Synced')].status" },
  { name: 'READY', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
  { name: 'CONNECTION-SECRET', type: 'string', jsonPath: '.spec.writeConnectionSecretToRef.name' },
  { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

/** Drops undefined values, as Go's omitempty would leave them out of the JSON. */
function compact(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0)));
}

/** genCrdVersion: one CRD version from one XRD version. */
function crdVersion(v: Json, maxNameLength: number): Json {
  const s: Json | undefined = v['schema']?.['openAPIV3Schema'];
  if (!s) throw new Error(`XRD version ${v['name']}: custom resource validation cannot be nil`);
  const oldMax = s['properties']?.['metadata']?.['properties']?.['name']?.['maxLength'];
  const maxLength = typeof oldMax === 'number' && oldMax < maxNameLength ? oldMax : maxNameLength;
  const xSpec: Json = s['properties']?.['spec'] ?? {};
  const xStatus: Json = s['properties']?.['status'] ?? {};
  const spec = compact({
    type: 'object',
    description: xSpec['description'],
    required: xSpec['required'],
    'x-kubernetes-preserve-unknown-fields': xSpec['x-kubernetes-preserve-unknown-fields'],
    'x-kubernetes-validations': xSpec['x-kubernetes-validations'],
    oneOf: xSpec['oneOf'],
    properties: { ...(xSpec['properties'] ?? {}) },
  });
  const status = compact({
    type: 'object',
    description: xStatus['description'],
    required: xStatus['required'],
    'x-kubernetes-validations': xStatus['x-kubernetes-validations'],
    oneOf: xStatus['oneOf'],
    properties: { ...(xStatus['properties'] ?? {}) },
  });
  return compact({
    name: v['name'],
    served: Boolean(v['served']),
    storage: Boolean(v['referenceable']),
    deprecated: v['deprecated'] === true ? true : undefined,
    deprecationWarning: v['deprecationWarning'],
    additionalPrinterColumns: [...(v['additionalPrinterColumns'] ?? [])],
    schema: {
      openAPIV3Schema: compact({
        type: 'object',
        description: s['description'],
        'x-kubernetes-validations': s['x-kubernetes-validations'],
        required: ['spec'],
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object', properties: { name: { type: 'string', maxLength } } },
          spec,
          status,
        },
      }),
    },
    subresources: compact({ status: {}, scale: v['subresources']?.['scale'] }),
  });
}

function crdMetadata(name: string, xrd: Json): Json {
  const labels = { ...(xrd['metadata']?.['labels'] ?? {}), ...(xrd['spec']?.['metadata']?.['labels'] ?? {}) };
  const annotations = xrd['spec']?.['metadata']?.['annotations'];
  const uid = xrd['metadata']?.['uid'];
  return compact({
    name,
    labels: Object.keys(labels).length ? labels : undefined,
    annotations,
    // The XRD controls its CRDs, when it exists on the server (has a uid).
    ownerReferences: uid
      ? [{ apiVersion: String(xrd['apiVersion']), kind: 'CompositeResourceDefinition', name: xrd['metadata']['name'], uid, controller: true, blockOwnerDeletion: true }]
      : undefined,
  });
}

/** ForCompositeResource: the XR's CRD. */
export function compositeCrd(xrd: Json): Json {
  const scope = scopeOf(xrd);
  const spec: Json = xrd['spec'];
  const versions = (spec['versions'] as Json[]).map((v) => {
    const crdv = crdVersion(v, MAX_NAME_LENGTH);
    crdv['additionalPrinterColumns'] = [...(crdv['additionalPrinterColumns'] ?? []), ...printerColumns(scope)];
    const props = crdv['schema']['openAPIV3Schema']['properties'];
    Object.assign(props['spec']['properties'], compositeSpecProps(scope, spec['defaultCompositionUpdatePolicy']));
    Object.assign(props['status']['properties'], compositeStatusProps(scope));
    return crdv;
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: crdMetadata(String(xrd['metadata']['name']), xrd),
    spec: compact({
      group: spec['group'],
      names: { ...spec['names'], categories: [...(spec['names']['categories'] ?? []), CATEGORY_COMPOSITE] },
      scope: scope === 'Namespaced' ? 'Namespaced' : 'Cluster',
      versions,
      conversion: spec['conversion'],
    }),
  };
}

/** ForCompositeResourceClaim: the claim's CRD, for XRDs that offer one. */
export function claimCrd(xrd: Json): Json {
  const spec: Json = xrd['spec'];
  const claimNames: Json | undefined = spec['claimNames'];
  if (!claimNames) throw new Error(`XRD ${xrd['metadata']['name']}: invalid resource claim names: missing names`);
  for (const k of ['kind', 'plural', 'singular', 'listKind'] as const) {
    if (claimNames[k] && claimNames[k] === spec['names'][k]) {
      throw new Error(`XRD ${xrd['metadata']['name']}: invalid resource claim names: "${claimNames[k]}" conflicts with composite resource name`);
    }
  }
  const versions = (spec['versions'] as Json[]).map((v) => {
    const crdv = crdVersion(v, MAX_NAME_LENGTH);
    crdv['additionalPrinterColumns'] = [...(crdv['additionalPrinterColumns'] ?? []), ...claimPrinterColumns()];
    const props = crdv['schema']['openAPIV3Schema']['properties'];
    Object.assign(props['spec']['properties'], claimSpecProps(spec['defaultCompositeDeletePolicy']));
    Object.assign(props['status']['properties'], compositeStatusProps('LegacyCluster'));
    return crdv;
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: crdMetadata(`${claimNames['plural']}.${spec['group']}`, xrd),
    spec: compact({
      group: spec['group'],
      names: { ...claimNames, categories: [...(claimNames['categories'] ?? []), CATEGORY_CLAIM] },
      scope: 'Namespaced',
      versions,
      conversion: spec['conversion'],
    }),
  };
}

/** Every CRD Crossplane makes for an XRD: the XR's, and the claim's when it offers one. */
export function crdsForXrd(xrd: Json): Json[] {
  const out = [compositeCrd(xrd)];
  if (scopeOf(xrd) === 'LegacyCluster' && xrd['spec']?.['claimNames']) out.push(claimCrd(xrd));
  return out;
}
