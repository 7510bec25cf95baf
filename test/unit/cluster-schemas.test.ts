// Required schemas (Crossplane v2.2): the function asks for the schema of
// every CRD kind it composes and refuses, naming the field and the package,
// what the installed CRD does not have. The schemas answered here are a
// STAND-IN for what the API server publishes for a CRD
// (test/support/published-schemas.ts); the answer of real Crossplane and a
// real API server is tested in test/e2e/claims.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Capability, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { setClock } from '../../src/clock.js';
import { CRD_OWNERS, undeclaredPaths } from '../../src/cluster-schemas.js';
import { lastOfReconcile } from '../../src/events.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { SHARED_CRDS } from '../../dev/infra/paths.js';
import { repoRoot } from '../support/function-process.js';
import {
  publishedSchemas,
  runAsCrossplane,
  type Served,
  servedFromShared,
  WITH_SCHEMAS,
} from '../support/published-schemas.js';
import { EXAMPLES_NOW } from '../support/render-cases.js';

const EXAMPLES = join(repoRoot, 'examples');

/** The answers of a step run as Crossplane v2.2 runs it. */
const callsAsCrossplane = (...args: Parameters<typeof runAsCrossplane>) => runAsCrossplane(...args).calls;

interface Scenario {
  xr: string;
  required?: string;
  observed: string[];
}
const scenarios = parse(readFileSync(join(EXAMPLES, 'scenarios.yaml'), 'utf8')) as Scenario[];

function scenarioRequest(s: Scenario, observedFile: string, capabilities: Capability[]) {
  const [xr] = readYamlObjects(join(EXAMPLES, s.xr));
  const base = buildRequest(xr!, readYamlObjects(join(EXAMPLES, observedFile)));
  const required = s.required ? readYamlObjects(join(EXAMPLES, s.required)) : [];
  return { base: { ...base, meta: { tag: 'test', capabilities } }, required };
}

/** What a response composes; a Secret's data left out (a new password is drawn on each call until one exists). */
const composed = (rsp: RunFunctionResponse) =>
  Object.fromEntries(
    Object.entries(rsp.desired?.resources ?? {}).map(([k, r]) => {
      const o = r?.resource as Obj;
      return [k, o['kind'] === 'Secret' ? { ...o, data: undefined } : o];
    }),
  );

describe('required schemas: what is composed, checked against what the cluster serves', () => {
  // One instant for every call: what is composed with and without schemas is compared.
  let restore: () => void;
  before(() => {
    restore = setClock(() => new Date(EXAMPLES_NOW));
  });
  after(() => restore());

  it('every scenario: each CRD kind composed is asked for, nothing of Kubernetes itself; the shared CRDs accept all of it and the answer is the one composed without asking', () => {
    const kindsAsked = new Set<string>();
    for (const s of scenarios) {
      for (const observedFile of s.observed) {
        const where = `${s.xr} with ${observedFile}`;
        const { base, required } = scenarioRequest(s, observedFile, WITH_SCHEMAS);
        const calls = callsAsCrossplane(base, required, servedFromShared);
        const last = calls.at(-1)!;
        const fatal = last.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
        assert.equal(fatal, undefined, `${where}: ${fatal?.message}`);
        assert.deepEqual(
          last.results.filter((r) => r.reason === 'KindNotServed').map((r) => r.message),
          [],
          where,
        );
        // A call whose schemas are not answered yet is not the one Crossplane acts on (its events wait).
        if (Object.keys(calls[0]!.requirements?.schemas ?? {}).length > 0)
          assert.equal(lastOfReconcile(base, calls[0]!), false, where);
        for (const sel of Object.values(last.requirements?.schemas ?? {})) {
          const group = sel!.apiVersion.split('/')[0]!;
          assert.ok(group.includes('.') && !group.endsWith('.k8s.io'), `${where}: asked for ${sel!.apiVersion}`);
          assert.ok(
            publishedSchemas().has(`${sel!.apiVersion}/${sel!.kind}`),
            `${where}: ${sel!.apiVersion} ${sel!.kind}`,
          );
          kindsAsked.add(`${sel!.apiVersion} ${sel!.kind}`);
        }
        // The same resources as a caller that answers no schemas gets.
        const without = scenarioRequest(s, observedFile, []);
        const plain = callsAsCrossplane(without.base, without.required, () => undefined).at(-1)!;
        assert.deepEqual(composed(last), composed(plain), where);
        assert.deepEqual(
          Object.keys(plain.requirements?.schemas ?? {}),
          [],
          `${where}: no schemas asked of a caller without them`,
        );
      }
    }
    // The scenarios reach the providers' and operators' kinds (not only Kubernetes' own).
    for (const k of ['rds.aws.m.upbound.io/v1beta1 Instance', 'postgresql.cnpg.io/v1 Cluster'])
      assert.ok(kindsAsked.has(k), `${k} among ${[...kindsAsked].join(', ')}`);
  });

  it('a field the installed CRD lacks: Fatal naming it and the package whose revision installed the CRD; nothing desired', () => {
    const s = scenarios.find((x) => x.xr === 'database/aws.yaml')!;
    const { base, required } = scenarioRequest(s, s.observed[0]!, WITH_SCHEMAS);
    // An older provider-aws-rds: its Instance has no storageEncrypted.
    const older: Served = (apiVersion, kind) => {
      const schema = servedFromShared(apiVersion, kind);
      if (!schema || kind !== 'Instance' || !apiVersion.startsWith('rds.')) return schema;
      const trimmed = structuredClone(schema);
      const forProvider = (((trimmed['properties'] as Obj)['spec'] as Obj)['properties'] as Obj)['forProvider'] as Obj;
      delete (forProvider['properties'] as Obj)['storageEncrypted'];
      return trimmed;
    };
    const revision = {
      apiVersion: 'pkg.crossplane.io/v1',
      kind: 'ProviderRevision',
      metadata: { name: 'provider-aws-rds-0a1b2c3d', labels: { 'pkg.crossplane.io/package': 'provider-aws-rds' } },
      spec: { desiredState: 'Active', image: 'xpkg.example/crossplane-contrib/provider-aws-rds:v1.9.0' },
      status: {
        objectRefs: [
          {
            apiVersion: 'apiextensions.crossplane.io/v1alpha1',
            kind: 'ManagedResourceDefinition',
            name: 'instances.rds.aws.m.upbound.io',
          },
        ],
      },
    };
    const inactive = {
      ...revision,
      metadata: { ...revision.metadata, name: 'provider-aws-rds-ffffffff' },
      spec: { desiredState: 'Inactive', image: 'xpkg.example/crossplane-contrib/provider-aws-rds:v1.8.0' },
    };
    // The installed CRD, as old as the schema served from it.
    const installedCrd = (trimmed: boolean): Obj => {
      const [crd] = readYamlObjects(join(SHARED_CRDS, 'provider-upjet-aws', 'rds.aws.m.upbound.io_instances.yaml'));
      const copy = structuredClone(crd!);
      if (trimmed)
        for (const v of (copy['spec'] as Obj)['versions'] as Obj[]) {
          const spec = ((v['schema'] as Obj)['openAPIV3Schema'] as Obj)['properties'] as Obj;
          delete ((((spec['spec'] as Obj)['properties'] as Obj)['forProvider'] as Obj)['properties'] as Obj)[
            'storageEncrypted'
          ];
        }
      return copy;
    };
    // A schema Crossplane fetched just before the API server published the upgraded CRD: the CRD has the
    // field, so nothing is refused and the instance is composed as usual.
    const stale = callsAsCrossplane(base, [...required, inactive, revision, installedCrd(false)], older).at(-1)!;
    assert.equal(
      stale.results.find((r) => r.severity === Severity.SEVERITY_FATAL),
      undefined,
      'a stale schema is not a refusal',
    );
    assert.ok(stale.desired?.resources?.['rds-instance'], 'composed');
    const calls = callsAsCrossplane(base, [...required, inactive, revision, installedCrd(true)], older);
    const last = calls.at(-1)!;
    // The revisions are asked for only once a field is missing: one more call than the accepted render.
    assert.ok(
      calls.some((c) => c.requirements?.resources?.[CRD_OWNERS]),
      'the ProviderRevisions asked for',
    );
    assert.ok(calls.length <= 6, `${calls.length} calls: within Crossplane's six`);
    const fatal = last.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
    assert.ok(fatal, 'Fatal');
    assert.equal(fatal.reason, 'SchemaMismatch');
    assert.match(
      fatal.message,
      /^Instance rds\.aws\.m\.upbound\.io\/v1beta1 in this cluster has no field spec\.forProvider\.storageEncrypted \(resource [a-z-]+\); its CRD was installed by provider-aws-rds v1\.9\.0, older than this function composes for: upgrade it\. Nothing was applied\.$/,
    );
    assert.deepEqual(Object.keys(last.desired?.resources ?? {}), [], 'nothing desired: Crossplane applies nothing');
  });

  it('a kind nothing serves is said once some kind is served; a caller that answers every schema empty (crossplane render without schemas) hears nothing', () => {
    const s = scenarios.find((x) => x.xr === 'database/cluster-provisioned-store.yaml')!;
    const { base, required } = scenarioRequest(s, s.observed[0]!, WITH_SCHEMAS);
    // No IAM provider installed: the bucket's kinds are served, the user, its key and policy are not.
    const noIam: Served = (apiVersion, kind) =>
      apiVersion.startsWith('iam.') ? undefined : servedFromShared(apiVersion, kind);
    const said = callsAsCrossplane(base, required, noIam).at(-1)!;
    const notServed = said.results.filter((r) => r.reason === 'KindNotServed').map((r) => r.message);
    assert.ok(notServed.length > 0, 'said');
    for (const m of notServed)
      assert.match(
        m,
        /^this cluster serves no (User|AccessKey|Policy|UserPolicyAttachment) \(iam\.aws\.m\.upbound\.io\/v1beta1\): install the provider or operator that defines it; until then it cannot be composed$/,
      );
    assert.equal(notServed.length, 4, 'each of the four kinds said once');
    const silent = callsAsCrossplane(base, required, () => undefined).at(-1)!;
    assert.deepEqual(
      silent.results.filter((r) => r.reason === 'KindNotServed' || r.severity === Severity.SEVERITY_FATAL),
      [],
    );
  });

  it('undeclaredPaths reads the served shapes: allOf, additionalProperties, preserved and embedded objects, arrays', () => {
    const schema: Obj = {
      type: 'object',
      properties: {
        metadata: {
          allOf: [
            {
              type: 'object',
              properties: {
                name: { type: 'string' },
                labels: { type: 'object', additionalProperties: { type: 'string' } },
              },
            },
          ],
        },
        spec: {
          type: 'object',
          properties: {
            tags: { type: 'object', additionalProperties: { type: 'object', properties: { v: { type: 'string' } } } },
            free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            anything: { type: 'object', additionalProperties: true },
            list: { type: 'array', items: { type: 'object', properties: { a: { type: 'string' } } } },
            inner: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object' } } },
            untyped: {},
          },
        },
      },
    };
    const value = {
      metadata: { name: 'x', labels: { a: 'b' }, nope: 1 },
      spec: {
        tags: { t: { v: 'x', w: 'y' } },
        free: { whatever: { deep: 1 } },
        anything: { k: 1 },
        list: [{ a: 'x' }, { b: 'y' }],
        inner: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: {} },
        untyped: { z: 1 },
        extra: true,
      },
    };
    assert.deepEqual(undeclaredPaths(value, schema).sort(), [
      'metadata.nope',
      'spec.extra',
      'spec.inner.data',
      'spec.list[1].b',
      'spec.tags.t.w',
    ]);
  });
});
