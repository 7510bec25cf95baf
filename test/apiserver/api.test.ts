// Our API against a real kube-apiserver: the CRDs a Crossplane cluster has,
// our XRDs, Compositions and package metadata, the XR CRDs Crossplane
// generates from the XRDs, and every example Widget and Database, judged by
// the server's own validation (OpenAPI, defaults, CEL, transition rules).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import { buildRequest } from '../../src/render.js';
import type { ValidateFunction } from 'ajv';
import * as generated from '../../src/generated/validators.js';
import { specValidator } from '../../src/spec/validate.js';
import { type ApiServer, ApiError, apiServerSkipReason, type Json, startApiServer } from '../support/apiserver.js';
import {
  ensureNamespace,
  establishXrd,
  installCrds,
  namespaceOf,
  packageDocs,
  sharedCrds,
} from '../support/cluster.js';
import { MANIFEST } from '../../src/blueprints/manifest.js';
import { exampleXRs, readYamlDocs } from '../support/crank.js';
import { crossplaneReady, startCrossplane } from '../support/control-plane.js';

const skip = apiServerSkipReason('API server: CRDs, XRDs and examples');

/** Each blueprint's spec validator, by the kind of its examples. */
const validators: Record<string, (spec: unknown) => unknown> = Object.fromEntries(
  MANIFEST.map((b) => [b.kinds[0], specValidator((generated as Record<string, unknown>)[b.name] as ValidateFunction)]),
);

/** What the function answers for this object: its Fatal message, if any. */
function functionFatal(obj: Json): string | undefined {
  const rsp = runFunction(buildRequest(obj, []));
  return rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL)?.message;
}

function functionWarnings(obj: Json): string {
  return runFunction(buildRequest(obj, []))
    .results.filter((r) => r.severity === Severity.SEVERITY_WARNING)
    .map((r) => r.message)
    .join('\n');
}

async function rejectionOf(p: Promise<unknown>): Promise<ApiError | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
}

const examples = MANIFEST.flatMap((b) => exampleXRs(b.examples, b.kinds[0]!));

describe('a real API server accepts our API', { skip }, () => {
  let api: ApiServer;
  before(async () => {
    api = await startApiServer();
    console.log(`# kube-apiserver ready at ${api.url} in ${api.startupMs} ms`);
  });
  after(async () => {
    await api?.stop();
  });

  it('installs every CRD of Crossplane, the providers and CloudNativePG (../shared/crds)', async () => {
    const crds = sharedCrds(api.caPem);
    assert.ok(crds.length >= 20, `only ${crds.length} CRDs found`);
    await installCrds(
      api.client,
      crds.map((c) => c.crd),
    );
    await ensureNamespace(api.client, 'crossplane-system');
    for (const { crd } of crds) {
      const stored = await api.client.waitEstablished(crd['metadata']['name']);
      assert.deepEqual(stored['status']['acceptedNames']['kind'], crd['spec']['names']['kind']);
    }
  });

  for (const mode of ['namespaced', 'claims'] as const) {
    it(`accepts the ${mode} Configuration's XRDs, Compositions and package metadata (strict field validation)`, async () => {
      const { xrds, compositions, meta } = packageDocs(mode);
      assert.equal(xrds.length, MANIFEST.length, 'an XRD per blueprint');
      assert.equal(compositions.length, MANIFEST.length, 'a Composition per blueprint');
      assert.equal(meta.length, 1);
      for (const obj of [...xrds, ...compositions]) {
        // The claims package is judged without being stored: its claims share the namespaced XRs' CRD
        // names, and a cluster has one package or the other (Crossplane, started below, would race them).
        const dryRun = mode === 'claims';
        const stored = await api.client.createObj(obj, { fieldManager: 'kubectl', fieldValidation: 'Strict', dryRun });
        assert.equal(stored['metadata']['name'], obj['metadata']['name']);
      }
      for (const m of meta)
        await api.client.createObj(
          { ...m, metadata: { ...m['metadata'], namespace: 'crossplane-system' } },
          { fieldValidation: 'Strict' },
        );
      // The only warnings: v1 XRDs (the claims package) are deprecated, as Crossplane says.
      const warnings = api.client.warnings.splice(0).map((w) => w.warning);
      const deprecated =
        'CompositeResourceDefinition v1 is deprecated and will be removed in a future release; consider migrating to v2';
      assert.deepEqual(warnings, mode === 'claims' ? MANIFEST.map(() => deprecated) : []);
    });
  }

  it("accepts the Function package metadata, its input CRD, the RBAC and the examples' Function and Compositions", async () => {
    api.client.warnings.splice(0);
    await api.client.createObj(
      {
        ...readYamlDocs('package/function/crossplane.yaml')[0]!,
        metadata: {
          ...readYamlDocs('package/function/crossplane.yaml')[0]!['metadata'],
          namespace: 'crossplane-system',
        },
      },
      { fieldValidation: 'Strict' },
    );
    const inputCrd = readYamlDocs('package/function/input/platform.fn.example.com_inputs.yaml')[0]!;
    await installCrds(api.client, [inputCrd]);
    for (const doc of readYamlDocs('package/rbac/aggregate-to-crossplane.yaml'))
      await api.client.createObj(doc, { fieldValidation: 'Strict' });
    for (const doc of readYamlDocs('examples/functions.yaml'))
      await api.client.createObj(doc, { fieldValidation: 'Strict' });
    // The examples' Compositions carry the packages' names: the server judges them without storing them.
    for (const f of ['examples/widget/composition.yaml', 'examples/database/composition.yaml']) {
      for (const doc of readYamlDocs(f))
        await api.client.applyObj(doc, {
          fieldManager: 'kubectl',
          fieldValidation: 'Strict',
          dryRun: true,
          force: true,
        });
    }
    assert.deepEqual(api.client.warnings, []);
  });

  it('the XRDs are stored as written (v2 XRDs keep scope Namespaced)', async () => {
    for (const xrd of packageDocs('namespaced').xrds) {
      const stored = await api.client.getObj(xrd);
      assert.equal(stored?.['apiVersion'], 'apiextensions.crossplane.io/v2');
      assert.equal(stored?.['spec']['scope'], 'Namespaced');
      assert.deepEqual(
        stored?.['spec']['versions'][0]['schema'],
        xrd['spec']['versions'][0]['schema'],
        'the schema is kept verbatim',
      );
    }
  });

  it('real Crossplane turns each namespaced XRD into its CRD, and the server establishes it', async () => {
    const crossplane = await startCrossplane(api, api.dir);
    await crossplaneReady(crossplane);
    const establishing = packageDocs('namespaced').xrds.map((xrd) => establishXrd(api.client, xrd));
    await Promise.all(establishing);
    // Only the CRDs are wanted: the suite judges what the server accepts, with nothing acting on it.
    await crossplane.proc.stop();
    for (const xrd of packageDocs('namespaced').xrds) {
      const crds = await establishXrd(api.client, xrd);
      assert.equal(crds.length, 1);
      const crd = (await api.client.getObj(crds[0]!))!;
      assert.equal(crd['spec']['scope'], 'Namespaced');
      const props = crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties'];
      assert.ok(props['spec']['properties']['crossplane']['properties']['compositionRef']);
      assert.ok(props['status']['properties']['conditions']);
      const columns = crd['spec']['versions'][0]['additionalPrinterColumns'].map((c: Json) => c['name']);
      assert.deepEqual(columns.slice(-5), ['SYNCED', 'READY', 'COMPOSITION', 'COMPOSITIONREVISION', 'AGE']);
    }
    for (const ns of ['team-a', 'team-b', 'team-c']) await ensureNamespace(api.client, ns);
  });

  for (const file of examples) {
    it(`${file}: accepted, with the server's defaults equal to the function's`, async () => {
      const example = readYamlDocs(file)[0]!;
      const namespace = namespaceOf(example);
      const obj: Json = { ...example, metadata: { ...example['metadata'], namespace } };
      delete obj['status'];
      const stored = await api.client.createObj(obj, { fieldManager: 'kubectl', fieldValidation: 'Strict' });
      try {
        const ours = validators[String(example['kind'])]!(example['spec']);
        assert.deepEqual(
          stored['spec'],
          ours,
          'the spec the server stores (its defaults applied) is the spec the function works with',
        );
        assert.equal(functionFatal(stored), undefined, 'the function accepts what the server stored');
      } finally {
        await api.client.deleteObj(stored);
      }
    });
  }

  it("an object without spec: the server requires spec, the XRD's `spec: default: {}` does not reach the CRD", async () => {
    // Crossplane copies only description, required, validations, oneOf and
    // properties of spec into the CRD; its base schema requires spec.
    const err = await rejectionOf(
      api.client.createObj(
        { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'no-spec', namespace: 'team-a' } },
        { fieldValidation: 'Strict' },
      ),
    );
    assert.ok(err, 'the server accepted a Widget without spec');
    assert.equal(err.code, 422);
    assert.match(err.serverMessage, /spec: Required value/);
    // The function says the same in its own words.
    assert.match(
      functionFatal({
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'no-spec', namespace: 'team-a' },
      }) ?? '',
      /spec is missing/,
    );
  });

  // Invalid objects, on create: the server's message, and the function must refuse them too.
  const invalid: Array<{
    name: string;
    kind: 'Widget' | 'Database';
    spec: Json;
    server: RegExp;
    ours: RegExp;
    code?: number;
    warns?: boolean;
  }> = [
    {
      name: 'bad color',
      kind: 'Widget',
      spec: { color: 'Blue_1', size: 3 },
      server:
        /spec\.color: Invalid value: "Blue_1": spec\.color in body should match '\^\[a-z0-9\]\(\[-a-z0-9\]\*\[a-z0-9\]\)\?\$'/,
      ours: /spec\.color is "Blue_1"/,
    },
    {
      name: 'size 101',
      kind: 'Widget',
      spec: { size: 101 },
      server: /spec\.size: Invalid value: 101: spec\.size in body should be less than or equal to 100/,
      ours: /spec\.size is 101; it must be from 1 to 100/,
    },
    {
      name: 'size 0',
      kind: 'Widget',
      spec: { size: 0 },
      server: /spec\.size: Invalid value: 0: spec\.size in body should be greater than or equal to 1/,
      ours: /spec\.size is 0/,
    },
    {
      name: 'autoscale below size',
      kind: 'Widget',
      spec: { size: 5, autoscale: { maxSize: 2 } },
      server: /spec\.autoscale\.maxSize: Invalid value: spec\.autoscale\.maxSize must be at least spec\.size/,
      ours: /spec\.autoscale\.maxSize must be at least spec\.size/,
    },
    {
      name: 'env name',
      kind: 'Widget',
      spec: { env: { '1A': 'x' } },
      server: /spec\.env: Invalid value: env names must be letters, digits and underscores/,
      ours: /env names must be/,
    },
    {
      name: 'an RDS snapshot to restore in the cluster',
      kind: 'Database',
      spec: { storageGB: 20, restore: { fromSnapshot: { identifier: 'orders-final' } } },
      server: /spec\.restore\.fromSnapshot: Invalid value: .*only placement aws restores from/,
      ours: /spec\.restore\.fromSnapshot names an RDS snapshot, which only placement aws restores from/,
    },
    {
      name: 'a dump to restore on AWS',
      kind: 'Database',
      spec: {
        placement: 'aws',
        storageGB: 20,
        aws: { region: 'eu-west-1' },
        restore: { fromDump: { location: 's3://team-a-backups/orders/last-dump-0a1b2c3d.dump' } },
      },
      server: /spec\.restore\.fromDump: Invalid value: .*only a Database in a StatefulSet/,
      ours: /spec\.restore\.fromDump names a dump, which only a Database in a StatefulSet restores/,
    },
    {
      name: 'two sources to restore from',
      kind: 'Database',
      spec: {
        placement: 'aws',
        storageGB: 20,
        aws: { region: 'eu-west-1' },
        restore: { fromSnapshot: { identifier: 'orders-final' }, fromBackup: { name: 'orders-db-202612020300' } },
      },
      server: /spec\.restore needs exactly one of fromBackup, fromDatabase, fromSnapshot and fromDump/,
      ours: /spec\.restore needs exactly one of fromBackup, fromDatabase, fromSnapshot and fromDump/,
    },
    {
      name: 'unknown field',
      kind: 'Widget',
      spec: { colour: 'blue' },
      server: /strict decoding error: unknown field "spec\.colour"/,
      code: 400,
      // A cluster rejects it (strict validation) or prunes it, so the function never sees it
      // there; a local render does, and says so as the server would when not strict: a warning.
      ours: /spec\.colour is not a field and is ignored; did you mean spec\.color\?/,
      warns: true,
    },
    {
      name: 'aws below 20 GB',
      kind: 'Database',
      spec: { placement: 'aws', storageGB: 10, aws: { region: 'eu-west-1' } },
      server: /spec\.storageGB: Invalid value: spec\.storageGB must be at least 20 with placement aws/,
      ours: /spec\.storageGB must be at least 20/,
    },
    {
      name: 'HA mysql in the cluster',
      kind: 'Database',
      spec: { engine: 'mysql', highAvailability: true },
      server: /spec\.highAvailability: Invalid value: highAvailability in the cluster needs engine postgres/,
      ours: /highAvailability in the cluster needs engine postgres/,
    },
    {
      name: 'version the engine lacks',
      kind: 'Database',
      spec: { engine: 'mysql', version: '16' },
      server: /spec\.version: Invalid value: spec\.version must be one the engine supports/,
      ours: /spec\.version must be one the engine supports/,
    },
    {
      name: 'bad engine',
      kind: 'Database',
      spec: { engine: 'oracle' },
      server: /spec\.engine: Unsupported value: "oracle": supported values: "postgres", "mysql"/,
      ours: /spec\.engine is "oracle"/,
    },
  ];
  for (const c of invalid) {
    const obj = {
      apiVersion: 'example.com/v1',
      kind: c.kind,
      metadata: { name: `bad-${c.name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`, namespace: 'team-a' },
      spec: c.spec,
    };
    it(`the server rejects a ${c.kind} with ${c.name}`, async () => {
      const err = await rejectionOf(api.client.createObj(obj, { fieldManager: 'kubectl', fieldValidation: 'Strict' }));
      assert.ok(err, `the server accepted ${JSON.stringify(c.spec)}`);
      assert.equal(err.code, c.code ?? 422, err.message);
      assert.match(err.serverMessage, c.server);
    });
    it(`the function ${c.warns ? 'warns about' : 'refuses'} a ${c.kind} with ${c.name} too`, () => {
      if (c.warns) assert.match(functionWarnings(obj), c.ours);
      else assert.match(functionFatal(obj) ?? '(accepted)', c.ours);
    });
  }

  // Issue 28: the platform may give the region (the Composition's Input), so the server takes a Database on AWS
  // without one; the function refuses it when nothing gives one, naming the field and where the platform sets it.
  it('the server accepts a Database on AWS without a region; the function refuses it when the platform gives none', async () => {
    const obj = {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: { name: 'aws-no-region', namespace: 'team-a' },
      spec: { placement: 'aws', storageGB: 20 },
    };
    const made = await api.client.createObj(obj, { fieldManager: 'kubectl', fieldValidation: 'Strict' });
    assert.equal(made['spec']['aws'], undefined);
    assert.match(
      functionFatal(made) ?? '(accepted)',
      /spec\.aws\.region is required with placement aws \(the platform may set one: defaults\.database\.aws\.region/,
    );
    await api.client.deleteObj(made);
  });

  // Specs at the edges that the server accepts: the function must take them too.
  const accepted: Array<{ name: string; kind: 'Widget' | 'Database'; spec: Json }> = [
    { name: 'color of 30 characters', kind: 'Widget', spec: { color: 'a'.repeat(30) } },
    { name: 'env value of 32768 characters', kind: 'Widget', spec: { env: { A: 'x'.repeat(32768) } } },
    {
      name: 'env value of 20000 emoji (runes, not UTF-16 units)',
      kind: 'Widget',
      spec: { env: { A: '\u{1F600}'.repeat(20000) } },
    },
    {
      name: 'null for defaulted fields (pruned, then defaulted)',
      kind: 'Widget',
      spec: { size: null, color: null, resources: null },
    },
    { name: 'a region of three parts', kind: 'Database', spec: { placement: 'aws', aws: { region: 'us-gov-west-1' } } },
    {
      name: 'an image with a no-break space',
      kind: 'Widget',
      // The XRD's patterns name ASCII white space: RE2 (the server) and JavaScript (the function) agree on it.
      spec: { image: 'nginx\u00a0:1' },
    },
  ];
  accepted.forEach((c, i) => {
    it(`the server accepts a ${c.kind} with ${c.name}, and so does the function`, async () => {
      const obj = {
        apiVersion: 'example.com/v1',
        kind: c.kind,
        metadata: { name: `edge-${i + 1}`, namespace: 'team-a' },
        spec: c.spec,
      };
      const stored = await api.client.createObj(obj, { fieldValidation: 'Strict' });
      try {
        assert.equal(functionFatal(stored), undefined);
      } finally {
        await api.client.deleteObj(stored);
      }
    });
  });

  it('an object bigger than the API server takes is refused though the schema allows it (env: 100 values of 32768 characters)', async () => {
    const spec = { env: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`K${i}`, 'v'.repeat(32768)])) };
    const err = await rejectionOf(
      api.client.createObj(
        { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'huge', namespace: 'team-a' }, spec },
        { fieldValidation: 'Strict' },
      ),
    );
    assert.ok(err);
    assert.equal(err.code, 413);
    assert.match(err.serverMessage, /Request entity too large: limit is 3145728/);
  });

  // Transition rules run on update only: create, then update.
  const transitions: Array<{ name: string; from: Json; to: Json; server: RegExp }> = [
    {
      name: 'storage shrink from 20 to 10',
      from: { storageGB: 20 },
      to: { storageGB: 10 },
      server: /spec\.storageGB: Invalid value: 10: spec\.storageGB may grow but never shrink/,
    },
    {
      name: 'engine change',
      from: { engine: 'postgres' },
      to: { engine: 'mysql' },
      server: /spec\.engine: Invalid value: "mysql": spec\.engine cannot be changed once the Database exists/,
    },
    {
      name: 'placement change',
      from: { placement: 'cluster', storageGB: 20 },
      to: { placement: 'aws', storageGB: 20, aws: { region: 'eu-west-1' } },
      server: /spec\.placement: Invalid value: "aws": spec\.placement cannot be changed once the Database exists/,
    },
  ];
  for (const t of transitions) {
    it(`rejects a Database update: ${t.name}`, async () => {
      const name = `tr-${t.name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`.slice(0, 50).replace(/-+$/, '');
      const created = await api.client.createObj(
        { apiVersion: 'example.com/v1', kind: 'Database', metadata: { name, namespace: 'team-a' }, spec: t.from },
        { fieldValidation: 'Strict' },
      );
      try {
        const err = await rejectionOf(
          api.client.updateObj({ ...created, spec: { ...created['spec'], ...t.to } }, { fieldValidation: 'Strict' }),
        );
        assert.ok(err, 'the server accepted the update');
        assert.equal(err.code, 422, err.message);
        assert.match(err.serverMessage, t.server);
        // Growing is fine.
        if (t.name.startsWith('storage'))
          await api.client.updateObj(
            { ...created, spec: { ...created['spec'], storageGB: 30 } },
            { fieldValidation: 'Strict' },
          );
      } finally {
        await api.client.deleteObj(created);
      }
    });
  }
});
