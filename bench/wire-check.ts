#!/usr/bin/env node
// Checks src/wire.ts against the SDK's codec, and times both.
//
//   node dist/bench/wire-check.js [--iterations 2000]
//
// 1. Every example scenario (examples/scenarios.yaml): the request decodes to
//    what the SDK decodes, and function-platform's answer encodes to the bytes
//    the SDK encodes.
// 2. Random requests and answers (fast-check): the same two checks.
// 3. Deeply nested objects: refused exactly when the SDK refuses them. Corrupted
//    requests: the decoder throws an Error or returns; it never hangs.
// 4. Time per call of each codec on the benchmark's cases.
import { isDeepStrictEqual } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { runFunction } from '../src/function.js';
import { buildRequest, readYamlObjects, answer } from '../src/render.js';
import { buildCases } from './cases.js';
import { decodeRunFunctionRequest, encodeRunFunctionResponse } from '../src/wire.js';
import { request, response, sdkComparableRequest } from '../test/support/wire-arbitraries.js';
import { repoRoot as root } from '../dev/infra/paths.js';

const iterAt = process.argv.indexOf('--iterations');
const iterations = iterAt >= 0 ? Number(process.argv[iterAt + 1]) : 2000;
const say = (s = '') => process.stdout.write(`${s}\n`);

const sdkEncodeRsp = (m: RunFunctionResponse) => Buffer.from(RunFunctionResponse.encode(m).finish());
const sdkEncodeReq = (m: RunFunctionRequest) => Buffer.from(RunFunctionRequest.encode(m).finish());

let failures = 0;
function expect(ok: boolean, what: string): void {
  if (!ok) {
    failures++;
    say(`  FAIL ${what}`);
  }
}

function checkPair(req: RunFunctionRequest, rsp: RunFunctionResponse, what: string): void {
  const reqBytes = sdkEncodeReq(req);
  expect(
    isDeepStrictEqual(decodeRunFunctionRequest(reqBytes), RunFunctionRequest.decode(reqBytes)),
    `${what}: request decodes differently`,
  );
  const a = sdkEncodeRsp(rsp);
  const b = encodeRunFunctionResponse(rsp);
  expect(a.equals(b), `${what}: answer encodes differently (${a.length} vs ${b.length} bytes)`);
}

// 1. The examples.
interface Scenario {
  xr: string;
  observed: string[];
  required?: string;
}
const scenarios = parse(readFileSync(join(root, 'examples', 'scenarios.yaml'), 'utf8')) as Scenario[];
let pairs = 0;
for (const s of scenarios) {
  const ex = (p: string) => join(root, 'examples', p);
  const [xr] = readYamlObjects(ex(s.xr));
  for (const o of s.observed) {
    let req = buildRequest(xr!, readYamlObjects(ex(o)));
    let rsp = runFunction(req);
    checkPair(req, rsp, `${s.xr} + ${o}`);
    if (rsp.requirements && s.required) {
      req = { ...req, requiredResources: answer(rsp.requirements, readYamlObjects(ex(s.required))) };
      rsp = runFunction(req);
      checkPair(req, rsp, `${s.xr} + ${o} + ${s.required}`);
      pairs++;
    }
    // The answer as the next step would receive it, and with credentials.
    const next = {
      ...req,
      desired: rsp.desired,
      context: { 'apiextensions.crossplane.io/environment': { a: [1, 'two', null, true] } },
    };
    next.credentials = { aws: { credentialData: { data: { key: Buffer.from('secret'), empty: Buffer.alloc(0) } } } };
    checkPair(next, rsp, `${s.xr} + ${o} as a later step`);
    pairs += 2;
  }
}
say(`examples: ${pairs} request/answer pairs checked`);

// 2. Random objects (test/support/wire-arbitraries.ts).
const runs = 3000;
const prop = (name: string, p: fc.IPropertyWithHooks<[unknown]> | fc.IProperty<[unknown]>) => {
  const r = fc.check(p as fc.IProperty<[unknown]>, { numRuns: runs });
  expect(!r.failed, `${name}: ${r.failed ? fc.defaultReportMessage(r) : ''}`);
};
prop(
  'random answers encode as the SDK encodes them',
  fc.property(response, (m) => sdkEncodeRsp(m).equals(encodeRunFunctionResponse(m))) as unknown as fc.IProperty<
    [unknown]
  >,
);
prop(
  'random requests decode as the SDK decodes them',
  fc.property(sdkComparableRequest, (m) => {
    const bytes = sdkEncodeReq(m);
    return isDeepStrictEqual(decodeRunFunctionRequest(bytes), RunFunctionRequest.decode(bytes));
  }) as unknown as fc.IProperty<[unknown]>,
);
say(`random: ${runs} answers and ${runs} requests checked`);

// Deep objects: the decoder refuses exactly what the SDK's refuses (its nesting limit).
{
  let agreed = 0;
  for (let depth = 1; depth <= 60; depth++) {
    let obj: unknown = 'leaf';
    for (let i = 0; i < depth; i++) obj = i % 3 === 2 ? [obj] : { k: obj };
    const bytes = sdkEncodeReq({
      ...RunFunctionRequest.fromPartial({}),
      observed: {
        composite: { resource: obj as Record<string, unknown>, connectionDetails: {}, ready: 0 },
        resources: {},
      },
    });
    const outcome = (f: () => unknown) => {
      try {
        return f();
      } catch (err) {
        return err instanceof Error ? `error: ${err.message}` : 'error';
      }
    };
    const sdk = outcome(() => RunFunctionRequest.decode(bytes));
    const ours = outcome(() => decodeRunFunctionRequest(bytes));
    expect(
      isDeepStrictEqual(sdk, ours),
      `nesting ${depth}: SDK ${typeof sdk === 'string' ? sdk : 'decodes'}, ours ${typeof ours === 'string' ? ours : 'decodes'}`,
    );
    agreed++;
  }
  say(`nesting: ${agreed} depths, same outcome as the SDK`);
}

// 3. Corrupted requests: an Error or a result, never a hang or a crash of another kind.
prop(
  'corrupted requests throw an Error or decode',
  fc.property(
    request,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
    fc.nat(),
    (m, flips, cut) => {
      const bytes = Buffer.from(sdkEncodeReq(m));
      for (const [at, b] of flips) if (bytes.length > 0) bytes[at % bytes.length] = b;
      const damaged = bytes.subarray(0, bytes.length === 0 ? 0 : cut % (bytes.length + 1));
      try {
        decodeRunFunctionRequest(damaged);
      } catch (err) {
        return err instanceof Error;
      }
      return true;
    },
  ) as unknown as fc.IProperty<[unknown]>,
);
say(`corrupted: ${runs} damaged requests decoded or refused`);

// 4. Timing on the benchmark's cases.
function time(fn: () => unknown): number {
  for (let i = 0; i < Math.min(500, iterations); i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return ((performance.now() - t0) * 1000) / iterations;
}
say();
say(`time per call, µs (${iterations} iterations after warm-up)`);
say('case               req bytes  decode SDK  decode new  speed-up   rsp bytes  encode SDK  encode new  speed-up');
for (const c of buildCases(root)) {
  const rsp = runFunction(c.request);
  const rspBytes = sdkEncodeRsp(rsp);
  const dSdk = time(() => RunFunctionRequest.decode(c.bytes));
  const dNew = time(() => decodeRunFunctionRequest(c.bytes));
  const eSdk = time(() => RunFunctionResponse.encode(rsp).finish());
  const eNew = time(() => encodeRunFunctionResponse(rsp));
  say(
    `${c.id.padEnd(18)} ${String(c.bytes.length).padStart(9)}  ${dSdk.toFixed(1).padStart(10)}  ${dNew.toFixed(1).padStart(10)}  ${(dSdk / dNew).toFixed(1).padStart(7)}×  ${String(rspBytes.length).padStart(9)}  ${eSdk.toFixed(1).padStart(10)}  ${eNew.toFixed(1).padStart(10)}  ${(eSdk / eNew).toFixed(1).padStart(7)}×`,
  );
}

say();
say(failures === 0 ? 'wire-check: every check passed' : `wire-check: ${failures} checks FAILED`);
process.exitCode = failures === 0 ? 0 : 1;
