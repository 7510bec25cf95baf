#!/usr/bin/env node
// npm run bench:scale: composites by the hundred under real Crossplane (the
// local control plane, kwok's fake nodes). Widgets composed by
// function-platform and, in the same run, by
// crossplane-contrib/function-patch-and-transform (the bench's peer,
// bench/peer/composition.yaml), one after the other; then Databases (ours
// only), a third each in the cluster on postgres, in the cluster on mysql and
// on AWS. For each size and each function, in 10 namespaces:
//   - N applied at once; time from the apply to each one Ready;
//   - Widgets: every size 1 → 2; time until each has 2 available;
//   - Widgets: every color changed (ours only: the peer's Composition cannot,
//     its Deployment's selector holds the color); time until each is live on it;
//   - idle: nothing changes for SCALE_IDLE_S; what the quiet costs (nothing is listed meanwhile);
//   - the function killed and started again; time until Crossplane has counted
//     as many calls as there are composites and all are Ready and Synced again;
//   - Crossplane core killed and started again; the same;
// with the calls Crossplane made (its function_run_function_request_total),
// the times its watch circuit breaker opened, the function's RSS (its peak, the
// kernel's high-water mark, and at the end), and the CPU seconds of every
// process of the control plane beside the machine's (where the time went); then
// the composites deleted before the next run. No AWS and no provider run here:
// a STAND-IN for provider-upjet-aws (test/support/stand-in-upjet-aws.ts) marks
// each RDS instance available once Crossplane has made it. The function runs
// with the Node flags of the image's ENTRYPOINT, as npm run bench runs it.
//
//   SCALE_SIZES=100,300,1000     Widgets, per size
//   SCALE_DATABASES=30,100,300   Databases, per size (empty: none)
//   SCALE_FUNCTIONS=ours,peer    which functions compose the Widgets
//   SCALE_STEPS=apply,size,color,idle,function,crossplane   which steps run (apply always does)
//   SCALE_IDLE_S=120             how long the idle step watches
//   SCALE_CROSSPLANE_ARGS='--max-reconcile-rate=10'   more flags for Crossplane core
//   SCALE_FUNCTION_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof'   more Node flags for function-platform
//   SCALE_QUICK=1                CI's smoke run: 6 Widgets and 3 Databases, every step, 10 s idle, results
//                                in .cache/bench/scale-quick (the knobs above still win when set)
//   SCALE_OUT=DIR                where scale.json goes (default bench/results)
//   SCALE_TIMEOUT_S=900          the longest any step may take
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../dev/infra/paths.js';
import {
  type ControlPlane,
  PEER_COMPOSITION,
  PEER_FUNCTION,
  startControlPlane,
} from '../test/support/control-plane.js';
import type { Json } from '../test/support/apiserver.js';
import { samples, sum } from '../test/support/prometheus.js';
import { standInProviderUpjetAws } from '../test/support/stand-in-upjet-aws.js';
import { say, table } from './format.js';
import { imageNodeFlags } from './servers.js';
import { cpuMs, machineBusyMs, onlineCpus, peakRssMb, resetPeakRss, rssMb } from './proc.js';

type Fn = 'ours' | 'peer';
type Kind = 'Widget' | 'Database';
const STEPS = ['apply', 'size', 'color', 'idle', 'function', 'crossplane'] as const;
type StepKey = (typeof STEPS)[number];

const env = (name: string, dflt: string) => process.env[name] ?? dflt;
const list = (s: string) => s.split(',').filter((x) => x.trim() !== '');
const quick = process.env['SCALE_QUICK'] === '1';
const widgetSizes = list(env('SCALE_SIZES', quick ? '6' : '100,300,1000')).map(Number);
const databaseSizes = list(env('SCALE_DATABASES', quick ? '3' : '30,100,300')).map(Number);
const functions = list(env('SCALE_FUNCTIONS', 'ours,peer')) as Fn[];
const steps = new Set(list(env('SCALE_STEPS', STEPS.join(','))) as StepKey[]);
const idleMs = Number(env('SCALE_IDLE_S', quick ? '10' : '120')) * 1000;
const crossplaneArgs = env('SCALE_CROSSPLANE_ARGS', '').split(/\s+/).filter(Boolean);
const functionNodeFlags = env('SCALE_FUNCTION_NODE_FLAGS', '').split(/\s+/).filter(Boolean);
const outDir = join(repoRoot, env('SCALE_OUT', quick ? '.cache/bench/scale-quick' : 'bench/results'));
const timeoutMs = Number(env('SCALE_TIMEOUT_S', '900')) * 1000;
const NAMESPACES = 10;

for (const n of [...widgetSizes, ...databaseSizes])
  if (!Number.isInteger(n) || n < 1) throw new Error(`SCALE_SIZES, SCALE_DATABASES: ${n} is not a size`);
for (const f of functions)
  if (f !== 'ours' && f !== 'peer') throw new Error(`SCALE_FUNCTIONS: ${f} is not ours or peer`);
for (const k of steps) if (!STEPS.includes(k)) throw new Error(`SCALE_STEPS: ${k} is not one of ${STEPS.join(', ')}`);
if (!Number.isFinite(idleMs) || idleMs < 0) throw new Error('SCALE_IDLE_S: not a number of seconds');

const FUNCTION_NAMES: Record<Fn, string> = { ours: 'function-platform', peer: PEER_FUNCTION };
const COMPOSITIONS: Record<Fn, string> = { ours: 'widgets.example.com', peer: PEER_COMPOSITION };
/** The component of the control plane that is the function's process. */
const PROCESSES: Record<Fn, string> = { ours: 'function', peer: PEER_FUNCTION };
/** The control plane's processes whose CPU each step reports (the functions are added). */
const COMPONENTS = [
  'kube-apiserver',
  'etcd',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
  'stand-ins',
  'crossplane',
] as const;

/** CPU seconds a process has used (bench/proc.ts reads /proc). */
const cpuSeconds = (pid: number): number => cpuMs(pid) / 1000;

interface StepResult {
  step: string;
  /** Seconds from the step's start to each composite's moment (Ready; 2 available; Ready on the new color); none for idle and restarts. */
  seconds: number[];
  /** Seconds from the step's start until it was done (every composite there, and the calls made). */
  doneS: number;
  /** A restart: every composite was Ready before it, so only doneS says anything. */
  restart: boolean;
  /** Nothing changed: the step watched for SCALE_IDLE_S. */
  idle: boolean;
  functionCpu: number;
  crossplaneCpu: number;
  calls: number;
  /** Times Crossplane's XR watch circuit breaker opened (circuit_breaker_opens_total). */
  breakerOpens: number;
  peakRssMiB: number;
  endRssMiB: number;
  /** CPU seconds of each process of the control plane during the step. */
  cpu: Record<string, number>;
  /** CPU seconds the whole machine was busy during the step, and its CPUs. */
  machineCpu: number;
  cpus: number;
  /**
   * What the API server was asked during the step (its apiserver_request_total, by verb and resource; the bench's
   * own listing included, the same for each function) and the watch events it sent (apiserver_watch_events_total,
   * by kind): where its CPU went.
   */
  api: { requests: Record<string, number>; watchEvents: Record<string, number> };
}

interface RunResult {
  fn: Fn;
  kind: Kind;
  size: number;
  steps: StepResult[];
}

/** A composite as the bench follows it. */
interface Seen {
  name: string;
  ready: boolean;
  synced: boolean;
  phase?: string;
  activeColor?: string;
  available?: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

class Scale {
  constructor(
    private readonly cp: ControlPlane,
    private readonly fn: Fn,
    private readonly kind: Kind,
    private readonly size: number,
  ) {}

  private get pid(): number {
    return this.cp.component(PROCESSES[this.fn])!.pid;
  }

  /** Each kind and function has namespaces of its own: scale-ours-3, scale-peer-3, scale-db-3. */
  static prefixOf(fn: Fn, kind: Kind): string {
    return kind === 'Database' ? 'scale-db-' : `scale-${fn}-`;
  }

  private get prefix(): string {
    return Scale.prefixOf(this.fn, this.kind);
  }

  static namespaces(prefix: string): string[] {
    return Array.from({ length: NAMESPACES }, (_, i) => `${prefix}${i}`);
  }

  private metadata(i: number) {
    return { name: `${this.kind === 'Database' ? 'd' : 'w'}${i}`, namespace: `${this.prefix}${i % NAMESPACES}` };
  }

  widgets(color: string, size: number): object[] {
    return Array.from({ length: this.size }, (_, i) => ({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: this.metadata(i),
      spec: { color, size, crossplane: { compositionRef: { name: COMPOSITIONS[this.fn] } } },
    }));
  }

  /** A third each: postgres in the cluster, mysql in the cluster (no backups: no store here), postgres on RDS. */
  databases(): object[] {
    return Array.from({ length: this.size }, (_, i) => ({
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: this.metadata(i),
      spec:
        i % 3 === 2
          ? { engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } }
          : { engine: i % 3 === 0 ? 'postgres' : 'mysql', storageGB: 20, backup: { enabled: false } },
    }));
  }

  /** Crossplane's metrics: its calls to this function, and its circuit breakers' opens (0 after it restarts). */
  async counters(): Promise<{ calls: number; opens: number }> {
    const r = await fetch(`http://127.0.0.1:${this.cp.crossplaneMetricsPort}/metrics`);
    const s = samples(await r.text());
    return {
      calls: sum(s, 'function_run_function_request_total', { function_name: FUNCTION_NAMES[this.fn] }),
      opens: sum(s, 'circuit_breaker_opens_total', {}),
    };
  }

  /** The API server's request and watch-event counters now, by what they were for. */
  apiCounters(): { requests: Map<string, number>; watchEvents: Map<string, number> } {
    const text = execFileSync('kubectl', ['--kubeconfig', this.cp.kubeconfig, 'get', '--raw', '/metrics'], {
      maxBuffer: 256 << 20,
      encoding: 'utf8',
    });
    const requests = new Map<string, number>();
    const watchEvents = new Map<string, number>();
    // Anchored at a label's start: `resource=` is also the end of `subresource=`.
    const label = (key: string, name: string) => new RegExp(`[{,]${name}="([^"]*)"`).exec(key)?.[1] ?? '';
    const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
    for (const [key, v] of samples(text)) {
      if (key.startsWith('apiserver_request_total{')) {
        const sub = label(key, 'subresource');
        const group = label(key, 'group');
        add(
          requests,
          `${label(key, 'verb')} ${group ? `${group}/` : ''}${label(key, 'resource')}${sub ? `/${sub}` : ''}`,
          v,
        );
      } else if (key.startsWith('apiserver_watch_events_total{')) {
        const group = label(key, 'group');
        add(watchEvents, `${group ? `${group}/` : ''}${label(key, 'kind') || label(key, 'resource')}`, v);
      }
    }
    return { requests, watchEvents };
  }

  /** What grew between two readings of apiCounters, the largest first. */
  private static grown(from: Map<string, number>, to: Map<string, number>): Record<string, number> {
    return Object.fromEntries(
      [...to]
        .map(([k, v]) => [k, v - (from.get(k) ?? 0)] as const)
        .filter(([, d]) => d > 0)
        .sort((a, b) => b[1] - a[1]),
    );
  }

  private get(resource: string): Json[] {
    const out = execFileSync('kubectl', ['--kubeconfig', this.cp.kubeconfig, 'get', resource, '-A', '-o', 'json'], {
      maxBuffer: 512 << 20,
      encoding: 'utf8',
    });
    return (JSON.parse(out) as { items: Json[] }).items.filter((o) =>
      String(o['metadata']['namespace']).startsWith(this.prefix),
    );
  }

  /** The composites as the API server has them. */
  list(): Seen[] {
    return this.get(this.kind === 'Database' ? 'databases' : 'widgets').map((o) => {
      const conditions: Json[] = o['status']?.['conditions'] ?? [];
      const is = (type: string) => conditions.some((c) => c['type'] === type && c['status'] === 'True');
      return {
        name: `${o['metadata']['namespace']}/${o['metadata']['name']}`,
        ready: is('Ready'),
        synced: is('Synced'),
        phase: o['status']?.['phase'],
        activeColor: o['status']?.['activeColor'],
        available: o['status']?.['availableReplicas'],
      };
    });
  }

  /** STAND-IN for provider-upjet-aws: every RDS instance of this run not yet Ready is made available. */
  async standInAws(): Promise<void> {
    const waiting = this.get('instances.rds.aws.m.upbound.io').filter(
      (o) => !(o['status']?.['conditions'] ?? []).some((c: Json) => c['type'] === 'Ready' && c['status'] === 'True'),
    );
    await standInProviderUpjetAws(this.cp.client, waiting);
  }

  /** CPU seconds of each process now, by name (the function's too). */
  private cpuNow(): Map<string, { pid: number; cpu: number }> {
    const out = new Map<string, { pid: number; cpu: number }>();
    for (const name of [...COMPONENTS, 'function', PEER_FUNCTION]) {
      const p = this.cp.component(name);
      if (p?.pid && p.exited() === undefined) out.set(name, { pid: p.pid, cpu: cpuSeconds(p.pid) });
    }
    return out;
  }

  /** CPU seconds each process used between two readings; a process restarted since counts from its start. */
  private static cpuBetween(
    from: Map<string, { pid: number; cpu: number }>,
    to: Map<string, { pid: number; cpu: number }>,
  ): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, now] of to) {
      const was = from.get(name);
      out[name] = was && was.pid === now.pid ? now.cpu - was.cpu : now.cpu;
    }
    return out;
  }

  /**
   * Runs `start`, then watches until `done` holds for every composite (and, with `calls`, until Crossplane has
   * called the function that many times more; with `idle`, until that long has passed), and reports the step.
   */
  async step(
    name: string,
    start: () => Promise<void>,
    done: (w: Seen) => boolean,
    opts: { calls?: number; idleMs?: number } = {},
  ): Promise<StepResult> {
    // Read before the CPU is: the API server's work of answering it is not the step's.
    const api0 = this.apiCounters();
    const cpu0 = this.cpuNow();
    const busy0 = machineBusyMs();
    const pid0 = this.pid;
    resetPeakRss(pid0);
    let base = await this.counters();
    let crossplane = this.cp.component('crossplane')?.pid;
    const t0 = performance.now();
    await start();
    const firstSeen = new Map<string, number>();
    let sampled = 0;
    let last = base;
    let elapsed = 0;
    for (;;) {
      if (performance.now() - t0 > timeoutMs)
        throw new Error(`${this.fn} ${this.size} ${this.kind}s ${name}: not done after ${timeoutMs / 1000} s`);
      sampled = Math.max(sampled, rssMb(this.pid));
      const now = await this.counters();
      // Crossplane restarted: its counters began again.
      const pid = this.cp.component('crossplane')?.pid;
      if (pid !== crossplane) [base, crossplane] = [{ calls: 0, opens: 0 }, pid];
      last = now;
      const idleMs = opts.idleMs;
      if (idleMs !== undefined) {
        // Idle: nothing is listed (the bench's own lists would load the API server it measures).
        elapsed = performance.now() - t0;
        if (elapsed >= idleMs) break;
        await new Promise((r) => setTimeout(r, Math.min(1000, idleMs - elapsed)));
        continue;
      }
      if (this.kind === 'Database') await this.standInAws();
      const seen = this.list();
      elapsed = performance.now() - t0;
      for (const w of seen) if (done(w) && !firstSeen.has(w.name)) firstSeen.set(w.name, elapsed / 1000);
      // A restart ends when Crossplane has called that many times and every composite is done again now.
      const there =
        opts.calls === undefined
          ? firstSeen.size >= this.size
          : now.calls - base.calls >= opts.calls && seen.length >= this.size && seen.every(done);
      if (there) break;
      await new Promise((r) => setTimeout(r, quick ? 250 : 1000));
    }
    // The CPU and the machine read at the moment the step was seen done.
    const cpu = Scale.cpuBetween(cpu0, this.cpuNow());
    const machineCpu = (machineBusyMs() - busy0) / 1000;
    const api1 = this.apiCounters();
    // The kernel's high-water mark when the process is the one the step began with; else what was sampled.
    const hwm = this.pid === pid0 ? peakRssMb(this.pid) : Number.NaN;
    return {
      step: name,
      seconds: opts.idleMs !== undefined || opts.calls !== undefined ? [] : [...firstSeen.values()],
      doneS: elapsed / 1000,
      restart: opts.calls !== undefined,
      idle: opts.idleMs !== undefined,
      functionCpu: cpu[PROCESSES[this.fn]] ?? 0,
      crossplaneCpu: cpu['crossplane'] ?? 0,
      calls: last.calls - base.calls,
      breakerOpens: last.opens - base.opens,
      peakRssMiB: Number.isFinite(hwm) ? Math.max(hwm, sampled) : sampled,
      endRssMiB: rssMb(this.pid),
      cpu,
      machineCpu,
      cpus: onlineCpus(),
      api: {
        requests: Scale.grown(api0.requests, api1.requests),
        watchEvents: Scale.grown(api0.watchEvents, api1.watchEvents),
      },
    };
  }

  /** The steps on this many composites, then the composites deleted. */
  async run(): Promise<RunResult> {
    const apply = (objs: object[]) =>
      this.cp.kubectl(['apply', '--server-side', '--field-manager=bench-scale', '-f', '-'], {
        input: objs.map((o) => JSON.stringify(o)).join('\n'),
      });
    const widgets = this.kind === 'Widget';
    const out: StepResult[] = [];
    const ready = (w: Seen) => w.ready && (widgets || w.phase === 'Ready');
    out.push(
      await this.step(
        'apply → Ready',
        async () => void (await apply(widgets ? this.widgets('blue', 1) : this.databases())),
        ready,
      ),
    );
    if (widgets && steps.has('size'))
      out.push(
        await this.step(
          'every size 1 → 2 → 2 available',
          async () => void (await apply(this.widgets('blue', 2))),
          (w) => w.ready && w.available === 2,
        ),
      );
    // The peer's Composition cannot change a Widget's color: its Deployment keeps its name and the color is in
    // its selector, which Kubernetes does not let change (bench/peer/composition.yaml). Only ours is asked.
    if (widgets && this.fn === 'ours' && steps.has('color'))
      out.push(
        await this.step(
          'every color changed → live on it',
          async () => void (await apply(this.widgets('green', steps.has('size') ? 2 : 1))),
          (w) => w.ready && w.activeColor === 'green',
        ),
      );
    if (steps.has('idle'))
      out.push(
        await this.step(
          `idle ${idleMs / 1000} s`,
          async () => {},
          () => true,
          { idleMs },
        ),
      );
    if (steps.has('function'))
      out.push(
        await this.step(
          'function restarted → each called again',
          async () => {
            if (this.fn === 'ours') {
              await this.cp.killFunction('SIGKILL');
              await this.cp.startFunction();
            } else {
              await this.cp.kill(PEER_FUNCTION, 'SIGKILL');
              await this.cp.restart(PEER_FUNCTION);
            }
          },
          (w) => ready(w) && w.synced,
          { calls: this.size },
        ),
      );
    if (steps.has('crossplane'))
      out.push(
        await this.step(
          'Crossplane restarted → each called again',
          async () => {
            await this.cp.kill('crossplane', 'SIGKILL');
            await this.cp.restart('crossplane');
          },
          (w) => ready(w) && w.synced,
          { calls: this.size },
        ),
      );
    for (const ns of Scale.namespaces(this.prefix))
      await this.cp.kubectl(['delete', widgets ? 'widgets' : 'databases', '--all', '-n', ns, '--wait=true'], {
        allowFail: true,
      });
    return { fn: this.fn, kind: this.kind, size: this.size, steps: out };
  }
}

const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const who = (r: RunResult) =>
  `${r.fn === 'ours' ? 'function-platform' : 'function-patch-and-transform'}, ${r.size} ${r.kind}s`;

function report(results: RunResult[]): void {
  const rows: string[][] = [];
  for (const r of results)
    for (const s of r.steps) {
      const converge = !s.restart && !s.idle;
      rows.push([
        who(r),
        s.step,
        converge ? f(quantile(s.seconds, 0.5)) : '–',
        converge ? f(quantile(s.seconds, 0.99)) : '–',
        f(s.doneS),
        f(s.functionCpu, 2),
        String(s.calls),
        f((s.functionCpu * 1000) / Math.max(1, s.calls), 2),
        f((s.functionCpu * 1000) / r.size, 2),
        f(s.crossplaneCpu, 2),
        f(s.calls / Math.max(0.001, s.doneS), 1),
        String(s.breakerOpens),
        f(s.peakRssMiB, 0),
        f(s.endRssMiB, 0),
      ]);
    }
  say(
    table(
      [
        'run',
        'step',
        'p50 s',
        'p99 s',
        'done s',
        'fn CPU s',
        'calls',
        'ms CPU/call',
        'ms CPU/composite',
        'Crossplane CPU s',
        'calls/s',
        'breaker opens',
        'peak RSS MiB',
        'end RSS MiB',
      ],
      rows,
    ),
  );
}

/** Where the time went: the machine's CPUs busy, and each process's share of it. */
function reportCpu(results: RunResult[]): void {
  const names = ['function', PEER_FUNCTION, ...COMPONENTS];
  const rows: string[][] = [];
  for (const r of results)
    for (const s of r.steps) {
      const known = names.reduce((a, n) => a + (s.cpu[n] ?? 0), 0);
      rows.push([
        who(r),
        s.step,
        `${f((100 * s.machineCpu) / (s.cpus * Math.max(0.001, s.doneS)), 0)} %`,
        ...names.map((n) => f(s.cpu[n] ?? 0)),
        f(Math.max(0, s.machineCpu - known)),
      ]);
    }
  say(table(['run', 'step', 'machine busy', 'function-platform', 'P&T', ...COMPONENTS, 'rest (bench, kubectl)'], rows));
}

/** What the API server was asked per composite during each step, the most asked first (the rest summed). */
function reportApi(results: RunResult[], top = 8): void {
  const rows: string[][] = [];
  for (const r of results)
    for (const s of r.steps) {
      const per = (m: Record<string, number>) => {
        const all = Object.entries(m);
        const total = all.reduce((a, [, v]) => a + v, 0);
        const shown = all.slice(0, top).map(([k, v]) => `${k} ${f(v / r.size, 2)}`);
        return `${f(total / r.size, 1)}: ${shown.join(', ')}`;
      };
      rows.push([who(r), s.step, per(s.api.requests), per(s.api.watchEvents)]);
    }
  say(
    table(['run', 'step', 'API requests per composite: all, the most asked', 'watch events sent per composite'], rows),
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fp-scale-'));
  say(
    `bench:scale: Widgets ${widgetSizes.join(', ') || 'none'} (${functions.join(', ')}); Databases ${databaseSizes.join(', ') || 'none'}; steps ${[...steps].join(', ')}; Crossplane flags ${crossplaneArgs.join(' ') || 'as it starts'}; control plane in ${dir}`,
  );
  // kwok's fake nodes take 250 pods each (control-plane.ts), filled to 200 at most: room for every Widget on
  // both colors at size 2 (a color change runs both until it cuts over), and every Database's pod.
  const pods = 4 * Math.max(0, ...widgetSizes) * functions.length + Math.max(0, ...databaseSizes);
  const image = imageNodeFlags(repoRoot);
  const cp = await startControlPlane({
    dir,
    nodes: Math.max(3, Math.ceil(pods / 200)),
    peer: functions.includes('peer') && widgetSizes.length > 0,
    crossplaneArgs,
    // The function runs with the Node flags its image's ENTRYPOINT gives it, as npm run bench runs it.
    functionNodeFlags: [...image.flags, ...functionNodeFlags],
    functionEnv: image.env,
    say: (l) => say(`  ${l}`),
  });
  const results: RunResult[] = [];
  try {
    const runs: Array<{ fn: Fn; kind: Kind; size: number }> = [];
    for (let i = 0; i < Math.max(widgetSizes.length, databaseSizes.length); i++) {
      const n = widgetSizes[i];
      if (n !== undefined) for (const fn of functions) runs.push({ fn, kind: 'Widget', size: n });
      const m = databaseSizes[i];
      if (m !== undefined) runs.push({ fn: 'ours', kind: 'Database', size: m });
    }
    for (const prefix of new Set(runs.map((r) => Scale.prefixOf(r.fn, r.kind))))
      for (const ns of Scale.namespaces(prefix)) await cp.kubectl(['create', 'namespace', ns], { allowFail: true });
    for (const { fn, kind, size } of runs) {
      say(`${fn}: ${size} ${kind}s`);
      const r = await new Scale(cp, fn, kind, size).run();
      results.push(r);
      report([r]);
      reportCpu([r]);
      reportApi([r]);
    }
  } finally {
    await cp.stop();
  }
  say('');
  say(
    `bench:scale, ${new Date().toISOString()}, Crossplane flags: ${crossplaneArgs.join(' ') || "none beyond the control plane's"}`,
  );
  report(results);
  say('');
  say('Where the time went (CPU seconds during each step):');
  reportCpu(results);
  say('');
  say('What the API server was asked (per composite, during each step):');
  reportApi(results);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    join(outDir, 'scale.json'),
    `${JSON.stringify({ at: new Date().toISOString(), crossplaneArgs, results }, null, 2)}\n`,
  );
  say(`wrote ${join(outDir, 'scale.json')}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:scale failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
