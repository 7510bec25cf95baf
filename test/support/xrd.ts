// The XRDs of package/configuration/apis/*/definition.yaml, for checking that
// what the function writes into an XR's status is declared there: Crossplane
// (and the API server's pruning of the XR CRD it generates) drops undeclared
// status fields, so a status the function computes but does not declare
// never reaches the user.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readYamlDocs } from './crank.js';
import { repoRoot } from './function-process.js';

type Json = Record<string, any>;

export interface XrdProblem {
  path: string;
  message: string;
}

const APIS_DIR = join(repoRoot, 'package', 'configuration', 'apis');

/** Every CompositeResourceDefinition of the Configuration package. */
export function loadXrds(): Json[] {
  const out: Json[] = [];
  for (const dir of readdirSync(APIS_DIR, { withFileTypes: true })) {
    if (!dir.isDirectory()) continue;
    for (const file of readdirSync(join(APIS_DIR, dir.name)).filter((f) => /\.ya?ml$/.test(f))) {
      for (const doc of readYamlDocs(join(APIS_DIR, dir.name, file))) {
        if (doc['kind'] === 'CompositeResourceDefinition') out.push(doc);
      }
    }
  }
  return out;
}

/** The XRD serving apiVersion/kind (group/version, names.kind or claimNames.kind). */
export function xrdFor(apiVersion: string, kind: string): Json | undefined {
  const [group, version] = apiVersion.split('/');
  return loadXrds().find(
    (x) =>
      x['spec']?.['group'] === group &&
      (x['spec']?.['names']?.['kind'] === kind || x['spec']?.['claimNames']?.['kind'] === kind) &&
      (x['spec']?.['versions'] ?? []).some((v: Json) => v['name'] === version),
  );
}

/**
 * The status schema of the XR CRD Crossplane generates from an XRD version:
 * the XRD's own status properties plus those Crossplane adds to every XR
 * (internal/xcrd/schemas.go CompositeResourceStatusProps): `conditions`, and
 * `crossplane` for modern (v2) XRs or `connectionDetails`/`claimConditionTypes`
 * for legacy ones.
 */
export function xrStatusSchema(xrd: Json, version: string): Json {
  const v = (xrd['spec']?.['versions'] ?? []).find((x: Json) => x['name'] === version);
  if (!v) throw new Error(`XRD ${xrd['metadata']?.['name']} has no version ${version}`);
  const declared: Json = v['schema']?.['openAPIV3Schema']?.['properties']?.['status'] ?? { type: 'object' };
  const legacy =
    String(xrd['apiVersion']).endsWith('/v1') && (xrd['spec']?.['scope'] ?? 'LegacyCluster') === 'LegacyCluster';
  const conditions = {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        lastTransitionTime: { type: 'string' },
        message: { type: 'string' },
        reason: { type: 'string' },
        status: { type: 'string' },
        type: { type: 'string' },
        observedGeneration: { type: 'integer' },
      },
    },
  };
  const connectionDetails = { type: 'object', properties: { lastPublishedTime: { type: 'string' } } };
  const added: Json = legacy
    ? { conditions, connectionDetails, claimConditionTypes: { type: 'array', items: { type: 'string' } } }
    : { conditions, crossplane: { type: 'object', properties: { connectionDetails } } };
  return { ...declared, type: 'object', properties: { ...(declared['properties'] ?? {}), ...added } };
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function fits(type: string, v: unknown): boolean {
  const t = typeOf(v);
  return t === type || (type === 'number' && t === 'integer');
}

/**
 * What a structural schema would drop or reject in `value`: fields that are
 * not declared (pruned), values of the wrong type, values outside an enum.
 * `required` is not checked: a status is written piece by piece.
 */
export function undeclared(value: unknown, schema: Json, path = 'status'): XrdProblem[] {
  const problems: XrdProblem[] = [];
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && !schema['properties']) return problems;
  const type: unknown = schema['type'];
  if (schema['x-kubernetes-int-or-string'] === true) {
    if (!fits('integer', value) && !fits('string', value))
      problems.push({ path, message: `must be integer or string (got ${typeOf(value)})` });
    return problems;
  }
  if (typeof type === 'string' && !fits(type, value)) {
    problems.push({ path, message: `must be ${type} (got ${typeOf(value)} ${JSON.stringify(value)})` });
    return problems;
  }
  if (
    Array.isArray(schema['enum']) &&
    !schema['enum'].some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))
  ) {
    problems.push({
      path,
      message: `must be one of ${schema['enum'].map((e: unknown) => JSON.stringify(e)).join(', ')} (got ${JSON.stringify(value)})`,
    });
  }
  if (typeOf(value) === 'object') {
    const props: Json | undefined = schema['properties'];
    const additional: unknown = schema['additionalProperties'];
    const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
    for (const [k, v] of Object.entries(value as Json)) {
      const child = `${path}.${k}`;
      if (props && k in props) problems.push(...undeclared(v, props[k], child));
      else if (typeof additional === 'object' && additional !== null)
        problems.push(...undeclared(v, additional as Json, child));
      else if (additional === true || preserve) continue;
      else problems.push({ path: child, message: `not declared in the XRD status schema: Crossplane drops it` });
    }
  } else if (typeOf(value) === 'array' && typeof schema['items'] === 'object') {
    for (const [i, item] of (value as unknown[]).entries())
      problems.push(...undeclared(item, schema['items'], `${path}[${i}]`));
  }
  return problems;
}
