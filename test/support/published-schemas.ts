// Crossplane v2.2's calls with required schemas, played in-process. The
// schemas answered are a STAND-IN for what the API server publishes for a CRD
// (its openAPIV3Schema, metadata as ObjectMeta inlined into an allOf), built
// from ../shared/crds and Crossplane's own CRDs (.cache/crossplane-crds, from
// scripts/install-crossplane.sh); the answer of real Crossplane and a real API
// server is tested in test/e2e/claims.test.ts.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Capability,
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
} from '@crossplane-org/function-sdk-typescript';
import { parseAllDocuments } from 'yaml';
import { repoRoot, SHARED_CRDS } from '../../dev/infra/paths.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { answer } from '../../src/render.js';

const CRD_DIRS = [
  'provider-kubernetes',
  'provider-upjet-aws',
  'cert-manager',
  'cloudnative-pg',
  'prometheus-operator',
  'plugin-barman-cloud',
];

/** What Crossplane v2.2 says it can do, required schemas among it. */
export const WITH_SCHEMAS = [
  Capability.CAPABILITY_CAPABILITIES,
  Capability.CAPABILITY_REQUIRED_RESOURCES,
  Capability.CAPABILITY_CONDITIONS,
  Capability.CAPABILITY_REQUIRED_SCHEMAS,
];

let served: Map<string, Obj> | undefined;

/** "group/version/Kind" → the schema the API server publishes for it (the stand-in), read once. */
export function publishedSchemas(): Map<string, Obj> {
  if (served) return served;
  const objectMeta = (
    JSON.parse(readFileSync(join(SHARED_CRDS, 'kubernetes-openapi', 'api__v1_openapi.json'), 'utf8')) as {
      components: { schemas: Record<string, Obj> };
    }
  ).components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!;
  const out = new Map<string, Obj>();
  const folders = [...CRD_DIRS.map((d) => join(SHARED_CRDS, d)), join(repoRoot, '.cache', 'crossplane-crds')];
  for (const folder of folders.filter((f) => existsSync(f))) {
    for (const file of readdirSync(folder).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(join(folder, file), 'utf8'))) {
        const crd = doc.toJS() as Obj;
        if (crd?.['kind'] !== 'CustomResourceDefinition') continue;
        const spec = crd['spec'] as Obj;
        for (const v of spec['versions'] as Obj[]) {
          const root = structuredClone((v['schema'] as Obj)['openAPIV3Schema'] as Obj);
          (root['properties'] as Obj)['metadata'] = { allOf: [objectMeta] };
          out.set(`${String(spec['group'])}/${String(v['name'])}/${String((spec['names'] as Obj)['kind'])}`, root);
        }
      }
    }
  }
  served = out;
  return out;
}

/** The schema served for a kind, or undefined when nothing serves it. */
export type Served = (apiVersion: string, kind: string) => Obj | undefined;
export const servedFromShared: Served = (apiVersion, kind) => publishedSchemas().get(`${apiVersion}/${kind}`);

/**
 * A step run as Crossplane v2.2 runs it: called again, its requirements
 * answered, until two answers in a row ask for the same. The function asks
 * for each resource twice (as required and as extra resources, for v1 and
 * v2), and v2.2.1 answers both. The calls' answers, and the last request.
 */
export function runAsCrossplane(
  base: RunFunctionRequest,
  available: Obj[],
  served: Served,
): { calls: RunFunctionResponse[]; request: RunFunctionRequest } {
  const calls: RunFunctionResponse[] = [];
  let req = base;
  let asked = '';
  for (let i = 0; i < 6; i++) {
    const rsp = runFunction(req);
    calls.push(rsp);
    if (rsp.results.some((r) => r.severity === Severity.SEVERITY_FATAL)) return { calls, request: req };
    const now = JSON.stringify(rsp.requirements ?? {});
    if (now === asked) return { calls, request: req };
    asked = now;
    const requiredSchemas: RunFunctionRequest['requiredSchemas'] = {};
    for (const [name, sel] of Object.entries(rsp.requirements?.schemas ?? {})) {
      const schema = served(sel!.apiVersion, sel!.kind);
      requiredSchemas[name] = schema ? { openapiV3: schema } : {};
    }
    const resources = answer(rsp.requirements, available);
    req = { ...base, requiredResources: resources, extraResources: resources, requiredSchemas };
  }
  throw new Error('requirements did not settle');
}
