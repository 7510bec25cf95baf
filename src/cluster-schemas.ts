// What the cluster really serves, checked before anything is composed.
// Crossplane v2.2 answers required schemas: for a kind it sends the OpenAPI v3
// schema the API server publishes (a CRD's schema as installed, references
// inlined), or an empty one when nothing serves the kind. The function asks
// for every kind it composes that a CRD defines (a provider's managed
// resources, provider-kubernetes' Object, cert-manager's, CloudNativePG's):
// those differ with the version installed, while Kubernetes' own kinds do not.
// A field the installed CRD does not have would be refused by the API server
// when Crossplane applies it, one resource at a time, after others went
// through; answering Fatal instead applies nothing and names the field and the
// package that installed the CRD. Which package that is comes from the
// ProviderRevisions, asked for only once a field is missing.
import { Capability, type RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { Requirement } from './blueprints/blueprint.js';
import { wrappedManifest } from './kinds/provider-kubernetes.js';
import { isObj, type Obj, record, str } from './kube.js';

/** The name the ProviderRevisions are asked by, once a composed field is missing from its CRD. */
export const CRD_OWNERS = 'function-platform/crd-owners';
const PROVIDER_REVISIONS: Requirement = {
  apiVersion: 'pkg.crossplane.io/v1',
  kind: 'ProviderRevision',
  matchLabels: {},
};

export interface Composed {
  /** The resource's name in the composition. */
  key: string;
  object: Obj;
}

export interface SchemaCheck {
  /** The schemas to ask for, by requirement name. */
  schemas: Record<string, { apiVersion: string; kind: string }>;
  /** Extra resources to ask for: the ProviderRevisions, once something is missing. */
  resources: Record<string, Requirement>;
  /** Why nothing may be applied, once the cluster's schemas and their owners are known. */
  refused?: string;
  /** Kinds nothing in the cluster serves, said as warnings. */
  absent: string[];
}

/** A group a CRD defines: a dotted name that is not Kubernetes' own (apps, batch, *.k8s.io). */
function fromCrd(apiVersion: string): boolean {
  const slash = apiVersion.indexOf('/');
  if (slash < 0) return false;
  const group = apiVersion.slice(0, slash);
  return group.includes('.') && !group.endsWith('.k8s.io');
}

const requirementName = (apiVersion: string, kind: string) => `schema/${apiVersion}/${kind}`;

/** One object to check: the composed one, or the manifest a provider-kubernetes Object carries. */
interface Checked {
  key: string;
  object: Obj;
  /** Where the object sits in the composed resource, for the message. */
  within?: string;
}

function checkedObjects(composed: Composed[]): Checked[] {
  const out: Checked[] = [];
  for (const { key, object } of composed) {
    if (fromCrd(str(object, 'apiVersion') ?? '')) out.push({ key, object });
    const inner = wrappedManifest(object);
    if (inner && fromCrd(str(inner, 'apiVersion') ?? ''))
      out.push({ key, object: inner, within: 'the manifest of the provider-kubernetes Object' });
  }
  return out;
}

/** The schema node with its allOf parts folded in, as the served, inlined schemas write references. */
function folded(node: Obj): Obj {
  const parts = Array.isArray(node['allOf']) ? node['allOf'].filter(isObj).map(folded) : [];
  if (parts.length === 0) return node;
  const properties: Obj = {};
  for (const p of [...parts, node]) Object.assign(properties, record(p, 'properties') ?? {});
  const first = (k: string) => [node, ...parts].map((p) => p[k]).find((v) => v !== undefined);
  const any = (k: string) => [node, ...parts].some((p) => p[k] === true);
  return {
    ...(Object.keys(properties).length > 0 ? { properties } : {}),
    type: first('type'),
    items: first('items'),
    additionalProperties: first('additionalProperties'),
    'x-kubernetes-preserve-unknown-fields': any('x-kubernetes-preserve-unknown-fields'),
    'x-kubernetes-embedded-resource': any('x-kubernetes-embedded-resource'),
  };
}

const EMBEDDED = new Set(['apiVersion', 'kind', 'metadata']);

/**
 * The paths in `value` the schema has no field for (spec.forProvider.x,
 * spec.items[0].y), read as the API server prunes: a served schema's allOf,
 * embedded resources and `type: object` without properties. (spec/validate.ts's
 * unknownFields reads an XRD's own schema, leniently, into warnings with a
 * suggestion; this one decides a refusal.)
 */
export function undeclaredPaths(value: unknown, schema: Obj, path = ''): string[] {
  const node = folded(schema);
  const out: string[] = [];
  if (Array.isArray(value)) {
    const items = node['items'];
    if (!isObj(items)) return out;
    return value.flatMap((v, i) => undeclaredPaths(v, items, `${path}[${i}]`));
  }
  if (!isObj(value)) return out;
  const properties = record(node, 'properties');
  const additional = node['additionalProperties'];
  const open = node['x-kubernetes-preserve-unknown-fields'] === true || additional === true;
  const closed = properties !== undefined || node['type'] === 'object';
  for (const [k, v] of Object.entries(value)) {
    const at = path ? `${path}.${k}` : k;
    const known = properties?.[k];
    if (isObj(known)) out.push(...undeclaredPaths(v, known, at));
    else if (node['x-kubernetes-embedded-resource'] === true && EMBEDDED.has(k)) continue;
    else if (isObj(additional)) out.push(...undeclaredPaths(v, additional, at));
    else if (!open && closed) out.push(at);
  }
  return out;
}

/** What a revision lists for a CRD it installed: the CRD, or (Crossplane v2) the ManagedResourceDefinition behind it. */
const DEFINITIONS = new Set(['CustomResourceDefinition', 'ManagedResourceDefinition']);

/** The Crossplane package whose revision installed CRDs of `group`, as "provider-aws-rds v1.14.0". */
function packageOf(group: string, revisions: Obj[]): string | undefined {
  const owns = (r: Obj) =>
    (Array.isArray(record(r, 'status')?.['objectRefs']) ? (record(r, 'status')!['objectRefs'] as unknown[]) : [])
      .filter(isObj)
      .some((ref) => {
        const name = String(ref['name']);
        return DEFINITIONS.has(String(ref['kind'])) && name.slice(name.indexOf('.') + 1) === group;
      });
  const owners = revisions.filter(owns);
  const active = owners.find((r) => str(r, 'spec', 'desiredState') === 'Active') ?? owners[0];
  if (!active) return undefined;
  const image = str(active, 'spec', 'image') ?? '';
  // An image pinned by digest has no version to name: its digest, shortened, says which.
  const digest = /@sha256:([0-9a-f]{12})/.exec(image)?.[1];
  const tag = digest ? `@sha256:${digest}` : /:([^:/@]+)$/.exec(image)?.[1];
  const name = str(active, 'metadata', 'labels', 'pkg.crossplane.io/package') ?? str(active, 'metadata', 'name');
  return tag ? `${name} ${tag}` : name;
}

interface Missing {
  key: string;
  apiVersion: string;
  kind: string;
  within?: string;
  fields: string[];
  object: Obj;
}

/** What a kind's schema speaks for: all but metadata, Kubernetes' ObjectMeta whatever a CRD writes for it. */
function ownPart(object: Obj): Obj {
  const { metadata: _metadata, ...rest } = object;
  return rest;
}

/**
 * A CRD's name, <plural>.<group>, from its kind: Kubernetes' own rule for the
 * plural (lower case, -s, -y to -ies, -s/-x/-ch/-sh to -es), which every kind
 * this function composes follows; a CRD named otherwise is simply not found.
 */
function crdName(apiVersion: string, kind: string): string {
  const lower = kind.toLowerCase();
  const plural = /[^aeiou]y$/.test(lower)
    ? `${lower.slice(0, -1)}ies`
    : /(s|x|z|ch|sh)$/.test(lower)
      ? `${lower}es`
      : `${lower}s`;
  return `${plural}.${apiVersion.slice(0, apiVersion.indexOf('/'))}`;
}

const crdRequirement = (apiVersion: string, kind: string) => `function-platform/crd/${crdName(apiVersion, kind)}`;
const crdOf = (apiVersion: string, kind: string): Requirement => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  matchName: crdName(apiVersion, kind),
});

/** The schema a CRD holds for one of its versions (apiVersion's), if it serves it. */
function crdSchema(crd: Obj, apiVersion: string): Obj | undefined {
  const version = apiVersion.slice(apiVersion.indexOf('/') + 1);
  const versions = record(crd, 'spec')?.['versions'];
  const v = Array.isArray(versions) ? versions.filter(isObj).find((x) => x['name'] === version) : undefined;
  const schema = v ? record(v, 'schema', 'openAPIV3Schema') : undefined;
  return schema && isObj(schema) ? schema : undefined;
}

/**
 * What the cluster's schemas say of what is about to be composed. Undefined
 * when the caller does not answer required schemas (an older Crossplane, or
 * this function's own render): then the API server is the only judge.
 */
export function checkAgainstCluster(req: RunFunctionRequest, composed: Composed[]): SchemaCheck | undefined {
  if (!(req.meta?.capabilities ?? []).includes(Capability.CAPABILITY_REQUIRED_SCHEMAS)) return undefined;
  const checked = checkedObjects(composed);
  if (checked.length === 0) return undefined;
  const schemas: SchemaCheck['schemas'] = {};
  for (const { object } of checked) {
    const apiVersion = str(object, 'apiVersion')!;
    const kind = str(object, 'kind') ?? '';
    schemas[requirementName(apiVersion, kind)] = { apiVersion, kind };
  }
  const check: SchemaCheck = { schemas, resources: {}, absent: [] };
  const answered = req.requiredSchemas ?? {};
  const allAnswered = Object.keys(schemas).every((name) => name in answered);

  // An empty schema: nothing serves the kind, or the caller had none to give (crossplane render without
  // --required-schemas answers every kind so). Only the first is worth saying: when some kind was served.
  const served = (name: string) => {
    const s = answered[name]?.openapiV3;
    return isObj(s) && Object.keys(s).length > 0 ? (s as Obj) : undefined;
  };
  const anyServed = Object.keys(schemas).some((name) => served(name) !== undefined);
  const missing: Missing[] = [];
  // Each kind is checked as soon as its schema is answered: a missing field asks for what confirms it in the
  // same round as the schemas still to come, to stay well inside Crossplane's few calls per reconcile.
  for (const { key, object, within } of checked) {
    const apiVersion = str(object, 'apiVersion')!;
    const kind = str(object, 'kind') ?? '';
    const name = requirementName(apiVersion, kind);
    if (!(name in answered)) continue;
    const schema = served(name);
    if (!schema) {
      const said = `${kind} (${apiVersion})`;
      if (allAnswered && anyServed && !check.absent.includes(said)) check.absent.push(said);
      continue;
    }
    const fields = undeclaredPaths(ownPart(object), schema);
    if (fields.length > 0) missing.push({ key, apiVersion, kind, fields, object, ...(within ? { within } : {}) });
  }
  if (missing.length === 0) return check;

  // Crossplane keeps the schemas it fetched until a CRD changes, and the API server publishes a changed CRD a
  // moment after the change: a schema fetched in between is older than the CRD for as long as no other CRD
  // changes. So a missing field is confirmed against the CRD itself before anything is refused, and the
  // ProviderRevisions name the package that installed it.
  check.resources[CRD_OWNERS] = PROVIDER_REVISIONS;
  for (const m of missing) check.resources[crdRequirement(m.apiVersion, m.kind)] = crdOf(m.apiVersion, m.kind);
  // An answer may be empty (nothing by that name): asked and answered is what counts.
  const isAnswered = (name: string) => name in (req.requiredResources ?? {}) || name in (req.extraResources ?? {});
  const itemsOf = (name: string) =>
    ((req.requiredResources?.[name] ?? req.extraResources?.[name])?.items ?? []).map((i) => i.resource).filter(isObj);
  if (!isAnswered(CRD_OWNERS) || missing.some((m) => !isAnswered(crdRequirement(m.apiVersion, m.kind)))) return check;
  const confirmed = missing.filter((m) => {
    const crd = itemsOf(crdRequirement(m.apiVersion, m.kind))[0];
    const schema = isObj(crd) ? crdSchema(crd as Obj, m.apiVersion) : undefined;
    // No CRD by that name to read: the served schema is all there is.
    return !schema || undeclaredPaths(ownPart(m.object), schema).length > 0;
  });
  if (confirmed.length === 0) return check;
  const revisions = itemsOf(CRD_OWNERS) as Obj[];
  // One sentence per kind and missing fields, naming every resource it holds up.
  const byKind = new Map<string, Missing & { keys: string[] }>();
  for (const m of confirmed) {
    const id = `${m.apiVersion}/${m.kind}/${m.within ?? ''}/${m.fields.join(',')}`;
    const seen = byKind.get(id);
    if (seen) seen.keys.push(m.key);
    else byKind.set(id, { ...m, keys: [m.key] });
  }
  check.refused = [...byKind.values()]
    .map(({ apiVersion, kind, within, fields, keys }) => {
      const group = apiVersion.slice(0, apiVersion.indexOf('/'));
      const pkg = packageOf(group, revisions);
      const shown = fields.slice(0, 5).join(', ') + (fields.length > 5 ? ` and ${fields.length - 5} more` : '');
      const from = pkg
        ? `its CRD was installed by ${pkg}, older than this function composes for: upgrade it`
        : 'no ProviderRevision lists its CRD: upgrade the package or chart that installed it';
      const resources = `${keys.length > 1 ? 'resources' : 'resource'} ${keys.join(', ')}${within ? `, ${within}` : ''}`;
      return `${kind} ${apiVersion} in this cluster has no field ${shown} (${resources}); ${from}`;
    })
    .join('; ');
  check.refused += '. Nothing was applied.';
  return check;
}
