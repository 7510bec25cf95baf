// A request off the wire (src/server.ts decodeRequest) tells its call whether
// the transport may reuse the request's memory: not while anything decoded
// still points into it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { CallBytes } from '../../src/grpc-call.js';
import { decodeRequest } from '../../src/server.js';
import { lastDecodeHoldsBytes } from '../../src/wire.js';
import { largeObservedRequest } from '../support/wire-arbitraries.js';

/** A call that only records whether the request was kept. */
function call(): CallBytes & { kept: boolean } {
  const c = {
    kept: false,
    answer: (n: number) => Buffer.alloc(n),
    keepRequest: () => {
      c.kept = true;
    },
  };
  return c;
}

/** The request's bytes, with an observed Deployment status of `rows` rows. */
const request = (rows: number): Buffer => Buffer.from(RunFunctionRequest.encode(largeObservedRequest(rows)).finish());

describe('decodeRequest: whether the request bytes are kept', () => {
  test('every value built now: not kept', () => {
    const c = call();
    decodeRequest(request(2), c);
    assert.equal(c.kept, false);
  });

  test('a value left to build on first read: kept', () => {
    const c = call();
    decodeRequest(request(200), c);
    assert.equal(c.kept, true);
  });

  test('bytes only the SDK decodes (an unknown field as a group): kept, and decoded as the SDK does', () => {
    // Field 99 as an empty group: start (wire type 3) and end (wire type 4).
    const bytes = Buffer.concat([request(2), Buffer.from([0x9b, 0x06, 0x9c, 0x06])]);
    const c = call();
    const req = decodeRequest(bytes, c);
    assert.equal(c.kept, true);
    assert.ok(isDeepStrictEqual(req, RunFunctionRequest.decode(bytes)));
    assert.equal(lastDecodeHoldsBytes(), true, 'a failed fast decode does not say the bytes are free');
  });
});
