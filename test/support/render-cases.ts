// The table-driven crank render suites of an example folder
// (test/crossplane/render-*.test.ts): the function started once for the
// suite, each case rendered and checked with everything needed to debug a
// failure in one message, then every example XR of the folder rendered with
// nothing of its own.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  composedOf,
  crankSkipReason,
  exampleXRs,
  type RenderResult,
  render,
  resultsOf,
  type YamlInput,
  xrOf,
} from './crank.js';
import { type FunctionProcess, repoRoot, startFunction } from './function-process.js';

/** The time the examples' observed states are as of (examples/database/observed/cluster-backed-up.yaml says so). */
export const EXAMPLES_NOW = '2026-12-02T10:00:00Z';

export interface RenderCase {
  name: string;
  xr: YamlInput;
  /** Observed composed resources (-o); omitted means crank gets no -o at all. */
  observed?: YamlInput;
  /** Required resources (-e, repo-relative), answering the function's requirements. */
  required?: string;
  /** Another Composition than the suite's (a step Input with the platform's defaults). */
  composition?: YamlInput;
  /** More crank render flags, made when the case runs (e.g. --required-schemas with a directory it writes). */
  extraArgs?: () => string[];
  /** The render must fail (crank exits non-zero, e.g. on a Fatal result). */
  fails?: boolean;
  /** `again` renders the same case a second time (it must succeed). */
  check(r: RenderResult, again: () => Promise<RenderResult>): void | Promise<void>;
}

export interface RenderSuite {
  /** The example folder, e.g. examples/widget. */
  dir: string;
  /** The kind of its XRs. */
  kind: string;
  composition: YamlInput;
  cases: RenderCase[];
  /** Files of `dir` that must be among its example XRs. */
  expectedExamples?: string[];
  /** What every example XR is rendered against; nothing observed when omitted. */
  examplesObserved?: YamlInput;
  /** More checks of every example XR's render; `explain` tells how it went. */
  checkExample?(r: RenderResult, explain: string): void;
}

/** One describe block: the cases of `suite`, then every example XR of its folder. */
export function describeRenders(suite: RenderSuite): void {
  const { dir, kind } = suite;
  // Skipped per test rather than per suite, so the summary counts every
  // skipped render instead of hiding them inside one suite.
  const skip = crankSkipReason(`crank render tests for ${dir}`);

  describe(`crank render: ${dir}`, () => {
    let fn: FunctionProcess | undefined;

    before(async () => {
      if (skip) return;
      // The examples' observed states are as of EXAMPLES_NOW: the function reads its clock from a file.
      const clockFile = join(mkdtempSync(join(tmpdir(), 'render-clock-')), 'now');
      writeFileSync(clockFile, EXAMPLES_NOW);
      fn = await startFunction({ env: { FUNCTION_PLATFORM_CLOCK_FILE: clockFile } });
    });

    after(async () => {
      // A clean exit on SIGTERM is part of the contract with the kubelet.
      if (fn) assert.equal(await fn.stop(), 0, `function did not stop cleanly\n${fn.logs()}`);
    });

    const run = (c: Pick<RenderCase, 'xr' | 'observed' | 'required' | 'composition' | 'extraArgs'>) => {
      assert.ok(fn, 'function not started');
      return render({
        xr: c.xr,
        observed: c.observed,
        composition: c.composition ?? suite.composition,
        functionsTarget: fn.target,
        extraArgs: [...(c.required ? ['-e', join(repoRoot, c.required)] : []), ...(c.extraArgs?.() ?? [])],
      });
    };
    // Everything needed to debug a failed render in one message.
    const explain = (r: RenderResult) =>
      `${r.command}\nexit ${r.code}\n--- stderr ---\n${r.stderr}\n--- stdout ---\n${r.stdout}\n--- function logs ---\n${fn?.logs() ?? ''}`;

    for (const c of suite.cases) {
      it(c.name, { skip }, async () => {
        const r = await run(c);
        if (c.fails) {
          assert.notEqual(r.code, 0, `expected the render to fail\n${explain(r)}`);
        } else {
          assert.equal(r.code, 0, `render failed\n${explain(r)}`);
          assert.equal(xrOf(r)['kind'], kind);
          assert.deepEqual(
            resultsOf(r).filter((x) => x['severity'] === 'SEVERITY_FATAL'),
            [],
          );
        }
        try {
          await c.check(r, async () => {
            const again = await run(c);
            assert.equal(again.code, 0, `second render failed\n${explain(again)}`);
            return again;
          });
        } catch (err) {
          if (err instanceof Error) err.message += `\n${explain(r)}`;
          throw err;
        }
      });
    }

    // Every example must render, so a broken or new example is caught even without a case of its own.
    const examples = exampleXRs(dir, kind);
    if (suite.expectedExamples) {
      const expected = suite.expectedExamples;
      it(`finds the ${kind} examples`, { skip }, () => {
        for (const f of expected)
          assert.ok(examples.includes(`${dir}/${f}`), `${dir}/${f} not among ${examples.join(', ')}`);
      });
    }
    for (const xr of examples) {
      it(`${xr} renders with nothing observed yet`, { skip }, async () => {
        const r = await run({ xr, observed: suite.examplesObserved });
        assert.equal(r.code, 0, `render failed\n${explain(r)}`);
        assert.equal(xrOf(r)['kind'], kind);
        assert.ok(composedOf(r).size > 0, `nothing composed\n${explain(r)}`);
        suite.checkExample?.(r, explain(r));
      });
    }
  });
}
