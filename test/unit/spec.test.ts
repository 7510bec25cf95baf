import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { widget } from '../../src/blueprints/widget.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { dnsLabel } from '../../src/names.js';
import { repoRoot } from '../../dev/infra/paths.js';

function fatalOf(xr: Obj | undefined, input?: Obj): string | undefined {
  const req = buildRequest(xr ?? {}, [], [], input);
  if (!xr) req.observed = undefined;
  const rsp = runFunction(req);
  const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
  if (fatal) assert.deepEqual(rsp.desired?.resources, {}, 'a Fatal answer carries no partial desired state');
  return fatal?.message;
}

const xr = (spec: unknown, kind = 'Widget'): Obj => ({
  apiVersion: 'example.com/v1',
  kind,
  metadata: { name: 'w', namespace: 'ns' },
  ...(spec === undefined ? {} : { spec }),
});

/** A Widget's spec as phase one leaves it, for a composite that has nothing composed yet. */
const specOf = (raw: unknown) =>
  widget.resolve(raw, {
    owner: { kind: 'Widget', name: 'w', uid: 'u', namespace: 'default' },
    xr: {},
    observed: new Map(),
    composed: new Map(),
    required: new Map(),
    newPassword: () => 'unused',
    now: new Date(),
  }).input.spec;

describe('spec handling', () => {
  test('generated types and schema match the XRD (npm run generate is up to date)', () => {
    const out = execFileSync(process.execPath, ['scripts/generate-schemas.mjs', '--check'], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    assert.match(out, /up to date/);
  });

  test('schema defaults are applied by the function', () => {
    const spec = specOf({});
    assert.deepEqual(spec, {
      color: 'blue',
      size: 1,
      image: 'traefik/whoami:v1.11.0',
      port: 8080,
      resources: { cpu: '100m', memory: '128Mi' },
    });
    assert.equal(specOf({ autoscale: { maxSize: 3 } }).autoscale?.targetCPUPercent, 80);
  });

  test('parsing never mutates the request', () => {
    const input = { size: 2 };
    specOf(input);
    assert.deepEqual(input, { size: 2 });
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['missing spec', undefined, /spec is missing/],
    ['size 0', { size: 0 }, /spec\.size is 0; it must be from 1 to 100/],
    ['size 101', { size: 101 }, /spec\.size is 101; it must be from 1 to 100/],
    ['size as a string', { size: '3' }, /spec\.size is "3"; it must be a whole number/],
    ['size as a fraction', { size: 1.5 }, /spec\.size is 1\.5; it must be a whole number/],
    ['color not a DNS label', { color: 'Blue_1' }, /spec\.color is "Blue_1"; it must match .*DNS label/],
    ['color empty', { color: '' }, /spec\.color is ""; it must be at least 1 characters/],
    ['port out of range', { port: 70000 }, /spec\.port is 70000; it must be from 1 to 65535/],
    [
      'env value not a string (and not echoed: env holds secrets)',
      { env: { A: 1 } },
      /spec\.env\.A is a number; it must be a string/,
    ],
    ['env name invalid', { env: { '1A': 'x' } }, /spec\.env\["1A"\]: env names must be/],
    [
      'autoscale below size',
      { size: 5, autoscale: { maxSize: 2 } },
      /spec\.autoscale\.maxSize must be at least spec\.size \(5\)/,
    ],
    ['autoscale without maxSize', { autoscale: {} }, /spec\.autoscale\.maxSize is required/],
    ['bad memory quantity', { resources: { memory: 'lots' } }, /spec\.resources\.memory is "lots"/],
    ['spec not an object', 'big', /spec is "big"; it must be a object/],
  ];
  for (const [name, spec, message] of bad) {
    test(`bad input is Fatal with a message naming the field: ${name}`, () => {
      const msg = fatalOf(xr(spec));
      assert.ok(msg, 'expected a Fatal result');
      assert.match(msg, message);
    });
  }

  test('several problems are reported together', () => {
    const msg = fatalOf(xr({ size: 0, color: 'X' }));
    assert.match(msg!, /spec\.size/);
    assert.match(msg!, /spec\.color/);
  });

  test('an unknown kind is Fatal and lists the known ones', () => {
    assert.match(
      fatalOf(xr({}, 'Gadget'))!,
      /no blueprint composes kind "Gadget"; known kinds: widget \(Widget, XWidget\)/,
    );
  });

  test('the step input picks the blueprint; an unknown one is Fatal', () => {
    assert.equal(
      fatalOf(xr({}, 'Gadget'), { apiVersion: 'fn.example.com/v1', kind: 'Input', blueprint: 'widget' }),
      undefined,
    );
    assert.match(fatalOf(xr({}), { blueprint: 'nope' })!, /names blueprint "nope", which does not exist/);
  });

  test('a request with no observed XR is Fatal', () => {
    assert.match(fatalOf(undefined)!, /no observed composite resource/);
  });

  test('XWidget from a claim composes into the claim namespace', () => {
    const claimXr = {
      apiVersion: 'example.com/v1',
      kind: 'XWidget',
      metadata: {
        name: 'w-x7k2p',
        labels: { 'crossplane.io/claim-name': 'w', 'crossplane.io/claim-namespace': 'team-b' },
      },
      spec: {},
    };
    const rsp = runFunction(buildRequest(claimXr));
    const svc = ((rsp.desired!.resources['service']!.resource as Obj)['spec'] as Obj)['forProvider'] as Obj;
    const manifest = svc['manifest'] as Obj;
    assert.deepEqual((manifest['metadata'] as Obj)['namespace'], 'team-b');
    assert.deepEqual((manifest['metadata'] as Obj)['name'], 'w', 'named after the claim, not the generated composite');
  });

  test('every CEL rule in the XRD has a counterpart in the function', () => {
    const xrd = parse(readFileSync(`${repoRoot}/package/configuration/apis/widget/definition.yaml`, 'utf8'));
    const rules: Array<{ message: string }> = [];
    const walk = (node: unknown) => {
      if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'x-kubernetes-validations') rules.push(...(v as Array<{ message: string }>));
          else walk(v);
        }
      }
    };
    walk(xrd);
    assert.ok(rules.length >= 2);
    const source = readFileSync(`${repoRoot}/src/blueprints/widget.ts`, 'utf8');
    for (const rule of rules) assert.ok(source.includes(rule.message), `no function check says: ${rule.message}`);
  });

  test('dnsLabel keeps short names and hashes long or unclean ones', () => {
    assert.equal(dnsLabel('web', 'blue'), 'web-blue');
    assert.notEqual(dnsLabel('a.b'), dnsLabel('a-b'));
    assert.match(dnsLabel('9lives'), /^x-9lives-[0-9a-f]{6}$/);
    assert.ok(dnsLabel('x'.repeat(100), 'green').length <= 63);
  });
});

describe('the step input, validated against the Input CRD', () => {
  const seed = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w' },
    spec: { color: 'blue', size: 1 },
  };
  test('an awsEndpoint that is not a string is a Fatal result naming the field', () => {
    const rsp = runFunction(
      buildRequest(seed, [], [], { apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', awsEndpoint: 7 }),
    );
    const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
    assert.equal(fatal?.reason, 'InvalidInput');
    assert.match(fatal?.message ?? '', /^invalid step input: input\.awsEndpoint is 7; it must be a string/);
  });
  test('an input as Crossplane sends it (apiVersion, kind, a blueprint, an endpoint) is accepted', () => {
    const rsp = runFunction(
      buildRequest(seed, [], [], {
        apiVersion: 'platform.fn.example.com/v1beta1',
        kind: 'Input',
        blueprint: 'widget',
        awsEndpoint: 'http://127.0.0.1:5000',
      }),
    );
    assert.equal(
      rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL),
      undefined,
    );
  });
});
