// Every scenario of examples/scenarios.yaml, rendered in-process the way
// Crossplane runs the step (requirements answered from the scenario's
// `required` file), must compose only objects the API server accepts as
// written: each composed resource is validated against the real published
// schemas in ../shared/crds, and so is every manifest a provider-kubernetes
// Object wraps. The XR status must only use fields the XRD declares.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import {
  assemble,
  buildRequest,
  RESOURCE_NAME_ANNOTATION,
  readYamlObjects,
  runWithRequirements,
} from '../../src/render.js';
import { repoRoot } from '../support/function-process.js';
import { type SchemaProblem, hasSchema, validateObject } from '../support/schemas.js';
import { undeclared, xrdFor, xrStatusSchema } from '../support/xrd.js';

const EXAMPLES = join(repoRoot, 'examples');

interface Scenario {
  xr: string;
  required?: string;
  observed: string[];
}

const scenarios = parse(readFileSync(join(EXAMPLES, 'scenarios.yaml'), 'utf8')) as Scenario[];

/** Kinds provider-kubernetes wraps: the Object's manifest is applied as its own kind. */
const WRAPPERS = new Set([
  'kubernetes.crossplane.io/v1alpha2/Object',
  'kubernetes.m.crossplane.io/v1alpha1/Object',
  'kubernetes.crossplane.io/v1alpha1/Object',
]);

function label(obj: Obj): string {
  const meta = (obj['metadata'] ?? {}) as Obj;
  const annotations = (meta['annotations'] ?? {}) as Obj;
  const key = annotations[RESOURCE_NAME_ANNOTATION];
  return `${String(obj['apiVersion'])} ${String(obj['kind'])} ${String(meta['name'] ?? meta['generateName'] ?? '?')}${key ? ` (key ${String(key)})` : ''}`;
}

function validate(obj: Obj, where: string): string[] {
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return [`${where}: no apiVersion/kind`];
  if (!hasSchema(apiVersion, kind))
    return [`${where}: no published schema for ${apiVersion} ${kind} in ../shared/crds`];
  const problems: SchemaProblem[] = validateObject(obj);
  return problems.map((p) => `${where}: ${p.path}: ${p.message}`);
}

/** Problems of one composed resource and, for a provider-kubernetes Object, of the manifest it wraps. */
function problemsOf(obj: Obj): string[] {
  const where = label(obj);
  const out = validate(obj, where);
  if (WRAPPERS.has(`${String(obj['apiVersion'])}/${String(obj['kind'])}`)) {
    const manifest = ((obj['spec'] as Obj | undefined)?.['forProvider'] as Obj | undefined)?.['manifest'];
    if (manifest === undefined || manifest === null || typeof manifest !== 'object')
      out.push(`${where}: spec.forProvider.manifest is missing`);
    else out.push(...validate(manifest as Obj, `${where} → manifest ${label(manifest as Obj)}`));
  }
  return out;
}

function renderScenario(s: Scenario, observedFile: string) {
  const [xr] = readYamlObjects(join(EXAMPLES, s.xr));
  assert.ok(xr, `${s.xr} has no document`);
  const observed = readYamlObjects(join(EXAMPLES, observedFile));
  const required = s.required ? readYamlObjects(join(EXAMPLES, s.required)) : [];
  // render() of src/render.ts, in its parts: the raw response is needed too, for the desired XR status.
  const rsp = runWithRequirements((req) => runFunction(req), buildRequest(xr, observed), required);
  return { xr, rsp, rendered: assemble(xr, rsp) };
}

describe('composed resources match the published schemas, for every scenario', () => {
  for (const s of scenarios) {
    for (const observedFile of s.observed) {
      const name = `${s.xr}${s.required ? ` (required ${s.required})` : ''} with ${observedFile}`;

      it(`${name}: every composed resource and wrapped manifest is valid`, () => {
        const { rendered } = renderScenario(s, observedFile);
        assert.equal(rendered.fatal, undefined, `the render failed: ${rendered.fatal}`);
        assert.ok(rendered.resources.length > 0, 'nothing composed');
        const problems = rendered.resources.flatMap(problemsOf);
        assert.deepEqual(problems, [], `schema problems:\n  ${problems.join('\n  ')}`);
      });

      it(`${name}: the XR status uses only fields the XRD declares`, () => {
        const { xr, rsp, rendered } = renderScenario(s, observedFile);
        const apiVersion = String(xr['apiVersion']);
        const xrd = xrdFor(apiVersion, String(xr['kind']));
        assert.ok(xrd, `no XRD in package/configuration/apis serves ${apiVersion} ${String(xr['kind'])}`);
        const schema = xrStatusSchema(xrd, apiVersion.split('/')[1]!);

        // What the function asks Crossplane to write: conditions belong to
        // Crossplane (response.conditions), never to the desired XR status.
        const desiredStatus = ((rsp.desired?.composite?.resource ?? {}) as Obj)['status'] as Obj | undefined;
        assert.ok(desiredStatus, 'the function returned no desired XR status');
        assert.equal(
          desiredStatus['conditions'],
          undefined,
          'the desired XR status sets conditions; return them as response.conditions instead',
        );
        const fromFunction = undeclared(desiredStatus, schema);
        assert.deepEqual(
          fromFunction,
          [],
          `desired XR status:\n  ${fromFunction.map((p) => `${p.path}: ${p.message}`).join('\n  ')}`,
        );

        // And the XR as render lays it out, conditions included.
        const all = undeclared(rendered.xr['status'] ?? {}, schema);
        assert.deepEqual(all, [], `rendered XR status:\n  ${all.map((p) => `${p.path}: ${p.message}`).join('\n  ')}`);
      });
    }
  }

  it('covers both blueprints', () => {
    const kinds = new Set(scenarios.map((s) => String(readYamlObjects(join(EXAMPLES, s.xr))[0]?.['kind'])));
    assert.ok(kinds.has('Widget') && kinds.has('Database'), `scenario kinds: ${[...kinds].join(', ')}`);
  });
});

describe('the schema check itself', () => {
  it('finds a field a wrapped manifest does not have', () => {
    const object: Obj = {
      apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
      kind: 'Object',
      metadata: { name: 'x', namespace: 'team-a' },
      spec: {
        forProvider: {
          manifest: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'x' }, spec: { size: '1Gi' } },
        },
      },
    };
    assert.deepEqual(problemsOf(object), [
      'kubernetes.m.crossplane.io/v1alpha1 Object x → manifest v1 PersistentVolumeClaim x: spec.size: unknown field "size"',
    ]);
  });

  it('finds an undeclared status field', () => {
    const xrd = xrdFor('example.com/v1', 'Database');
    assert.ok(xrd);
    const schema = xrStatusSchema(xrd, 'v1');
    assert.deepEqual(
      undeclared(
        { ready: true, phase: 'Ready', conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }] },
        schema,
      ),
      [],
    );
    assert.deepEqual(
      undeclared({ ready: 'yes', backup: { lastSuccessfulTime: 'x', size: 3 }, extra: 1 }, schema).map((p) => p.path),
      ['status.ready', 'status.backup.size', 'status.extra'],
    );
  });
});
