// Widgets on a real node: real Crossplane composes, the real Deployment
// controller and scheduler place the pods, a real kubelet runs them in
// containerd (the whoami stand-in image: the answer names the pod, and so its
// color), and kube-proxy's rules carry requests from a ClusterIP to them.
// Nothing here plays a component: the requests are real, and so are the kills.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, realNodeSuiteSkipReason } from '../support/control-plane.js';
import { controlPlaneForSuite, ensureNamespace, eventually } from '../support/e2e.js';
import { containerPids, type Sample, startTraffic } from '../support/real-node.js';
import { repoRoot } from '../../dev/infra/paths.js';

const skip = realNodeSuiteSkipReason('e2e-real: Widgets on a real node');
const NS = 'team-a';
const COLOR_LABEL = 'function-platform.dev/color';

let cp: ControlPlane;
const widgetRef = (name: string) => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, namespace: NS },
});
const widget = (name: string) => cp.client.getObj(widgetRef(name));

/** The pods of a Widget's color, as the kubelet reports them. */
async function podsOf(name: string, color?: string): Promise<Json[]> {
  const selector = `app.kubernetes.io/instance=${name}${color ? `,${COLOR_LABEL}=${color}` : ''}`;
  return cp.client.listObjs('v1', 'Pod', NS, selector);
}

const podReady = (p: Json) =>
  p['status']?.['phase'] === 'Running' &&
  (p['status']?.['conditions'] ?? []).some((c: Json) => c['type'] === 'Ready' && c['status'] === 'True');

/** Ready on `color`, every replica available, and no pod of another color left running. */
async function settledOn(name: string, color: string, size: number, timeoutMs = 120_000): Promise<Json> {
  return eventually(
    `Widget ${name} settled on ${color}`,
    async () => {
      const w = await widget(name);
      const s = w?.['status'] ?? {};
      if (s['ready'] !== true || s['activeColor'] !== color || s['availableReplicas'] !== size) return undefined;
      const pods = await podsOf(name);
      return pods.every((p) => p['metadata']['labels'][COLOR_LABEL] === color) ? w : undefined;
    },
    timeoutMs,
    250,
  );
}

/** The colors the traffic saw, in order, with how many answers each run had. */
function runsOf(samples: Sample[]): Array<{ color: string; answers: number }> {
  const runs: Array<{ color: string; answers: number }> = [];
  for (const s of samples) {
    const color = /-(blue|green)-/.exec(s.pod ?? '')?.[1];
    if (!color) continue;
    const last = runs[runs.length - 1];
    if (last?.color === color) last.answers++;
    else runs.push({ color, answers: 1 });
  }
  return runs;
}

describe('Widgets on a real node', { skip }, () => {
  before(async () => {
    cp = await controlPlaneForSuite({ realNodes: true });
    await ensureNamespace(cp, NS);
  });
  after(async () => {
    await cp?.stop();
  });

  test('the seed Widget: its pods run for real as far as the node has CPU for them, and the Widget says how many are available', async (t) => {
    await cp.kubectl(['apply', '-n', NS, '-f', join(repoRoot, 'examples', 'widget', 'seed.yaml')]);
    // The scheduler places what the node's CPU admits (each replica asks for 100m); the rest stay Pending.
    const settled = await eventually(
      'the seed Widget settled',
      async () => {
        const pods = await podsOf('my-widget', 'blue');
        if (pods.length !== 42) return undefined;
        const running = pods.filter(podReady).length;
        const pending = pods.filter((p) => p['status']?.['phase'] === 'Pending');
        const unschedulable = pending.filter((p) =>
          (p['status']?.['conditions'] ?? []).some((c: Json) => c['reason'] === 'Unschedulable'),
        );
        if (running + unschedulable.length !== 42) return undefined;
        const w = await widget('my-widget');
        return w?.['status']?.['availableReplicas'] === running ? { w, running, unschedulable } : undefined;
      },
      180_000,
      500,
    );
    const { w, running, unschedulable } = settled;
    t.diagnostic(
      `seed Widget on a ${(await cp.client.getObj({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'real-node-1' } }))?.['status']?.['allocatable']?.['cpu']}-CPU node: ${running} pods running, ${unschedulable.length} unschedulable; the Widget says: ${w['status']['message']}`,
    );
    assert.ok(running > 0, 'some of the seed pods run');
    assert.equal(w['status']['ready'], running === 42);
    if (running < 42) {
      assert.match(String(w['status']['message']), new RegExp(`${running}/42 replicas available`));
      assert.match(
        String(
          unschedulable[0]?.['status']?.['conditions']?.find((c: Json) => c['reason'] === 'Unschedulable')?.['message'],
        ),
        /Insufficient cpu/,
      );
    }
    await cp.kubectl(['delete', 'widget', 'my-widget', '-n', NS, '--wait=false']);
    await eventually(
      'the seed pods gone',
      async () => ((await podsOf('my-widget')).length === 0 ? true : undefined),
      120_000,
    );
  });

  test('blue to green and back while requests flow through the ClusterIP: none fails, and the color answered switches once each way', async (t) => {
    const size = 4;
    await cp.kubectl(['apply', '-n', NS, '-f', '-'], {
      input: `apiVersion: example.com/v1
kind: Widget
metadata: {name: shop}
spec: {color: blue, size: ${size}, resources: {cpu: 50m, memory: 32Mi}}
`,
    });
    await settledOn('shop', 'blue', size);
    const svc = await cp.client.getObj({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'shop', namespace: NS },
    });
    const url = `http://${svc!['spec']['clusterIP']}:8080/`;
    const traffic = startTraffic(cp.realNode!, url);
    // A new Service's ClusterIP answers once kube-proxy has written its rules, which can be a moment
    // after the Widget is Ready: the cutover is judged from 20 answers in a row on, not before.
    await eventually(
      'the ClusterIP answering 20 times in a row',
      async () => {
        const sofar = traffic.sofar();
        return sofar.length >= 20 && sofar.slice(-20).every((s) => s.ok) ? true : undefined;
      },
      60_000,
    );
    const judgedFrom = Date.now();
    const times: Record<string, number> = {};
    // When each step happened, to place a failed request (the marks are this process's clock, as are the samples').
    const marks: Array<{ t: number; what: string }> = [{ t: judgedFrom, what: 'traffic on blue' }];
    for (const color of ['green', 'blue']) {
      const started = Date.now();
      marks.push({ t: started, what: `asked for ${color}` });
      await cp.kubectl([
        'patch',
        'widget',
        'shop',
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { color } }),
      ]);
      await settledOn('shop', color, size);
      times[color] = Date.now() - started;
      marks.push({ t: Date.now(), what: `settled on ${color}, the other color's pods gone` });
      await sleep(2000);
    }
    const all = await traffic.stop();
    const samples = all.filter((s) => s.t - s.ms >= judgedFrom);
    const failed = samples.filter((s) => !s.ok);
    const runs = runsOf(samples);
    const placed = (at: number) => {
      const before = marks.filter((m) => m.t <= at).pop() ?? marks[0]!;
      return `${((at - before.t) / 1000).toFixed(1)} s after ${before.what}`;
    };
    for (const s of failed.slice(0, 10))
      t.diagnostic(`failed ${placed(s.t - s.ms)} (${s.ms} ms): ${s.error ?? `HTTP ${s.status}`}`);
    t.diagnostic(
      `${samples.length} requests through ${url}: ${failed.length} failed; cutover to green ${times['green']} ms, back to blue ${times['blue']} ms; answers by color in order: ${runs.map((r) => `${r.color}×${r.answers}`).join(' → ')}`,
    );
    assert.deepEqual(
      failed.slice(0, 5).map((s) => s.error ?? `HTTP ${s.status}`),
      [],
      `${failed.length} of ${samples.length} requests failed`,
    );
    assert.deepEqual(
      runs.map((r) => r.color),
      ['blue', 'green', 'blue'],
      'the color answered switches exactly once each way',
    );
    assert.ok(samples.length > 100, `requests flowed the whole time (${samples.length})`);
  });

  test("a pod's process killed with kill -9: the kubelet restarts it, the Widget says so while it is down, and is Ready again", async (t) => {
    // A Widget of its own: the cutovers above used up the shop Widget's watch budget (Crossplane's
    // circuit breaker), and an open breaker would hide a short outage from the Widget for 30 s.
    await cp.kubectl(['apply', '-n', NS, '-f', '-'], {
      input: `apiVersion: example.com/v1
kind: Widget
metadata: {name: kiosk}
spec: {color: blue, size: 2, resources: {cpu: 50m, memory: 32Mi}}
`,
    });
    await settledOn('kiosk', 'blue', 2);
    const victim = (await podsOf('kiosk', 'blue')).filter(podReady)[0]!;
    const podRef = { apiVersion: 'v1', kind: 'Pod', metadata: { name: victim['metadata']['name'], namespace: NS } };
    const restarts = async () =>
      Number((await cp.client.getObj(podRef))?.['status']?.['containerStatuses']?.[0]?.['restartCount']);
    const killOnce = async () => {
      const before = await restarts();
      const [pid] = containerPids(String(victim['metadata']['uid']));
      assert.ok(pid, `the container process of ${victim['metadata']['name']} is found on the host`);
      process.kill(pid!, 'SIGKILL');
      await eventually('the container restarted', async () => ((await restarts()) > before ? true : undefined), 60_000);
      return pid!;
    };
    // The first kill is restarted at once; the second waits out the kubelet's back-off (10 s), long enough to see.
    const first = await killOnce();
    await eventually(
      'the pod Ready again',
      async () => (podReady((await cp.client.getObj(podRef))!) ? true : undefined),
      60_000,
    );
    const seen: string[] = [];
    const killed = Date.now();
    const second = await killOnce();
    const back = await eventually(
      'the Widget Ready again with both replicas',
      async () => {
        const s = (await widget('kiosk'))?.['status'];
        if (s && s['availableReplicas'] !== 2) seen.push(`${s['availableReplicas']}: ${s['message']}`);
        const p = await cp.client.getObj(podRef);
        return podReady(p!) && s?.['ready'] === true && s['availableReplicas'] === 2 && seen.length > 0 ? p : undefined;
      },
      90_000,
      100,
    );
    const status = back['status']['containerStatuses'][0];
    t.diagnostic(
      `killed pids ${first} and ${second} of ${victim['metadata']['name']}: Ready again ${Date.now() - killed} ms after the second (restartCount ${status['restartCount']}, last exit ${status['lastState']['terminated']?.['exitCode']}); the Widget said meanwhile: ${[...new Set(seen)].join(' | ')}`,
    );
    assert.equal(
      status['lastState']['terminated']?.['exitCode'],
      137,
      'the kubelet saw the container killed by SIGKILL',
    );
    assert.ok(status['restartCount'] >= 2);
    assert.ok(
      seen.some((m) => /^1: .*1\/2 replicas available/.test(m)),
      `the Widget said 1/2 while the pod was down: ${JSON.stringify(seen)}`,
    );
  });
});
