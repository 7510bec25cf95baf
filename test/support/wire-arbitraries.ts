// Random RunFunction requests and answers for codec checks: JSON values, plus
// the odd ones a function might leave in an object. Shared by
// test/unit/wire.test.ts and bench/wire-check.ts.
import { join } from 'node:path';
import fc from 'fast-check';
import { Ready, type RunFunctionRequest, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { repoRoot } from '../../dev/infra/paths.js';

const key = fc.oneof(
  fc.string(),
  fc.constantFrom('', 'apiVersion', 'metadata', 'a/b.c', 'ünïcødé', '\ud800', '0', '10'),
);
export const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string({ unit: 'binary' }),
    fc.string(),
    tie('obj'),
    fc.array(tie('value'), { maxLength: 4 }),
  ),
  obj: fc.dictionary(key, fc.oneof(tie('value'), fc.constant(undefined)), { maxKeys: 5 }),
})).obj as fc.Arbitrary<Record<string, unknown>>;
const resource = fc.record({
  resource: fc.option(json, { nil: undefined }),
  connectionDetails: fc.dictionary(
    key,
    fc.uint8Array({ maxLength: 8 }).map((u) => Buffer.from(u)),
    { maxKeys: 2 },
  ),
  ready: fc.constantFrom(0, 1, 2, -1),
});
const selector = fc.record({
  apiVersion: fc.string(),
  kind: fc.string(),
  matchName: fc.option(fc.string(), { nil: undefined }),
  matchLabels: fc.option(fc.record({ labels: fc.dictionary(key, fc.string(), { maxKeys: 3 }) }), { nil: undefined }),
  namespace: fc.option(fc.string(), { nil: undefined }),
});
export const response: fc.Arbitrary<RunFunctionResponse> = fc.record({
  meta: fc.option(
    fc.record({
      tag: fc.string(),
      ttl: fc.option(fc.record({ seconds: fc.nat(), nanos: fc.nat({ max: 999_999_999 }) }), { nil: undefined }),
    }),
    { nil: undefined },
  ),
  desired: fc.option(
    fc.record({
      composite: fc.option(resource, { nil: undefined }),
      resources: fc.dictionary(key, resource, { maxKeys: 4 }),
    }),
    { nil: undefined },
  ),
  results: fc.array(
    fc.record({
      severity: fc.constantFrom(0, 1, 2, 3),
      message: fc.string(),
      reason: fc.option(fc.string(), { nil: undefined }),
      target: fc.option(fc.constantFrom(0, 1, 2), { nil: undefined }),
    }),
    { maxLength: 3 },
  ),
  context: fc.option(json, { nil: undefined }),
  requirements: fc.option(
    fc.record({
      extraResources: fc.dictionary(key, selector, { maxKeys: 2 }),
      resources: fc.dictionary(key, selector, { maxKeys: 2 }),
      schemas: fc.dictionary(key, fc.record({ apiVersion: fc.string(), kind: fc.string() }), { maxKeys: 2 }),
    }),
    { nil: undefined },
  ),
  conditions: fc.array(
    fc.record({
      type: fc.string(),
      status: fc.constantFrom(0, 1, 2, 3),
      reason: fc.string(),
      message: fc.option(fc.string(), { nil: undefined }),
      target: fc.option(fc.constantFrom(0, 1, 2), { nil: undefined }),
    }),
    { maxLength: 2 },
  ),
  output: fc.option(json, { nil: undefined }),
}) as fc.Arbitrary<RunFunctionResponse>;
export const request: fc.Arbitrary<RunFunctionRequest> = fc.record({
  meta: fc.option(
    fc.record({ tag: fc.string(), capabilities: fc.array(fc.constantFrom(0, 1, 2, 3, -1), { maxLength: 3 }) }),
    { nil: undefined },
  ),
  observed: fc.option(
    fc.record({
      composite: fc.option(resource, { nil: undefined }),
      resources: fc.dictionary(key, resource, { maxKeys: 3 }),
    }),
    { nil: undefined },
  ),
  desired: fc.option(
    fc.record({
      composite: fc.option(resource, { nil: undefined }),
      resources: fc.dictionary(key, resource, { maxKeys: 3 }),
    }),
    { nil: undefined },
  ),
  input: fc.option(json, { nil: undefined }),
  context: fc.option(json, { nil: undefined }),
  extraResources: fc.dictionary(key, fc.record({ items: fc.array(resource, { maxLength: 2 }) }), { maxKeys: 2 }),
  credentials: fc.dictionary(
    key,
    fc.record({
      credentialData: fc.option(
        fc.record({
          data: fc.dictionary(
            key,
            fc.uint8Array({ maxLength: 8 }).map((u) => Buffer.from(u)),
            { maxKeys: 2 },
          ),
        }),
        { nil: undefined },
      ),
    }),
    { maxKeys: 2 },
  ),
  requiredResources: fc.dictionary(key, fc.record({ items: fc.array(resource, { maxLength: 2 }) }), { maxKeys: 2 }),
  requiredSchemas: fc.dictionary(key, fc.record({ openapiV3: fc.option(json, { nil: undefined }) }), { maxKeys: 2 }),
}) as fc.Arbitrary<RunFunctionRequest>;

/**
 * Random requests the SDK's decoder reads as ours does: none with a "__proto__" key, which the SDK's decoder
 * turns into a prototype and ours keeps as a key (test/unit/wire.test.ts has a test of its own for that).
 */
export const sdkComparableRequest: fc.Arbitrary<RunFunctionRequest> = request.filter(
  (req) => !JSON.stringify(req, (_k, v) => (Buffer.isBuffer(v) ? null : v)).includes('"__proto__":'),
);

/**
 * The full Widget's request with an observed Deployment whose status holds n rows (each with `extra`): at 200
 * rows its Struct values pass the decoder's lazy threshold, at 2 they do not (test/unit/wire.test.ts).
 */
export function largeObservedRequest(n: number, extra: unknown = null): RunFunctionRequest {
  const req = buildRequest(readYamlObjects(join(repoRoot, 'examples/widget/full.yaml'))[0]!);
  const rows = Array.from({ length: n }, (_, i) => ({ name: `rs-${i}`, ready: i % 2 === 0, replicas: i, extra }));
  const resource = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    status: { rows, conditions: [{ type: 'Available' }] },
  };
  return {
    ...req,
    observed: {
      ...req.observed!,
      resources: { big: { resource, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED } },
    },
  };
}
