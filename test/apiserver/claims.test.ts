// Claims mode against a real kube-apiserver: the legacy (v1) XRDs become a
// cluster-scoped XR CRD and a namespaced claim CRD, as Crossplane makes them;
// every example is accepted as a claim and as the composite Crossplane
// creates for it; what the function composes for that composite
// (provider-kubernetes Objects, cluster-scoped managed resources) and what
// the Objects wrap are accepted, and so is the status it writes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { render } from '../../src/render.js';
import type { ValidateFunction } from 'ajv';
import * as generated from '../../src/generated/validators.js';
import { specValidator } from '../../src/spec/validate.js';
import { type ApiServer, ApiError, apiServerSkipReason, type Json, startApiServer } from '../support/apiserver.js';
import { ensureNamespace, namespaceOf, prepareCluster } from '../support/cluster.js';
import { MANIFEST } from '../../src/blueprints/manifest.js';
import { exampleXRs, readYamlDocs } from '../support/crank.js';
import {
  composedFieldOwner,
  FIELD_OWNER_XR,
  LABEL_CLAIM_NAME,
  LABEL_CLAIM_NAMESPACE,
  LABEL_COMPOSITE,
  renderComposedMetadata,
} from '../support/composed-metadata.js';

const skip = apiServerSkipReason('API server: claims mode');

/** Each blueprint's spec validator, by the kind of its examples. */
const validators: Record<string, (spec: unknown) => unknown> = Object.fromEntries(
  MANIFEST.map((b) => [b.kinds[0], specValidator((generated as Record<string, unknown>)[b.name] as ValidateFunction)]),
);

/** Crossplane's machinery fields of legacy XRs and claims, directly under spec. */
const MACHINERY = new Set([
  'compositionRef',
  'compositionSelector',
  'compositionRevisionRef',
  'compositionRevisionSelector',
  'compositionUpdatePolicy',
  'compositeDeletePolicy',
  'resourceRef',
  'resourceRefs',
  'claimRef',
  'writeConnectionSecretToRef',
]);
const userSpec = (o: Json): Json =>
  Object.fromEntries(Object.entries(o['spec'] as Json).filter(([k]) => !MACHINERY.has(k)));

const examples = MANIFEST.flatMap((b) => exampleXRs(b.examples, b.kinds[0]!));

describe('claims mode against a real API server', { skip }, () => {
  let api: ApiServer;
  let generated: Json[] = [];
  before(async () => {
    api = await startApiServer();
    console.log(`# kube-apiserver ready at ${api.url} in ${api.startupMs} ms`);
    ({ generated } = await prepareCluster(api, 'claims'));
  });
  after(async () => {
    await api?.stop();
  });

  it('each v1 XRD yields a cluster-scoped XR CRD and a namespaced claim CRD, both Established', async () => {
    const byName = new Map(generated.map((c) => [String(c['metadata']['name']), c]));
    for (const [xrName, claimName] of [
      ['xwidgets.example.com', 'widgets.example.com'],
      ['xdatabases.example.com', 'databases.example.com'],
    ] as const) {
      const xr = (await api.client.getObj(byName.get(xrName)!))!;
      const claim = (await api.client.getObj(byName.get(claimName)!))!;
      assert.equal(xr['spec']['scope'], 'Cluster');
      assert.equal(claim['spec']['scope'], 'Namespaced');
      assert.ok(xr['spec']['names']['categories'].includes('composite'));
      assert.ok(claim['spec']['names']['categories'].includes('claim'));
      const xrSpec = xr['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties'];
      for (const f of ['compositionRef', 'claimRef', 'resourceRefs', 'writeConnectionSecretToRef'])
        assert.ok(xrSpec[f], `XR spec.${f}`);
      const claimSpec = claim['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties'];
      for (const f of ['compositionRef', 'resourceRef', 'writeConnectionSecretToRef', 'compositeDeletePolicy'])
        assert.ok(claimSpec[f], `claim spec.${f}`);
    }
  });

  examples.forEach((file, i) => {
    it(`${file}: accepted as a claim and as its composite; the composed objects and the status too`, async () => {
      const example = readYamlDocs(file)[0]!;
      const kind = String(example['kind']);
      // A namespace per example: examples reuse names, and what Objects wrap is applied for real.
      const namespace = `c${i + 1}-${namespaceOf(example)}`;
      const name = String(example['metadata']['name']);
      await ensureNamespace(api.client, namespace);
      // The claim, as the user applies it.
      const claim = await api.client.createObj(
        {
          apiVersion: example['apiVersion'],
          kind,
          metadata: { ...example['metadata'], namespace },
          spec: example['spec'],
        },
        { fieldManager: 'kubectl', fieldValidation: 'Strict' },
      );
      const ours = validators[kind]!(example['spec']);
      assert.deepEqual(userSpec(claim), ours, "the claim the server stores has the function's defaults");
      assert.equal(
        claim['spec']['compositeDeletePolicy'],
        'Background',
        "the XRD's defaultCompositeDeletePolicy reaches the claim",
      );
      // The composite Crossplane's claim controller creates for it.
      const xrName = `${`${name}-${namespace}`.slice(0, 57)}-x7k2p`;
      let xr = await api.client.createObj(
        {
          apiVersion: example['apiVersion'],
          kind: `X${kind}`,
          metadata: {
            name: xrName,
            labels: { [LABEL_CLAIM_NAME]: name, [LABEL_CLAIM_NAMESPACE]: namespace, [LABEL_COMPOSITE]: xrName },
          },
          spec: {
            ...example['spec'],
            claimRef: { apiVersion: example['apiVersion'], kind, name, namespace },
            compositionRef: { name: `x${kind.toLowerCase()}s.example.com` },
          },
        },
        { fieldManager: 'apiextensions.crossplane.io/claim', fieldValidation: 'Strict' },
      );
      assert.deepEqual(userSpec(xr), ours, 'the composite has the same defaults');
      assert.equal(
        xr['spec']['compositionUpdatePolicy'],
        'Automatic',
        "the XRD's defaultCompositionUpdatePolicy reaches the composite",
      );

      const required = file.includes('cluster-ha')
        ? readYamlDocs('examples/database/required/cnpg-installed.yaml')
        : [];
      const out = render(xr, [], [], undefined, required);
      assert.equal(out.fatal, undefined, out.fatal);
      const fieldManager = composedFieldOwner(xr);
      const problems: string[] = [];
      const before = api.client.warnings.length;
      for (const res of out.resources) {
        const key = String((res['metadata'] as Json)['annotations']['crossplane.io/composition-resource-name']);
        const cd = renderComposedMetadata(xr, key, res as Json);
        assert.equal(cd['metadata']['namespace'], undefined, `${key} is cluster-scoped`);
        try {
          await api.client.applyObj(cd, { fieldManager, force: true, dryRun: true });
          // What an Object wraps, applied for real by provider-kubernetes in the claim's namespace.
          if (cd['kind'] === 'Object')
            await api.client.applyObj(cd['spec']['forProvider']['manifest'], {
              fieldManager: 'kubernetes.crossplane.io',
              force: true,
            });
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          problems.push(`${key} ${cd['kind']} ${cd['metadata']['name']}: ${e.code} ${e.serverMessage}`);
        }
      }
      // The status the function wrote, applied as Crossplane does.
      try {
        xr = await api.client.applyStatus(
          {
            apiVersion: xr['apiVersion'],
            kind: xr['kind'],
            metadata: { name: xrName },
            status: {
              ...(out.xr['status'] as Json),
              conditions: (out.xr['status'] as Json)['conditions'].map((c: Json) => ({
                ...c,
                lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              })),
            },
          },
          { fieldManager: FIELD_OWNER_XR, force: true },
        );
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        problems.push(`status of ${xr['kind']} ${xrName}: ${e.code} ${e.serverMessage}`);
      }
      for (const w of api.client.warnings.slice(before)) problems.push(`${w.request}: WARNING ${w.warning}`);
      assert.deepEqual(problems, []);
      assert.equal(xr['status']['ready'], false);
      assert.ok(xr['status']['message']);
      await api.client.deleteObj(xr);
      await api.client.deleteObj(claim);
    });
  });
});
