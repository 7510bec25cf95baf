// Renders the Widget examples with the real Crossplane CLI (crank render)
// against the built function, walking the blue/green cutover through the
// observed fixtures in examples/widget/observed/.
//
// Table-driven: a case is an XR, optional observed state and a check;
// test/support/render-cases.ts renders them, and every example Widget.
import assert from 'node:assert/strict';
import {
  composedOf,
  conditionOf,
  type Doc,
  findComposed,
  type RenderResult,
  readYamlDocs,
  xrOf,
} from '../support/crank.js';
import { describeRenders, type RenderCase } from '../support/render-cases.js';

const DIR = 'examples/widget';
const COMPOSITION = `${DIR}/composition.yaml`;
const observed = (name: string) => `${DIR}/observed/${name}.yaml`;
const COLOR_LABEL = 'function-platform.dev/color';

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
/** The XR's status, once status.ready and the Ready condition both say `ready`. */
function readyIs(r: RenderResult, ready: boolean): Doc {
  const status = xrOf(r)['status'];
  assert.equal(status?.['ready'], ready);
  assert.equal(conditionOf(xrOf(r), 'Ready')?.['status'], ready ? 'True' : 'False');
  return status;
}

const seedTooBig = (() => {
  const [xr] = readYamlDocs(`${DIR}/seed.yaml`);
  assert.ok(xr);
  return { ...xr, spec: { ...xr['spec'], size: 101 } };
})();

const cases: RenderCase[] = [
  {
    name: 'seed, first reconcile (no observed state): blue Deployment and Service, no PDB before blue is available, not ready',
    xr: `${DIR}/seed.yaml`,
    check(r) {
      const xr = xrOf(r);
      assert.equal(xr['kind'], 'Widget');
      readyIs(r, false);
      assert.equal(deployment(r, 'my-widget-blue')['spec']['replicas'], 42);
      assert.equal(findComposed(r, 'Deployment', 'my-widget-green'), undefined);
      const svc = service(r);
      assert.equal(svc['metadata']['name'], 'my-widget');
      assert.equal(svc['spec']['selector'][COLOR_LABEL], 'blue');
      // Issue 26: the budget comes once blue is available (see the observed-ready case).
      assert.equal(findComposed(r, 'PodDisruptionBudget'), undefined);
    },
  },
  {
    name: 'seed, observed ready: XR ready on blue with 42 replicas',
    xr: `${DIR}/seed.yaml`,
    observed: observed('ready'),
    check(r) {
      const status = readyIs(r, true);
      assert.equal(status['activeColor'], 'blue');
      assert.equal(status['availableReplicas'], 42);
      assert.equal(conditionOf(xrOf(r), 'WidgetReady')?.['status'], 'True');
      assert.ok(findComposed(r, 'PodDisruptionBudget'), 'the PodDisruptionBudget, blue being available');
    },
  },
  {
    name: 'seed, observed rolling out: message reports 12/42',
    xr: `${DIR}/seed.yaml`,
    observed: observed('rolling-out'),
    check(r) {
      const status = readyIs(r, false);
      assert.match(String(status['message']), /12\/42/);
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
      const status = readyIs(r, false);
      assert.match(String(status['message']), /switching/i);
      assert.equal(status['activeColor'], 'blue');
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
    // Issue 26: blue goes once the Widget shows the switch settled (color-change-settled.yaml), not on the very
    // call that sees it: its deletion's burst of changes then finds nothing to change in the Widget.
    name: 'color change, switch observed: ready on green, blue kept until the Widget shows it',
    xr: `${DIR}/color-change.yaml`,
    observed: observed('cutover-switched'),
    check(r) {
      assert.ok(findComposed(r, 'Deployment', 'my-widget-blue'), 'blue stays one more step');
      deployment(r, 'my-widget-green');
      assert.equal(service(r)['spec']['selector'][COLOR_LABEL], 'green');
      const status = readyIs(r, true);
      assert.equal(status['activeColor'], 'green');
    },
  },
  {
    name: 'color change, switch shown in the Widget: blue removed, ready on green',
    xr: `${DIR}/color-change-settled.yaml`,
    observed: observed('cutover-switched'),
    check(r) {
      assert.equal(
        findComposed(r, 'Deployment', 'my-widget-blue'),
        undefined,
        'blue Deployment should leave desired state',
      );
      deployment(r, 'my-widget-green');
      assert.equal(service(r)['spec']['selector'][COLOR_LABEL], 'green');
      const status = readyIs(r, true);
      assert.equal(status['activeColor'], 'green');
    },
  },
  {
    name: 'full: autoscaler, Ingress on shop.example.org with its Certificate, http URL until it is issued',
    xr: `${DIR}/full.yaml`,
    check(r) {
      const hpa = findComposed(r, 'HorizontalPodAutoscaler');
      assert.ok(hpa, 'no HorizontalPodAutoscaler rendered');
      assert.equal(hpa['spec']['maxReplicas'], 10);
      const ingress = findComposed(r, 'Ingress');
      assert.ok(ingress, 'no Ingress rendered');
      assert.equal(ingress['spec']['rules'][0]['host'], 'shop.example.org');
      assert.deepEqual(ingress['spec']['tls'], [{ hosts: ['shop.example.org'], secretName: 'shop-tls' }]);
      const certificate = findComposed(r, 'Certificate');
      assert.ok(certificate, 'no Certificate rendered');
      assert.equal(certificate['spec']['issuerRef']['name'], 'letsencrypt-prod');
      assert.equal(xrOf(r)['status']?.['url'], 'http://shop.example.org', 'https once the Certificate is Ready');
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

describeRenders({
  dir: DIR,
  kind: 'Widget',
  composition: COMPOSITION,
  cases,
  examplesObserved: observed('nothing-yet'),
});
