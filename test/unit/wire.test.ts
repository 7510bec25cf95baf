// The server's wire codec (src/wire.ts) against the SDK's generated one: the
// same bytes out, the same objects in, on every example and on random
// messages, and no hang on corrupted input.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { Ready, RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { setClock } from '../../src/clock.js';
import { runFunction } from '../../src/function.js';
import { answer, buildRequest, readYamlObjects } from '../../src/render.js';
import {
  decodeRunFunctionRequest,
  encodeRunFunctionResponse,
  lastDecodeHoldsBytes,
  SHARED_MAX_BYTES,
  SHARED_MAX_ENTRIES,
} from '../../src/wire.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { largeObservedRequest as large, response, sdkComparableRequest } from '../support/wire-arbitraries.js';

const sdkEncodeRsp = (m: RunFunctionResponse) => Buffer.from(RunFunctionResponse.encode(m).finish());
const sdkEncodeReq = (m: RunFunctionRequest) => Buffer.from(RunFunctionRequest.encode(m).finish());
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 1000);

function samePair(req: RunFunctionRequest, rsp: RunFunctionResponse, what: string): void {
  const bytes = sdkEncodeReq(req);
  assert.ok(
    isDeepStrictEqual(decodeRunFunctionRequest(bytes), RunFunctionRequest.decode(bytes)),
    `${what}: the request decodes differently`,
  );
  assert.ok(encodeRunFunctionResponse(rsp).equals(sdkEncodeRsp(rsp)), `${what}: the answer encodes differently`);
}

/** An OpenAPI schema of n string properties, as Crossplane answers a required schema. */
const schemaOf = (n: number) => ({
  type: 'object',
  properties: Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`field${i}`, { type: 'string', description: `field number ${i}` }]),
  ),
});
const withSchema = (openapiV3: Record<string, unknown>): RunFunctionRequest => ({
  ...large(2),
  requiredSchemas: { 'schema/x': { openapiV3 } },
});

/** A length-delimited field written by hand: its tag (wire type 2), its length as a varint, its bytes. */
function field(no: number, body: Buffer): Buffer {
  const len: number[] = [];
  for (let n = body.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([(no << 3) | 2, ...len]), body]);
}

/** A deep copy that throws where anything changes it (as the decoder hands out required objects). */
function frozenCopy<T>(value: T): T {
  const freeze = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    Object.freeze(v);
    for (const x of Object.values(v)) freeze(x);
  };
  const copy = structuredClone(value);
  freeze(copy);
  return copy;
}

/** What an answer says, without the values of the Secrets it composes. */
const outline = (rsp: RunFunctionResponse) => ({
  results: rsp.results,
  conditions: rsp.conditions,
  requirements: rsp.requirements,
  composite: rsp.desired?.composite,
  resources: Object.entries(rsp.desired?.resources ?? {}).map(([key, r]) =>
    r.resource?.['kind'] === 'Secret' ? [key, Object.keys((r.resource['data'] as object | undefined) ?? {})] : [key, r],
  ),
});

describe('wire codec', () => {
  test('every example scenario: requests decode and answers encode as the SDK does', () => {
    const restore = setClock(() => new Date('2026-12-05T10:00:00Z'));
    try {
      const scenarios = parse(readFileSync(join(repoRoot, 'examples', 'scenarios.yaml'), 'utf8')) as Array<{
        xr: string;
        observed: string[];
        required?: string;
      }>;
      let pairs = 0;
      for (const s of scenarios) {
        const ex = (p: string) => join(repoRoot, 'examples', p);
        const xr = readYamlObjects(ex(s.xr))[0]!;
        for (const o of s.observed) {
          let req = buildRequest(xr, readYamlObjects(ex(o)));
          let rsp = runFunction(req);
          if (rsp.requirements) {
            req = {
              ...req,
              requiredResources: answer(rsp.requirements, s.required ? readYamlObjects(ex(s.required)) : []),
            };
            rsp = runFunction(req);
          }
          samePair(req, rsp, `${s.xr} + ${o}`);
          // Answered from its bytes (schemas and required objects shared and frozen, large values decoded on
          // first read): the same answer, but for the passwords a new Database draws on each call.
          assert.deepEqual(
            outline(runFunction(decodeRunFunctionRequest(sdkEncodeReq(req), 256))),
            outline(rsp),
            `${s.xr} + ${o} decoded`,
          );
          // Nothing changes an object that answers a requirement, whichever name it came under.
          const frozen = {
            ...req,
            requiredResources: frozenCopy(req.requiredResources),
            extraResources: frozenCopy(req.requiredResources),
          };
          assert.deepEqual(outline(runFunction(frozen)), outline(rsp), `${s.xr} + ${o}, required objects frozen`);
          const later = {
            ...req,
            desired: rsp.desired,
            credentials: { aws: { credentialData: { data: { key: Buffer.from('k'), empty: Buffer.alloc(0) } } } },
          };
          samePair(later, rsp, `${s.xr} + ${o} as a later step`);
          pairs += 2;
        }
      }
      assert.ok(pairs >= 40);
    } finally {
      restore();
    }
  });

  test('random answers encode to the SDK bytes', () => {
    fc.assert(
      fc.property(response, (rsp) => encodeRunFunctionResponse(rsp).equals(sdkEncodeRsp(rsp))),
      { numRuns: RUNS },
    );
  });

  test('random requests decode to the SDK objects', () => {
    fc.assert(
      fc.property(sdkComparableRequest, (req) => {
        const bytes = sdkEncodeReq(req);
        return isDeepStrictEqual(decodeRunFunctionRequest(bytes), RunFunctionRequest.decode(bytes));
      }),
      { numRuns: RUNS },
    );
  });

  test('corrupted requests throw an Error or decode; they never hang', () => {
    const valid = sdkEncodeReq(buildRequest(readYamlObjects(join(repoRoot, 'examples/widget/full.yaml'))[0]!));
    fc.assert(
      fc.property(
        fc.nat({ max: valid.length - 1 }),
        fc.integer({ min: 0, max: 255 }),
        fc.nat({ max: valid.length }),
        (at, byte, cut) => {
          const bytes = Buffer.from(valid.subarray(0, Math.max(cut, at + 1)));
          bytes[at] = byte;
          try {
            decodeRunFunctionRequest(bytes);
          } catch (err) {
            return err instanceof Error;
          }
          return true;
        },
      ),
      { numRuns: RUNS },
    );
  });

  test('large Struct values decode on first read, to what the SDK decodes', () => {
    const bytes = sdkEncodeReq(large(200));
    const ours = decodeRunFunctionRequest(bytes);
    const resource = ours.observed!.resources['big']!.resource as Record<string, unknown>;
    // Not built yet: an accessor over the bytes; read once, a plain value.
    assert.equal(typeof Object.getOwnPropertyDescriptor(resource, 'status')?.get, 'function');
    const status = resource['status'] as { rows: unknown[] };
    assert.equal(Object.getOwnPropertyDescriptor(resource, 'status')?.value, status);
    assert.equal(status.rows.length, 200);
    assert.ok(isDeepStrictEqual(ours, RunFunctionRequest.decode(bytes)));
    // Written before it is read: the written value stays.
    const again = decodeRunFunctionRequest(bytes).observed!.resources['big']!.resource as Record<string, unknown>;
    again['status'] = 'replaced';
    assert.equal(again['status'], 'replaced');
  });

  test('the decoder says when what it returned still points into the bytes (so the transport does not reuse them)', () => {
    decodeRunFunctionRequest(sdkEncodeReq(large(200)));
    assert.equal(lastDecodeHoldsBytes(), true, 'a value left to decode on first read');
    decodeRunFunctionRequest(sdkEncodeReq(large(2)));
    assert.equal(lastDecodeHoldsBytes(), false, 'every value built now');
    decodeRunFunctionRequest(sdkEncodeReq(large(200)), Number.POSITIVE_INFINITY);
    assert.equal(lastDecodeHoldsBytes(), false, 'decoded eagerly');
  });

  test('a required schema is decoded once per distinct bytes, then shared, frozen, pointing into no request', () => {
    const bytes = sdkEncodeReq(withSchema(schemaOf(100)));
    const first = decodeRunFunctionRequest(bytes).requiredSchemas['schema/x']!.openapiV3!;
    assert.equal(lastDecodeHoldsBytes(), false, 'decoded in full');
    // The same bytes in other memory: the same value, as the SDK decodes it.
    const again = decodeRunFunctionRequest(Buffer.from(bytes));
    assert.equal(again.requiredSchemas['schema/x']!.openapiV3, first);
    assert.ok(isDeepStrictEqual(again, RunFunctionRequest.decode(bytes)));
    const properties = first['properties'] as Record<string, Record<string, unknown>>;
    assert.ok(Object.isFrozen(first) && Object.isFrozen(properties) && Object.isFrozen(properties['field0']));
    assert.throws(() => {
      properties['field0']!['type'] = 'integer';
    }, TypeError);
    // Other bytes, another value.
    const other = decodeRunFunctionRequest(sdkEncodeReq(withSchema(schemaOf(101)))).requiredSchemas['schema/x']!;
    assert.notEqual(other.openapiV3, first);
    assert.equal(Object.keys(other.openapiV3!['properties'] as object).length, 101);
  });

  test('an object answering a required resource is shared as the schemas are; observed objects are not', () => {
    const crd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', spec: schemaOf(60) };
    const items = [{ resource: crd, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED }];
    const req: RunFunctionRequest = {
      ...large(2),
      // Crossplane v2 answers each requirement twice, as required and as extra resources.
      requiredResources: { crd: { items } },
      extraResources: { crd: { items } },
    };
    const bytes = sdkEncodeReq(req);
    const out = decodeRunFunctionRequest(bytes);
    const required = out.requiredResources['crd']!.items[0]!.resource!;
    assert.equal(out.extraResources['crd']!.items[0]!.resource, required);
    assert.equal(decodeRunFunctionRequest(Buffer.from(bytes)).requiredResources['crd']!.items[0]!.resource, required);
    assert.ok(Object.isFrozen(required));
    assert.ok(isDeepStrictEqual(out, RunFunctionRequest.decode(bytes)));
    // An observed object of the same size is the call's own, to read and change.
    const observed = decodeRunFunctionRequest(
      sdkEncodeReq({ ...req, observed: { ...req.observed!, resources: { crd: items[0]! } } }),
    ).observed!.resources['crd']!.resource!;
    assert.ok(!Object.isFrozen(observed));
    assert.notEqual(observed, required);
  });

  test('the schemas kept are bounded: the least recently used one is decoded again', () => {
    const bytes = sdkEncodeReq(withSchema(schemaOf(100)));
    const first = decodeRunFunctionRequest(bytes).requiredSchemas['schema/x']!.openapiV3;
    for (let i = 0; i < SHARED_MAX_ENTRIES; i++) decodeRunFunctionRequest(sdkEncodeReq(withSchema(schemaOf(200 + i))));
    const later = decodeRunFunctionRequest(bytes).requiredSchemas['schema/x']!.openapiV3;
    assert.notEqual(later, first);
    assert.deepEqual(later, first);
  });

  test('the schemas kept are bounded by their bytes too; a larger one is decoded each time, frozen', () => {
    // Three schemas of about 0.4 MiB each: the third pushes the first out.
    const big = (n: number) => withSchema(schemaOf(n));
    const sized = (from: number) => {
      let n = from;
      while (sdkEncodeReq(big(n)).length < SHARED_MAX_BYTES * 0.4) n += 500;
      return sdkEncodeReq(big(n));
    };
    const [a, b, c] = [sized(3000), sized(3001), sized(3002)];
    const first = decodeRunFunctionRequest(a).requiredSchemas['schema/x']!.openapiV3;
    decodeRunFunctionRequest(b);
    assert.equal(decodeRunFunctionRequest(a).requiredSchemas['schema/x']!.openapiV3, first, 'two fit');
    decodeRunFunctionRequest(c);
    decodeRunFunctionRequest(b);
    assert.notEqual(decodeRunFunctionRequest(a).requiredSchemas['schema/x']!.openapiV3, first, 'three do not');
    let n = 3000;
    while (sdkEncodeReq(big(n)).length <= SHARED_MAX_BYTES) n *= 2;
    const huge = sdkEncodeReq(big(n));
    const one = decodeRunFunctionRequest(huge).requiredSchemas['schema/x']!.openapiV3!;
    assert.ok(Object.isFrozen(one));
    assert.notEqual(decodeRunFunctionRequest(huge).requiredSchemas['schema/x']!.openapiV3, one);
  });

  test('a required object is frozen whatever its size; a Secret is never kept beyond its call', () => {
    const item = (resource: Record<string, unknown>) => ({ resource, connectionDetails: {}, ready: 0 as Ready });
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { password: 'x'.repeat(2000) } };
    const small = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
    const bytes = sdkEncodeReq({
      ...large(2),
      requiredResources: { s: { items: [item(secret)] }, c: { items: [item(small)] } },
    });
    const first = decodeRunFunctionRequest(bytes).requiredResources;
    const again = decodeRunFunctionRequest(bytes).requiredResources;
    assert.ok(Object.isFrozen(first['s']!.items[0]!.resource) && Object.isFrozen(first['c']!.items[0]!.resource));
    assert.notEqual(again['s']!.items[0]!.resource, first['s']!.items[0]!.resource, 'the Secret decoded anew');
    assert.deepEqual(again['s']!.items[0]!.resource, secret);
  });

  test("a schema's bytes that end early or read past their end are never kept: each decode says what the SDK says", () => {
    const entry = (key: string, value: Buffer) =>
      field(1, Buffer.concat([field(1, Buffer.from(key)), field(2, value)]));
    const text = (t: string) => field(3, Buffer.from(t)); // Value.string_value
    const entries = Buffer.concat(Array.from({ length: 60 }, (_, i) => entry(`field${i}`, text('a string value'))));
    // Schema { openapi_v3: Struct(entries, then a zero tag, then an empty openapi_v3 of the Schema's own) }.
    const endsEarly = Buffer.concat([entries, Buffer.from([0x00, 0x0a, 0x00])]);
    const request = (schemaBody: Buffer) =>
      field(9, Buffer.concat([field(1, Buffer.from('schema/x')), field(2, field(1, schemaBody))]));
    const outcome = (bytes: Buffer, decode: (b: Buffer) => RunFunctionRequest) => {
      try {
        return { ok: structuredClone(decode(bytes).requiredSchemas) as unknown };
      } catch {
        return { error: true };
      }
    };
    for (const body of [endsEarly, Buffer.concat([entries, Buffer.from([0x0f])])]) {
      const bytes = request(body);
      const sdk = outcome(bytes, (b) => RunFunctionRequest.decode(b));
      const first = outcome(bytes, (b) => decodeRunFunctionRequest(b));
      const second = outcome(bytes, (b) => decodeRunFunctionRequest(b));
      assert.deepEqual(second, first);
      if ('ok' in first) assert.deepEqual(first, sdk);
    }
  });

  test('an answer encoded into memory handed in: the same bytes, in that memory', () => {
    const rsp = runFunction(buildRequest(readYamlObjects(join(repoRoot, 'examples/widget/full.yaml'))[0]!));
    const block = Buffer.alloc(64 * 1024, 0xee);
    const out = encodeRunFunctionResponse(rsp, (n) => block.subarray(5, 5 + n));
    assert.equal(out.buffer, block.buffer);
    assert.equal(out.byteOffset, block.byteOffset + 5);
    assert.ok(out.equals(sdkEncodeRsp(rsp)));
    assert.equal(block[4], 0xee, 'nothing written before it');
    assert.equal(block[5 + out.length], 0xee, 'nothing written after it');
  });

  test('random requests decode to the SDK objects with every Struct value decoded on first read', () => {
    fc.assert(
      fc.property(sdkComparableRequest, (req) => {
        const bytes = sdkEncodeReq(req);
        return isDeepStrictEqual(decodeRunFunctionRequest(bytes, 1), RunFunctionRequest.decode(bytes));
      }),
      { numRuns: RUNS },
    );
  });

  test('corrupted large requests: refused with the same error, or decoded to the same objects, lazily or not', () => {
    const valid = sdkEncodeReq(large(40, { a: [1, 'two', { three: null }] }));
    const outcome = (bytes: Buffer, lazyMin: number) => {
      try {
        // Reading every value (a deep comparison reads them all) surfaces anything deferred.
        return { ok: structuredClone(decodeRunFunctionRequest(bytes, lazyMin)) as unknown };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      }
    };
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.nat({ max: valid.length }),
        (flips, cut) => {
          const bytes = Buffer.from(valid);
          for (const [at, b] of flips) bytes[at] = b;
          const damaged = bytes.subarray(0, Math.max(cut, 1));
          const eager = outcome(damaged, Number.POSITIVE_INFINITY);
          const lazy = outcome(damaged, 1);
          // A deferred value never throws on read: the bytes were checked when the request was decoded.
          return isDeepStrictEqual(lazy, eager);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test('nesting past the limit is refused when decoding, not when the value is read', () => {
    let value: Buffer = Buffer.from([4 << 3, 1]); // Value.bool_value = true
    // Struct {k: Value{struct_value: ...}} nested 60 times: 120 messages deep, past the SDK's 100.
    for (let i = 0; i < 60; i++)
      value = field(5, field(1, Buffer.concat([field(1, Buffer.from('k')), field(2, value)])));
    const bytes = field(4, field(1, Buffer.concat([field(1, Buffer.from('k')), field(2, value)])).subarray(0));
    assert.throws(() => RunFunctionRequest.decode(bytes), /recursion limit/);
    assert.throws(() => decodeRunFunctionRequest(bytes, 1), /recursion limit/);
  });

  test('a "__proto__" key decodes as an own key, never as a prototype', () => {
    // Bytes written by hand: the SDK's encoder drops such a key from a Struct before writing it.
    const text = (s: string) => Buffer.from(s, 'utf8');
    const entry = (key: string, value: Buffer) => field(1, Buffer.concat([field(1, text(key)), field(2, value)]));
    const boolValue = Buffer.from([4 << 3, 1]); // Value.bool_value = true
    const inner = entry('polluted', boolValue); // Struct {polluted: true}
    const input = Buffer.concat([entry('__proto__', field(5, inner)), entry('kept', boolValue)]);
    const schemas = field(9, Buffer.concat([field(1, text('__proto__')), field(2, Buffer.alloc(0))]));
    const out = decodeRunFunctionRequest(Buffer.concat([field(4, input), schemas]));

    const spec = out.input as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(spec), Object.prototype);
    assert.deepEqual(Object.keys(spec).sort(), ['__proto__', 'kept']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(spec, '__proto__')?.value, { polluted: true });
    assert.equal((spec as { polluted?: unknown }).polluted, undefined);
    assert.equal(Object.getPrototypeOf(out.requiredSchemas), Object.prototype);
    assert.deepEqual(Object.keys(out.requiredSchemas), ['__proto__']);
  });
});
