// Blue/green cutovers measured under real Crossplane: every version of the
// Widget a user would see with `kubectl get -w` (its READY, Responsive and
// message), what Crossplane's watch circuit breaker counted for it, the events
// emitted for it (Crossplane's debug log names each one as it is emitted,
// before client-go's spam filter) and the ones that reached the API, and how
// many times Crossplane reconciled it. The e2e suite asserts on these figures;
// `node dist/test/support/cutovers.js` prints them against `npm run cluster`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { type Json, KubeClient } from './apiserver.js';
import { watchPath } from './watch.js';

/** A version of the Widget as written. */
export interface Version {
  at: number;
  rv: string;
  ready?: string;
  responsive?: string;
  responsiveReason?: string;
  message?: string;
  activeColor?: string;
  /** status.ready as the function wrote it. */
  statusReady?: boolean;
  /** The blueprint's own condition (WidgetReady): its reason. */
  reason?: string;
  /** Composed resources Crossplane lists (spec.crossplane.resourceRefs). */
  refs?: number;
}

export interface Figures {
  from: string;
  to: string;
  /** The patch to READY True on the new color with the old Deployment gone. */
  ms: number;
  /** Versions of the Widget written from the patch to the end. */
  writes: number;
  /** Versions after the first READY True on the new color whose READY is not True. */
  flipsAfterSwitch: number;
  /** Versions with Responsive not True. */
  unresponsive: number;
  /** Watch events Crossplane's circuit breaker counted for Widgets: allowed, and dropped while open. */
  breaker: { allowed: number; dropped: number };
  /** Events emitted on the Widget: the function's results, and Crossplane's own. */
  emitted: { function: number; crossplane: number };
  /** Of those, the ones the API server holds (client-go drops some). */
  stored: { function: number; crossplane: number };
  /** Reconciles of the Widget by Crossplane. */
  reconciles: number;
  /** READY as it went, one letter per version (T, F, or - when unset). */
  readyTrail: string;
  /** Every version written, in order. */
  versions: Version[];
}

/** What a measurement needs of a running control plane. */
export interface Plane {
  client: KubeClient;
  kubeconfig: string;
  crossplaneMetricsPort: number;
  crossplaneLog(): string;
}

const condition = (obj: Json, type: string): Json | undefined =>
  (obj['status']?.['conditions'] as Json[] | undefined)?.find((c) => c['type'] === type);

/** Records every version of one object of a collection (e.g. /apis/example.com/v1/namespaces/team-a/widgets). */
export function recordVersions(kubeconfig: string, collection: string, name: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const versions: Version[] = [];
  const w = watchPath(
    kc,
    collection,
    (_type, obj) => {
      const ready = condition(obj, 'Ready');
      const responsive = condition(obj, 'Responsive');
      versions.push({
        at: Date.now(),
        rv: String(obj['metadata']?.['resourceVersion']),
        ...(ready ? { ready: String(ready['status']) } : {}),
        ...(responsive
          ? { responsive: String(responsive['status']), responsiveReason: String(responsive['reason']) }
          : {}),
        ...(obj['status']?.['message'] ? { message: String(obj['status']['message']) } : {}),
        ...(obj['status']?.['activeColor'] ? { activeColor: String(obj['status']['activeColor']) } : {}),
        ...(typeof obj['status']?.['ready'] === 'boolean' ? { statusReady: obj['status']['ready'] } : {}),
        ...(condition(obj, 'WidgetReady') ? { reason: String(condition(obj, 'WidgetReady')!['reason']) } : {}),
        refs: (obj['spec']?.['crossplane']?.['resourceRefs'] ?? obj['spec']?.['resourceRefs'] ?? []).length,
      });
    },
    { query: { fieldSelector: `metadata.name=${name}` } },
  );
  return { versions, stop: () => w.stop() };
}

/** Crossplane's circuit breaker counts for one XR controller (composite/<plural>.<group>). */
export async function breakerCounts(port: number, controller: string): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^circuit_breaker_events_total\{controller="([^"]+)",result="([^"]+)"\} (\S+)$/.exec(line);
    if (m && m[1] === controller) out[m[2]!] = Number(m[3]);
  }
  return out;
}

/** Events emitted on an object, from Crossplane's debug log (client-go logs each one as it is emitted). */
export function emittedEvents(log: string, kind: string, namespace: string, name: string) {
  const who = `Event(v1.ObjectReference{Kind:"${kind}", Namespace:"${namespace}", Name:"${name}",`;
  let fn = 0;
  let xp = 0;
  for (const line of log.split('\n')) {
    if (!line.includes(who)) continue;
    if (line.includes('Pipeline step "')) fn++;
    else xp++;
  }
  return { function: fn, crossplane: xp };
}

/** Reconciles of an object by Crossplane, from its debug log. */
export function reconcilesIn(log: string, namespace: string, name: string): number {
  const who = `"request": {"name":"${name}","namespace":"${namespace}"}`;
  return log.split('\n').filter((l) => l.includes('\tReconciling\t') && l.includes(who)).length;
}

/** Events the API server holds for an object, each counted as often as it was recorded. */
export async function storedEvents(client: KubeClient, namespace: string, kind: string, name: string) {
  let fn = 0;
  let xp = 0;
  for (const e of await client.listObjs('v1', 'Event', namespace)) {
    if (e['involvedObject']?.['kind'] !== kind || e['involvedObject']?.['name'] !== name) continue;
    const n = Number(e['count'] ?? 1);
    if (String(e['message']).startsWith('Pipeline step "')) fn += n;
    else xp += n;
  }
  return { function: fn, crossplane: xp };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await sleep(250);
  }
}

/**
 * One blue/green cutover of Widget `name` to `to`, as a user makes it (a
 * merge patch of spec.color), measured until READY is True on the new color
 * and the old Deployment is gone, then `settleMs` more to see READY stay.
 */
export async function measureCutover(
  plane: Plane,
  namespace: string,
  name: string,
  to: string,
  opts: { timeoutMs?: number; settleMs?: number } = {},
): Promise<Figures> {
  const ref = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace } };
  const before = await plane.client.getObj(ref);
  const from = String(before?.['spec']?.['color']);
  const logFrom = plane.crossplaneLog().length;
  const breaker0 = await breakerCounts(plane.crossplaneMetricsPort, 'composite/widgets.example.com');
  const stored0 = await storedEvents(plane.client, namespace, 'Widget', name);
  const rec = recordVersions(plane.kubeconfig, `/apis/example.com/v1/namespaces/${namespace}/widgets`, name);
  // The watch starts with the current version (ADDED): wait for it, so that every later write is seen.
  await until('the Widget watched', async () => (rec.versions.length > 0 ? true : undefined), 10_000);
  rec.versions.length = 0;
  const started = Date.now();
  await plane.client.raw('PATCH', ref, 'patch', {
    body: { spec: { color: to } },
    contentType: 'application/merge-patch+json',
    query: { fieldManager: 'kubectl-patch' },
  });
  const oldDeployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `${name}-${from}`, namespace } };
  await until(
    `Widget ${name} Ready on ${to} with ${name}-${from} gone`,
    async () => {
      const w = await plane.client.getObj(ref);
      const ok =
        condition(w ?? {}, 'Ready')?.['status'] === 'True' &&
        w?.['status']?.['activeColor'] === to &&
        w?.['status']?.['ready'] === true &&
        !(await plane.client.getObj(oldDeployment));
      return ok ? true : undefined;
    },
    opts.timeoutMs ?? 120_000,
  );
  const ms = Date.now() - started;
  await sleep(opts.settleMs ?? 5_000);
  rec.stop();
  const breaker1 = await breakerCounts(plane.crossplaneMetricsPort, 'composite/widgets.example.com');
  const stored1 = await storedEvents(plane.client, namespace, 'Widget', name);
  const log = plane.crossplaneLog().slice(logFrom);
  const versions = rec.versions;
  const switched = versions.findIndex((v) => v.activeColor === to && v.ready === 'True');
  const delta = (k: string) => (breaker1[k] ?? 0) - (breaker0[k] ?? 0);
  return {
    from,
    to,
    ms,
    writes: versions.length,
    flipsAfterSwitch: switched < 0 ? 0 : versions.slice(switched).filter((v) => v.ready !== 'True').length,
    unresponsive: versions.filter((v) => v.responsive !== undefined && v.responsive !== 'True').length,
    breaker: { allowed: delta('Allowed') + delta('HalfOpenAllowed'), dropped: delta('Dropped') },
    emitted: emittedEvents(log, 'Widget', namespace, name),
    stored: { function: stored1.function - stored0.function, crossplane: stored1.crossplane - stored0.crossplane },
    reconciles: reconcilesIn(log, namespace, name),
    readyTrail: versions.map((v) => (v.ready === 'True' ? 'T' : v.ready === 'False' ? 'F' : '-')).join(''),
    versions,
  };
}

/** One line of figures. */
export function describeFigures(f: Figures): string {
  return `${f.from} -> ${f.to}: ${(f.ms / 1000).toFixed(1)} s; ${f.writes} Widget writes (READY ${f.readyTrail}), ${f.flipsAfterSwitch} READY flips after the switch, ${f.unresponsive} versions not Responsive; circuit breaker ${f.breaker.allowed} counted, ${f.breaker.dropped} dropped; events emitted ${f.emitted.function} by the function, ${f.emitted.crossplane} by Crossplane (${f.stored.function} and ${f.stored.crossplane} reached the API); ${f.reconciles} reconciles`;
}

// node dist/test/support/cutovers.js [NAME] [NAMESPACE] [COUNT] [GAP_SECONDS]: against npm run cluster (.cache/cluster).
if (process.argv[1]?.endsWith('cutovers.js')) {
  const [name = 'my-widget', namespace = 'team-a', count = '3', gap = '60'] = process.argv.slice(2);
  const { repoRoot } = await import('../../dev/infra/paths.js');
  const dir = join(repoRoot, '.cache', 'cluster');
  const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as {
    kubeconfig: string;
    crossplaneMetricsPort?: number;
  };
  if (!state.crossplaneMetricsPort) throw new Error('state.json names no crossplaneMetricsPort: npm run cluster again');
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const plane: Plane = {
    client: KubeClient.fromKubeConfig(kc),
    kubeconfig: state.kubeconfig,
    crossplaneMetricsPort: state.crossplaneMetricsPort,
    crossplaneLog: () => readFileSync(join(dir, 'logs', 'crossplane.log'), 'utf8'),
  };
  for (let i = 0; i < Number(count); i++) {
    const w = await plane.client.getObj({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name, namespace },
    });
    const to = w?.['spec']?.['color'] === 'blue' ? 'green' : 'blue';
    const t0 = Date.now();
    const f = await measureCutover(plane, namespace, name, to);
    process.stdout.write(`${describeFigures(f)}\n`);
    if (process.env['CUTOVERS_VERBOSE'])
      for (const v of f.versions)
        process.stdout.write(
          `  +${v.at - f.versions[0]!.at} ms rv ${v.rv} refs ${v.refs} READY ${v.ready} ready ${v.statusReady} ${v.reason ?? ''} ${v.activeColor ?? ''}: ${v.message ?? ''}\n`,
        );
    if (i < Number(count) - 1) await sleep(Math.max(0, Number(gap) * 1000 - (Date.now() - t0)));
  }
  process.exit(0);
}
