// Renders the Widget examples with the real Crossplane CLI (crank render)
// against the built function, walking the blue/green cutover through the
// observed fixtures in examples/widget/observed/.
//
// Table-driven: a case is an XR, optional observed state and a check. Other
// example folders (examples/database/...) can copy this file's shape.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import {
  type Doc,
  type RenderResult,
  type YamlInput,
  composedOf,
  conditionOf,
  crankSkipReason,
  exampleXRs,
  findComposed,
  readYamlDocs,
  render,
  resultsOf,
  xrOf,
} from '../support/crank.js';

const DIR = 'examples/widget';
const COMPOSITION = `${DIR}/composition.yaml`;
const observed = (name: string) => `${DIR}/observed/${name}.yaml`;
const COLOR_LABEL = 'function-platform.dev/color';

interface RenderCase {
  name: string;
  xr: YamlInput;
  /** Observed composed resources; omitted means crank gets no -o at all. */
  observed?: YamlInput;
  /** The render must fail (crank exits non-zero, e.g. on a Fatal result). */
  fails?: boolean;
  check(r: RenderResult): void;
}

// Small accessors so assertion failures name what was missing.
function deployment(r: RenderResult, name: string): Doc {
  const d = findComposed(r, 'Deployment', name);
  assert.ok(d, `Deployment ${name} not rendered; got ${[...composedOf(r).keys()].join(', ')}`);
  return d;
}
function service(r: RenderResult): Doc {
  const s = findComposed(r, 'Service');
  assert.ok(s, `no Service rendered; got ${[...composedOf(r).keys()].join(', ')}`);
  return s;
}
function readyCondition(r: RenderResult): string | undefined {
  return conditionOf(xrOf(r), 'Ready')?.['status'];
}

const seedTooBig = (() => {
  const [xr] = readYamlDocs(`${DIR}/seed.yaml`);
  assert.ok(xr);
  return { ...xr, spec: { ...xr['spec'], size: 101 } };
})();

const cases: RenderCase[] = [
  {
    name: 'seed, first reconcile (no observed state): blue Deployment, Service and PDB, not ready',
    xr: `${DIR}/seed.yaml`,
    check(r) {
      const xr = xrOf(r);
      assert.equal(xr['kind'], 'Widget');
      assert.equal(xr['status']?.['ready'], false);
      assert.equal(readyCondition(r), 'False');
      assert.equal(deployment(r, 'my-widget-blue')['spec']['replicas'], 42);
      assert.equal(findComposed(r, 'Deployment', 'my-widget-green'), undefined);
      const svc = service(r);
      assert.equal(svc['metadata']['name'], 'my-widget');
      assert.equal(svc['spec']['selector'][COLOR_LABEL], 'blue');
      assert.ok(findComposed(r, 'PodDisruptionBudget'), 'no PodDisruptionBudget rendered');
    },
  },
  {
    name: 'seed, observed ready: XR ready on blue with 42 replicas',
    xr: `${DIR}/seed.yaml`,
    observed: observed('ready'),
    check(r) {
      const status = xrOf(r)['status'];
      assert.equal(status?.['ready'], true);
      assert.equal(status?.['activeColor'], 'blue');
      assert.equal(status?.['availableReplicas'], 42);
      assert.equal(readyCondition(r), 'True');
      assert.equal(conditionOf(xrOf(r), 'WidgetReady')?.['status'], 'True');
    },
  },
  {
    name: 'seed, observed rolling out: message reports 12/42',
    xr: `${DIR}/seed.yaml`,
    observed: observed('rolling-out'),
    check(r) {
      const status = xrOf(r)['status'];
      assert.equal(status?.['ready'], false);
      assert.match(String(status?.['message']), /12\/42/);
      assert.equal(readyCondition(r), 'False');
    },
  },
  {
    name: 'color change, blue ready: green starts beside blue, Service stays on blue',
    xr: `${DIR}/color-change.yaml`,
    observed: observed('ready'),
    check(r) {
      deployment(r, 'my-widget-blue');
      assert.equal(deployment(r, 'my-widget-green')['spec']['replicas'], 42);
      assert.equal(service(r)['spec']['selector'][COLOR_LABEL], 'blue');
      const status = xrOf(r)['status'];
      assert.match(String(status?.['message']), /switching/i);
      assert.equal(status?.['activeColor'], 'blue');
      assert.equal(status?.['ready'], false);
    },
  },
  {
    name: 'color change, green ready: Service switches to green, blue kept',
    xr: `${DIR}/color-change.yaml`,
    observed: observed('cutover-green-ready'),
    check(r) {
      assert.equal(service(r)['spec']['selector'][COLOR_LABEL], 'green');
      deployment(r, 'my-widget-blue');
      deployment(r, 'my-widget-green');
    },
  },
  {
    name: 'color change, switch observed: blue removed, ready on green',
    xr: `${DIR}/color-change.yaml`,
    observed: observed('cutover-switched'),
    check(r) {
      assert.equal(
        findComposed(r, 'Deployment', 'my-widget-blue'),
        undefined,
        'blue Deployment should leave desired state',
      );
      deployment(r, 'my-widget-green');
      assert.equal(service(r)['spec']['selector'][COLOR_LABEL], 'green');
      const status = xrOf(r)['status'];
      assert.equal(status?.['ready'], true);
      assert.equal(status?.['activeColor'], 'green');
      assert.equal(readyCondition(r), 'True');
    },
  },
  {
    name: 'full: autoscaler, Ingress on shop.example.org, https URL',
    xr: `${DIR}/full.yaml`,
    check(r) {
      const hpa = findComposed(r, 'HorizontalPodAutoscaler');
      assert.ok(hpa, 'no HorizontalPodAutoscaler rendered');
      assert.equal(hpa['spec']['maxReplicas'], 10);
      const ingress = findComposed(r, 'Ingress');
      assert.ok(ingress, 'no Ingress rendered');
      assert.equal(ingress['spec']['rules'][0]['host'], 'shop.example.org');
      assert.equal(xrOf(r)['status']?.['url'], 'https://shop.example.org');
      assert.equal(deployment(r, 'shop-green')['metadata']['namespace'], 'team-a');
    },
  },
  {
    name: 'invalid Widget (size 101): render fails and names spec.size',
    xr: seedTooBig,
    fails: true,
    check(r) {
      assert.match(r.stdout + r.stderr, /spec\.size/);
    },
  },
];

// Skipped per test rather than per suite, so the summary counts every
// skipped render ("skipped 11") instead of hiding them inside one suite.
const skip = crankSkipReason('crank render tests for examples/widget');

describe('crank render: examples/widget', () => {
  let fn: FunctionProcess | undefined;

  before(async () => {
    if (!skip) fn = await startFunction();
  });

  after(async () => {
    // A clean exit on SIGTERM is part of the contract with the kubelet.
    if (fn) assert.equal(await fn.stop(), 0, `function did not stop cleanly\n${fn.logs()}`);
  });

  const run = (c: Pick<RenderCase, 'xr' | 'observed'>) => {
    assert.ok(fn, 'function not started');
    return render({ xr: c.xr, observed: c.observed, composition: COMPOSITION, functionsTarget: fn.target });
  };
  // Everything needed to debug a failed render in one message.
  const explain = (r: RenderResult) =>
    `${r.command}\nexit ${r.code}\n--- stderr ---\n${r.stderr}\n--- stdout ---\n${r.stdout}\n--- function logs ---\n${fn?.logs() ?? ''}`;

  for (const c of cases) {
    it(c.name, { skip }, async () => {
      const r = await run(c);
      if (c.fails) {
        assert.notEqual(r.code, 0, `expected the render to fail\n${explain(r)}`);
      } else {
        assert.equal(r.code, 0, `render failed\n${explain(r)}`);
        assert.deepEqual(
          resultsOf(r).filter((x) => x['severity'] === 'SEVERITY_FATAL'),
          [],
        );
      }
      try {
        c.check(r);
      } catch (err) {
        if (err instanceof Error) err.message += `\n${explain(r)}`;
        throw err;
      }
    });
  }

  // Every example Widget must render, so a broken example is caught even without a case of its own.
  for (const xr of exampleXRs(DIR, 'Widget')) {
    it(`${xr} renders with nothing observed yet`, { skip }, async () => {
      const r = await run({ xr, observed: observed('nothing-yet') });
      assert.equal(r.code, 0, `render failed\n${explain(r)}`);
      assert.equal(xrOf(r)['kind'], 'Widget');
      assert.ok(composedOf(r).size > 0, `nothing composed\n${explain(r)}`);
    });
  }
});
