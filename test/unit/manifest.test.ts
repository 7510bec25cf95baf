// The blueprint manifest is the one list: dispatch serves exactly what it
// names, with its kinds and condition types, and the Input CRD offers exactly
// its names (the generator writes the enum; spec.test checks it is current).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { BLUEPRINTS } from '../../src/blueprints/dispatch.js';
import { MANIFEST } from '../../src/blueprints/manifest.js';
import { repoRoot } from '../../dev/infra/paths.js';

describe('the blueprint manifest', () => {
  test('dispatch implements every blueprint the manifest names, and no other', () => {
    assert.deepEqual(
      BLUEPRINTS.map((b) => ({ name: b.name, kinds: [...b.kinds], conditionType: b.conditionType })),
      MANIFEST.map((b) => ({ name: b.name, kinds: b.kinds, conditionType: b.conditionType })),
    );
  });

  test('each entry names an XRD whose kind is the first of its kinds, and an examples folder', () => {
    for (const b of MANIFEST) {
      const xrd = parse(readFileSync(join(repoRoot, b.xrd), 'utf8')) as { spec: { names: { kind: string } } };
      assert.equal(xrd.spec.names.kind, b.kinds[0], b.xrd);
      assert.equal(b.kinds[1], `X${b.kinds[0]}`, 'the claims mode composite is the X-kind');
      assert.ok(
        readFileSync(join(repoRoot, 'package', 'configuration', 'apis', b.name, 'composition.yaml')),
        `${b.name} has a Composition`,
      );
    }
  });

  test('the Input CRD offers exactly the manifest’s blueprints', () => {
    const crd = parse(
      readFileSync(join(repoRoot, 'package/function/input/platform.fn.example.com_inputs.yaml'), 'utf8'),
    );
    assert.deepEqual(
      crd.spec.versions[0].schema.openAPIV3Schema.properties.blueprint.enum,
      MANIFEST.map((b) => b.name),
    );
  });
});
