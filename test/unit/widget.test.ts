import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ready, Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { Loop } from '../support/loop.js';

const seed: Obj = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'my-widget', namespace: 'team-a' },
  spec: { color: 'blue', size: 42 },
};

function widget(spec: Obj, name = 'my-widget'): Obj {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace: 'team-a' }, spec };
}

const selectorColor = (svc: Obj | undefined) =>
  ((svc!['spec'] as Obj)['selector'] as Obj)['function-platform.dev/color'];

describe('Widget blueprint', () => {
  // Issue 26: the budget came with the Deployment, and the disruption controller rewrote it for every pod that came
  // up (41 watch events of the circuit breaker's 100 for the seed); it comes once the Deployment is available.
  test('the seed composes a 42-replica Deployment and a Service, none ready yet; the PDB once it is available', () => {
    const loop = new Loop(seed);
    const rsp = loop.call();
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'service']);
    const dep = loop.desired('deployment-blue')!;
    assert.equal((dep['spec'] as Obj)['replicas'], 42);
    assert.equal((dep['metadata'] as Obj)['name'], 'my-widget-blue');
    assert.equal((dep['metadata'] as Obj)['namespace'], 'team-a');
    assert.equal(selectorColor(loop.desired('service')), 'blue');
    for (const r of Object.values(rsp.desired!.resources)) assert.equal(r.ready, Ready.READY_FALSE);
    assert.equal(rsp.desired!.composite!.ready, Ready.READY_FALSE);
    const status = loop.status();
    assert.equal(status['ready'], false);
    assert.equal(status['message'], 'Deployment my-widget-blue: not created yet');
    assert.equal(status['url'], 'http://my-widget.team-a.svc.cluster.local:8080');
    assert.equal(status['activeColor'], undefined, 'no Service observed yet, so no color is live');
    loop.apply(rsp);
    loop.rollOut('deployment-blue', 30);
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'service'], 'no budget while it rolls out');
    loop.rollOut('deployment-blue');
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'pdb', 'service']);
    assert.equal(loop.status()['ready'], false, 'ready once the budget is observed');
    loop.rollOut('deployment-blue', 41);
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'pdb', 'service'], 'and then it stays');
  });

  // Seen on a real node: one request in 8567 timed out during a cutover, sent to an old pod that had stopped
  // while kube-proxy still routed to it. A leaving pod now serves a few seconds more, whatever its image.
  test('every pod keeps serving a few seconds after it is told to leave, with no shell needed in its image', () => {
    for (const image of [undefined, 'registry.example/shop:1.2']) {
      const loop = new Loop(widget({ color: 'green', size: 2, ...(image ? { image } : {}) }));
      loop.call();
      const pod = ((loop.desired('deployment-green')!['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
      const [web] = pod['containers'] as Obj[];
      const preStop = (web!['lifecycle'] as Obj)['preStop'] as Obj;
      assert.deepEqual(Object.keys(preStop), ['sleep'], 'the kubelet sleeps: no exec, no shell');
      const seconds = (preStop['sleep'] as Obj)['seconds'] as number;
      assert.ok(seconds >= 3, `at least a few seconds for kube-proxy (${seconds})`);
      assert.ok(
        seconds < ((pod['terminationGracePeriodSeconds'] as number | undefined) ?? 30),
        'within the grace period',
      );
    }
  });

  test('size 1 composes no PodDisruptionBudget; defaults fill the rest', () => {
    const loop = new Loop(widget({}));
    loop.call();
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'service']);
    const container = (((loop.desired('deployment-blue')!['spec'] as Obj)['template'] as Obj)['spec'] as Obj)[
      'containers'
    ] as Obj[];
    assert.equal(container[0]!['image'], 'traefik/whoami:v1.11.0');
    assert.deepEqual(container[0]!['resources'], {
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '128Mi' },
    });
    assert.deepEqual(container[0]!['ports'], [{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
  });

  test('every field: HPA, Ingress, env, resources, port', () => {
    const loop = new Loop(
      widget({
        color: 'green',
        size: 3,
        image: 'ghcr.io/x/shop:1',
        port: 9090,
        env: { B: '2', A: '1' },
        resources: { cpu: '250m', memory: '256Mi' },
        host: 'shop.example.org',
        autoscale: { maxSize: 10 },
      }),
    );
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-green', 'hpa', 'ingress', 'service']);
    loop.rollOut('deployment-green');
    loop.call();
    assert.deepEqual(loop.desiredKeys(), ['deployment-green', 'hpa', 'ingress', 'pdb', 'service']);
    const hpa = loop.desired('hpa')!['spec'] as Obj;
    assert.equal(hpa['minReplicas'], 3);
    assert.equal(hpa['maxReplicas'], 10);
    assert.deepEqual(hpa['scaleTargetRef'], { apiVersion: 'apps/v1', kind: 'Deployment', name: 'my-widget-green' });
    assert.equal(
      JSON.stringify(hpa['metrics']).includes('"averageUtilization":80'),
      true,
      'targetCPUPercent defaults to 80',
    );
    const ing = loop.desired('ingress')!['spec'] as Obj;
    assert.equal((ing['rules'] as Obj[])[0]!['host'], 'shop.example.org');
    const c = (
      (((loop.desired('deployment-green')!['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[]
    )[0]!;
    assert.deepEqual(c['env'], [
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
      { name: 'PORT', value: '9090' },
    ]);
    assert.equal(ing['tls'], undefined, 'no issuer anywhere: plain HTTP, no TLS section naming a Secret nobody makes');
    assert.equal(loop.status()['url'], 'http://shop.example.org');
  });

  test('rolling out: the message names the Deployment and its numbers', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue', 12);
    loop.settle();
    loop.call();
    assert.equal(loop.status()['message'], 'Deployment my-widget-blue: 12/42 replicas available');
    assert.equal(loop.status()['availableReplicas'], 12);
    assert.equal(loop.last!.conditions[0]!.reason, 'RollingOut');
  });

  test('ready once every resource is ready; the XR and every resource are marked ready', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call()); // The budget comes once blue is available (issue 26); its controller catches up.
    loop.settle();
    // Issue 26: status.ready turns first; READY and the condition on the next call, once the XR shows it.
    const turning = loop.call();
    assert.equal(loop.status()['ready'], true);
    assert.equal(turning.desired!.composite!.ready, Ready.READY_FALSE, 'READY as the XR shows it, for one call');
    assert.deepEqual(turning.conditions, [], 'conditions stay as they are on the call that turns status.ready');
    assert.equal(
      turning.meta?.ttl?.seconds,
      2,
      'and the call that turns them comes soon, even if its event is dropped',
    );
    loop.apply(turning);
    const rsp = loop.call();
    assert.equal(loop.status()['ready'], true);
    assert.equal(loop.status()['activeColor'], 'blue');
    assert.equal(loop.status()['availableReplicas'], 42);
    assert.equal(rsp.desired!.composite!.ready, Ready.READY_TRUE);
    for (const r of Object.values(rsp.desired!.resources)) assert.equal(r.ready, Ready.READY_TRUE);
    assert.equal(rsp.conditions[0]!.type, 'WidgetReady');
    assert.equal(rsp.conditions[0]!.reason, 'Available');
  });

  test('an event is emitted when the reason changes, not on every call', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    assert.equal(loop.last!.results.filter((r) => r.severity === Severity.SEVERITY_NORMAL).length, 1);
    loop.apply(loop.call());
    assert.equal(loop.last!.results.length, 0, 'same reason as observed: no new event');
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call()); // The budget comes once blue is available (issue 26); its controller catches up.
    loop.settle();
    loop.apply(loop.call());
    assert.equal(loop.last!.results.length, 0, 'status.ready turned: the event comes with the condition');
    loop.apply(loop.call());
    assert.deepEqual(
      loop.last!.results.map((r) => r.reason),
      ['Available'],
    );
  });

  test('a full blue/green cutover, each step read from observed state', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call()); // The budget comes once blue is available (issue 26); its controller catches up.
    loop.settle();
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], true);

    // The user asks for green.
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 42 } };
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'deployment-green', 'pdb', 'service']);
    assert.equal(selectorColor(loop.desired('service')), 'blue', 'traffic stays on blue while green starts');
    assert.equal((loop.desired('deployment-green')!['spec'] as Obj)['replicas'], 42, 'green starts at full size');
    assert.equal(loop.status()['activeColor'], 'blue');
    assert.equal(loop.status()['ready'], false);

    // Green part way: still on blue, and the message says where it stands.
    loop.rollOut('deployment-green', 12);
    loop.apply(loop.call());
    assert.equal(selectorColor(loop.desired('service')), 'blue');
    // While green's pods come up, their readiness sets the pace: the usual 15 s.
    assert.equal(Number(loop.last!.meta!.ttl!.seconds), 15, 'green part way: no hurry');
    assert.match(String(loop.status()['message']), /switching traffic from blue to green: green 12\/42 available/);
    assert.equal(loop.last!.conditions[0]!.reason, 'SwitchingTraffic');

    // Green fully available: the Service switches, blue is still kept.
    loop.rollOut('deployment-green');
    loop.apply(loop.call());
    assert.equal(selectorColor(loop.desired('service')), 'green');
    // The next steps are seconds apart: it asks to be called again rather than wait for a watch event
    // (an open circuit breaker drops them; a revert right after a cutover took minutes at 15 s a step).
    assert.ok(Number(loop.last!.meta!.ttl!.seconds) <= 5, `called again soon: ${loop.last!.meta!.ttl!.seconds} s`);
    assert.ok(loop.desiredKeys().includes('deployment-blue'), 'blue stays until the switch is observed');
    assert.equal(loop.status()['ready'], false);

    // The switch is observed: blue leaves desired state, and the Widget is ready on green.
    loop.settle();
    // Issue 26: status first, then READY; blue goes once the Widget shows both on green (one call each).
    loop.apply(loop.call());
    assert.equal(loop.status()['activeColor'], 'green');
    assert.equal(loop.status()['ready'], true);
    assert.equal(loop.last!.desired!.composite!.ready, Ready.READY_FALSE, 'READY follows a call later');
    assert.ok(loop.desiredKeys().includes('deployment-blue'), 'blue stays until the Widget shows READY on green');
    assert.equal(loop.last!.desired!.resources['deployment-blue']!.ready, Ready.READY_TRUE, 'and holds nothing up');
    loop.apply(loop.call());
    assert.equal(loop.last!.desired!.composite!.ready, Ready.READY_TRUE);
    // No composed resource changes before blue's turn to leave, so no watch event may bring that call
    // (and an open circuit breaker drops the status write's): the answer asks for it in seconds.
    assert.ok(loop.desiredKeys().includes('deployment-blue'));
    assert.ok(Number(loop.last!.meta!.ttl!.seconds) <= 5, `called again soon: ${loop.last!.meta!.ttl!.seconds} s`);
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-green', 'pdb', 'service']);
    assert.equal(Number(loop.last!.meta!.ttl!.seconds), 60, 'settled: the poll interval is enough');
    assert.equal(loop.status()['activeColor'], 'green');
    assert.equal(loop.status()['ready'], true);
    assert.equal(loop.status()['availableReplicas'], 42);
  });

  // Seen on a real node: with the breaker open a color patch itself was dropped, and the revert began only at the
  // settled minute's call. While the XR shows Responsive False, polling is all that is left.
  test('while Crossplane shows its watch circuit breaker open, a settled Widget asks to be called every few seconds', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    for (let i = 0; i < 4; i++) {
      loop.settle();
      loop.apply(loop.call());
    }
    assert.equal(loop.status()['ready'], true);
    assert.equal(Number(loop.last!.meta!.ttl!.seconds), 60, 'settled and responsive: the poll interval');
    const responsive = (status: string) => {
      const st = (loop.xr['status'] ?? {}) as Obj;
      const others = ((st['conditions'] ?? []) as Obj[]).filter((c) => c['type'] !== 'Responsive');
      loop.xr = { ...loop.xr, status: { ...st, conditions: [...others, { type: 'Responsive', status, reason: 'X' }] } };
    };
    responsive('False');
    loop.call();
    assert.ok(Number(loop.last!.meta!.ttl!.seconds) <= 5, `breaker open: ${loop.last!.meta!.ttl!.seconds} s`);
    responsive('True');
    loop.call();
    assert.equal(Number(loop.last!.meta!.ttl!.seconds), 60, 'closed again');
  });

  test('a cutover whose new color is stuck keeps blue serving and is not called every 2 s for ever', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    for (let i = 0; i < 4; i++) {
      loop.settle();
      loop.apply(loop.call());
    }
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 42 } };
    loop.apply(loop.call());
    loop.rollOut('deployment-green', 3);
    const green = loop.observed.get('deployment-green')!;
    const status = green['status'] as Obj;
    status['conditions'] = [
      ...(status['conditions'] as Obj[]),
      { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'image pull failed' },
    ];
    loop.apply(loop.call());
    assert.equal(selectorColor(loop.desired('service')), 'blue', 'blue keeps serving');
    assert.ok(loop.last!.results.some((r) => r.reason === 'RolloutStuck'));
    assert.equal(Number(loop.last!.meta!.ttl!.seconds), 15, 'stuck: the usual pace, not 2 s');
  });

  // Issue 26: the budget moved to the new color a call after the switch, so the Widget went READY True, then
  // False while the disruption controller caught up with the new selector, then True again.
  test('after the switch READY stays True: the budget moves with the Service, even with the disruption controller a call behind', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call()); // The budget comes once blue is available (issue 26); its controller catches up.
    loop.settle();
    loop.apply(loop.call());
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 42 } };
    loop.apply(loop.call());
    loop.rollOut('deployment-green');
    const ready: boolean[] = [];
    const readyColumn: boolean[] = [];
    // The disruption controller sees each budget one call after it was applied.
    let pending: Obj | undefined;
    for (let i = 0; i < 5; i++) {
      const rsp = loop.call();
      if (selectorColor(loop.desired('service')) === 'green')
        assert.equal(
          (((loop.desired('pdb')!['spec'] as Obj)['selector'] as Obj)['matchLabels'] as Obj)[
            'function-platform.dev/color'
          ],
          'green',
          'the budget follows the Service in the same answer',
        );
      ready.push(loop.status()['ready'] === true);
      // Crossplane's READY is what flapped: it comes from the desired composite's readiness.
      readyColumn.push(rsp.desired!.composite!.ready === Ready.READY_TRUE);
      loop.apply(rsp);
      const pdb = loop.observed.get('pdb')!;
      if (pending) pdb['status'] = { observedGeneration: pending['generation'] };
      pending = { generation: (pdb['metadata'] as Obj)['generation'] };
    }
    const first = ready.indexOf(true);
    assert.ok(first >= 0, `ready on green at last: ${ready.join(', ')}`);
    assert.deepEqual(
      ready.slice(first),
      ready.slice(first).map(() => true),
      `READY went back: ${ready.join(', ')}`,
    );
    const turned = readyColumn.indexOf(true);
    assert.ok(turned >= 0, `Crossplane's READY turned True at last: ${readyColumn.join(', ')}`);
    assert.ok(readyColumn.slice(turned).every(Boolean), `Crossplane's READY went back: ${readyColumn.join(', ')}`);
    assert.equal(loop.status()['activeColor'], 'green');
  });

  test('changing color and image together leaves the live pods untouched', () => {
    const loop = new Loop(widget({ color: 'blue', size: 2, image: 'shop:1' }));
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.apply(loop.call());
    const before = JSON.stringify(loop.observed.get('deployment-blue')!['spec']);
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 2, image: 'shop:2' } };
    loop.apply(loop.call());
    assert.equal(JSON.stringify(loop.desired('deployment-blue')!['spec']), before);
    assert.match(JSON.stringify(loop.desired('deployment-green')), /shop:2/);
  });

  test('reverting the color mid-cutover drops the half-started color', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.apply(loop.call());
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 42 } };
    loop.apply(loop.call());
    loop.rollOut('deployment-green', 5);
    loop.xr = { ...loop.xr, spec: { color: 'blue', size: 42 } };
    loop.apply(loop.call());
    assert.deepEqual(loop.desiredKeys(), ['deployment-blue', 'pdb', 'service']);
    assert.equal(selectorColor(loop.desired('service')), 'blue');
  });

  test('a restart at any step converges: the same observed state gives the same answer', () => {
    const loop = new Loop(seed);
    loop.apply(loop.call());
    loop.rollOut('deployment-blue');
    loop.apply(loop.call());
    loop.xr = { ...loop.xr, spec: { color: 'green', size: 42 } };
    for (let step = 0; step < 4; step++) {
      const a = loop.call();
      const b = runFunction(buildRequest(loop.xr, [...loop.observed.values()]));
      assert.deepEqual(b.desired, a.desired, `step ${step}: answers differ`);
      loop.apply(a);
      for (const key of loop.observed.keys()) if (key.startsWith('deployment-')) loop.rollOut(key);
    }
    assert.equal(loop.status()['activeColor'], 'green');
  });

  test('with an autoscaler the live Deployment leaves replicas to it', () => {
    const loop = new Loop(widget({ color: 'blue', size: 2, autoscale: { maxSize: 5 } }));
    loop.apply(loop.call());
    assert.equal(
      (loop.desired('deployment-blue')!['spec'] as Obj)['replicas'],
      2,
      'before anything is live, start at size',
    );
    loop.rollOut('deployment-blue');
    loop.settle();
    loop.apply(loop.call()); // The budget comes once blue is available (issue 26); its controller catches up.
    loop.settle();
    loop.apply(loop.call());
    assert.equal(
      (loop.desired('deployment-blue')!['spec'] as Obj)['replicas'],
      undefined,
      'live: the HPA owns replicas',
    );
  });

  test('names too long for a Service are shortened with a hash, stably', () => {
    const long = 'a'.repeat(80);
    const a = new Loop(widget({}, long));
    a.call();
    const name = String((a.desired('service')!['metadata'] as Obj)['name']);
    assert.ok(name.length <= 63, name);
    const b = new Loop(widget({}, long));
    b.call();
    assert.equal((b.desired('service')!['metadata'] as Obj)['name'], name);
  });
});
