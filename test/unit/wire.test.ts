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
import { runFunction } from '../../src/function.js';
import { answer, buildRequest, readYamlObjects } from '../../src/render.js';
import { decodeRunFunctionRequest, encodeRunFunctionResponse, lastDecodeHoldsBytes } from '../../src/wire.js';
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

describe('wire codec', () => {
  test('every example scenario: requests decode and answers encode as the SDK does', () => {
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
    let value = Buffer.from([4 << 3, 1]); // Value.bool_value = true
    const field = (no: number, body: Buffer) => {
      const len: number[] = [];
      for (let n = body.length; ; n >>>= 7) {
        if (n < 0x80) {
          len.push(n);
          break;
        }
        len.push((n & 0x7f) | 0x80);
      }
      return Buffer.concat([Buffer.from([(no << 3) | 2, ...len]), body]);
    };
    // Struct {k: Value{struct_value: ...}} nested 60 times: 120 messages deep, past the SDK's 100.
    for (let i = 0; i < 60; i++)
      value = field(5, field(1, Buffer.concat([field(1, Buffer.from('k')), field(2, value)])));
    const bytes = field(4, field(1, Buffer.concat([field(1, Buffer.from('k')), field(2, value)])).subarray(0));
    assert.throws(() => RunFunctionRequest.decode(bytes), /recursion limit/);
    assert.throws(() => decodeRunFunctionRequest(bytes, 1), /recursion limit/);
  });

  test('a "__proto__" key decodes as an own key, never as a prototype', () => {
    // Bytes written by hand: the SDK's encoder drops such a key from a Struct before writing it.
    const field = (no: number, body: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, body.length]), body]);
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
