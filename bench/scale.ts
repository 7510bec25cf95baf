#!/usr/bin/env node
// npm run bench:scale: Widgets by the hundred under real Crossplane (the local
// control plane, kwok's fake nodes), composed by function-platform and, in the
// same run, by crossplane-contrib/function-patch-and-transform (the bench's
// peer, bench/peer/composition.yaml), one after the other. For each size and
// each function, in 10 namespaces:
//   - N Widgets applied at once; time from the apply to each one Ready;
//   - every Widget's size 1 → 2; time until each has 2 available;
//   - every Widget's color changed (ours only: the peer's Composition cannot,
//     its Deployment's selector holds the color); time until each is live on it;
//   - the function killed and started again; time until Crossplane has called
//     it once per Widget again and all are Ready and Synced;
//   - Crossplane core killed and started again; the same;
// with the function's and Crossplane's CPU seconds, the calls Crossplane made
// (its function_run_function_request_total), the function's RSS (peak and at
// the end), then the Widgets deleted before the next run.
//
//   SCALE_SIZES=100,300,1000   the sizes (Widgets)
//   SCALE_FUNCTIONS=ours,peer  which functions run
//   SCALE_QUICK=1              CI's smoke run: 6 Widgets, both functions, every step; results in
//                              .cache/bench/scale-quick (the knobs above still win when set)
//   SCALE_OUT=DIR              where scale.json goes (default bench/results)
//   SCALE_TIMEOUT_S=900        the longest any step may take
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
import { say, table } from './format.js';
import { cpuMs, rssMb } from './proc.js';

type Fn = 'ours' | 'peer';
const quick = process.env['SCALE_QUICK'] === '1';
const sizes = (process.env['SCALE_SIZES'] ?? (quick ? '6' : '100,300,1000')).split(',').map(Number);
const functions = (process.env['SCALE_FUNCTIONS'] ?? 'ours,peer').split(',') as Fn[];
const outDir = join(repoRoot, process.env['SCALE_OUT'] ?? (quick ? '.cache/bench/scale-quick' : 'bench/results'));
const timeoutMs = Number(process.env['SCALE_TIMEOUT_S'] ?? '900') * 1000;
const NAMESPACES = 10;

for (const n of sizes) if (!Number.isInteger(n) || n < 1) throw new Error(`SCALE_SIZES: ${n} is not a size`);
for (const f of functions)
  if (f !== 'ours' && f !== 'peer') throw new Error(`SCALE_FUNCTIONS: ${f} is not ours or peer`);

const FUNCTION_NAMES: Record<Fn, string> = { ours: 'function-platform', peer: PEER_FUNCTION };
const COMPOSITIONS: Record<Fn, string> = { ours: 'widgets.example.com', peer: PEER_COMPOSITION };
/** The component of the control plane that is the function's process. */
const PROCESSES: Record<Fn, string> = { ours: 'function', peer: PEER_FUNCTION };

/** CPU seconds a process has used (bench/proc.ts reads /proc). */
const cpuSeconds = (pid: number): number => cpuMs(pid) / 1000;

interface StepResult {
  step: string;
  /** Seconds from the step's start to each Widget's moment (Ready; Ready on the new color; called again). */
  seconds: number[];
  /** Seconds from the step's start until it was done (every Widget there, and the calls made). */
  doneS: number;
  /** A restart: every Widget was Ready before it, so only doneS says anything. */
  restart: boolean;
  functionCpu: number;
  crossplaneCpu: number;
  calls: number;
  peakRssMiB: number;
  endRssMiB: number;
}

interface RunResult {
  fn: Fn;
  size: number;
  steps: StepResult[];
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

class Scale {
  constructor(
    private readonly cp: ControlPlane,
    private readonly fn: Fn,
    private readonly size: number,
  ) {}

  private get pid(): number {
    return this.cp.component(PROCESSES[this.fn])!.pid;
  }

  private get crossplanePid(): number {
    return this.cp.component('crossplane')!.pid;
  }

  private namespaceOf(i: number): string {
    return `scale-${this.fn}-${i % NAMESPACES}`;
  }

  widgets(color: string, size: number): object[] {
    return Array.from({ length: this.size }, (_, i) => ({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: `w${i}`, namespace: this.namespaceOf(i) },
      spec: { color, size, crossplane: { compositionRef: { name: COMPOSITIONS[this.fn] } } },
    }));
  }

  /** Crossplane's count of calls to this function (0 after Crossplane restarts: the caller takes differences). */
  async calls(): Promise<number> {
    const r = await fetch(`http://127.0.0.1:${this.cp.crossplaneMetricsPort}/metrics`);
    const s = samples(await r.text());
    return sum(s, 'function_run_function_request_total', { function_name: FUNCTION_NAMES[this.fn] });
  }

  /** The Widgets as the API server has them. */
  list(): Array<{ name: string; ready: boolean; activeColor?: string; available?: number; synced: boolean }> {
    const out = execFileSync('kubectl', ['--kubeconfig', this.cp.kubeconfig, 'get', 'widgets', '-A', '-o', 'json'], {
      maxBuffer: 512 << 20,
      encoding: 'utf8',
    });
    const items = (JSON.parse(out) as { items: Json[] }).items;
    return items
      .filter((w) => String(w['metadata']['namespace']).startsWith(`scale-${this.fn}-`))
      .map((w) => {
        const conditions: Json[] = w['status']?.['conditions'] ?? [];
        const is = (type: string) => conditions.some((c) => c['type'] === type && c['status'] === 'True');
        return {
          name: `${w['metadata']['namespace']}/${w['metadata']['name']}`,
          ready: is('Ready'),
          synced: is('Synced'),
          activeColor: w['status']?.['activeColor'],
          available: w['status']?.['availableReplicas'],
        };
      });
  }

  /** CPU seconds a process used since `from` was read; a process restarted since counts from its start. */
  private static cpuSince(from: { pid: number; cpu: number }, pid: number): number {
    return pid === from.pid ? cpuSeconds(pid) - from.cpu : cpuSeconds(pid);
  }

  /**
   * Runs `start`, then watches until `done` holds for every Widget (and, with `calls`, until Crossplane has
   * called the function that many times more), and reports the step.
   */
  async step(
    name: string,
    start: () => Promise<void>,
    done: (w: ReturnType<Scale['list']>[number]) => boolean,
    opts: { calls?: number } = {},
  ): Promise<StepResult> {
    const fn0 = { pid: this.pid, cpu: cpuSeconds(this.pid) };
    const xp0 = { pid: this.crossplanePid, cpu: cpuSeconds(this.crossplanePid) };
    let callsBase = await this.calls();
    const t0 = performance.now();
    await start();
    const firstSeen = new Map<string, number>();
    let peak = 0;
    let lastCalls = callsBase;
    let elapsed = 0;
    for (;;) {
      elapsed = performance.now() - t0;
      if (elapsed > timeoutMs) throw new Error(`${this.fn} ${this.size} ${name}: not done after ${timeoutMs / 1000} s`);
      peak = Math.max(peak, rssMb(this.pid));
      const now = await this.calls();
      if (now < lastCalls) callsBase = 0; // Crossplane restarted: its counters began again.
      lastCalls = now;
      for (const w of this.list()) if (done(w) && !firstSeen.has(w.name)) firstSeen.set(w.name, elapsed / 1000);
      if (firstSeen.size >= this.size && (opts.calls === undefined || now - callsBase >= opts.calls)) break;
      await new Promise((r) => setTimeout(r, quick ? 250 : 1000));
    }
    return {
      step: name,
      seconds: [...firstSeen.values()],
      doneS: elapsed / 1000,
      restart: opts.calls !== undefined,
      functionCpu: Scale.cpuSince(fn0, this.pid),
      crossplaneCpu: Scale.cpuSince(xp0, this.crossplanePid),
      calls: lastCalls - callsBase,
      peakRssMiB: peak,
      endRssMiB: rssMb(this.pid),
    };
  }

  /** The four steps on this many Widgets, then the Widgets deleted. */
  async run(): Promise<RunResult> {
    const apply = (objs: object[]) =>
      this.cp.kubectl(['apply', '--server-side', '--field-manager=bench-scale', '-f', '-'], {
        input: objs.map((o) => JSON.stringify(o)).join('\n'),
      });
    const steps: StepResult[] = [];
    steps.push(
      await this.step(
        'apply → Ready',
        async () => void (await apply(this.widgets('blue', 1))),
        (w) => w.ready,
      ),
    );
    steps.push(
      await this.step(
        'every size 1 → 2 → 2 available',
        async () => void (await apply(this.widgets('blue', 2))),
        (w) => w.ready && w.available === 2,
      ),
    );
    // The peer's Composition cannot change a Widget's color: its Deployment keeps its name and the color is in
    // its selector, which Kubernetes does not let change (bench/peer/composition.yaml). Only ours is asked.
    if (this.fn === 'ours')
      steps.push(
        await this.step(
          'every color changed → live on it',
          async () => void (await apply(this.widgets('green', 2))),
          (w) => w.ready && w.activeColor === 'green',
        ),
      );
    steps.push(
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
        (w) => w.ready && w.synced,
        { calls: this.size },
      ),
    );
    steps.push(
      await this.step(
        'Crossplane restarted → each called again',
        async () => {
          await this.cp.kill('crossplane', 'SIGKILL');
          await this.cp.restart('crossplane');
        },
        (w) => w.ready && w.synced,
        { calls: this.size },
      ),
    );
    for (let i = 0; i < NAMESPACES; i++)
      await this.cp.kubectl(['delete', 'widgets', '--all', '-n', `scale-${this.fn}-${i}`, '--wait=true'], {
        allowFail: true,
      });
    return { fn: this.fn, size: this.size, steps };
  }
}

function report(results: RunResult[]): void {
  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const rows: string[][] = [];
  for (const r of results)
    for (const s of r.steps)
      rows.push([
        r.fn === 'ours' ? 'function-platform' : 'function-patch-and-transform',
        String(r.size),
        s.step,
        s.restart ? '–' : f(quantile(s.seconds, 0.5)),
        s.restart ? '–' : f(quantile(s.seconds, 0.99)),
        f(s.doneS),
        f(s.functionCpu, 2),
        String(s.calls),
        f((s.functionCpu * 1000) / Math.max(1, s.calls), 2),
        f((s.functionCpu * 1000) / r.size, 2),
        f(s.crossplaneCpu, 2),
        f(s.calls / Math.max(0.001, s.doneS), 1),
        f(s.peakRssMiB, 0),
        f(s.endRssMiB, 0),
      ]);
  say(
    table(
      [
        'function',
        'widgets',
        'step',
        'p50 s',
        'p99 s',
        'done s',
        'fn CPU s',
        'calls',
        'ms CPU/call',
        'ms CPU/widget',
        'Crossplane CPU s',
        'calls/s',
        'peak RSS MiB',
        'end RSS MiB',
      ],
      rows,
    ),
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fp-scale-'));
  say(`bench:scale: sizes ${sizes.join(', ')}; functions ${functions.join(', ')}; control plane in ${dir}`);
  const cp = await startControlPlane({ dir, nodes: 3, peer: functions.includes('peer'), say: (l) => say(`  ${l}`) });
  const results: RunResult[] = [];
  try {
    for (const fn of functions)
      for (let i = 0; i < NAMESPACES; i++)
        await cp.kubectl(['create', 'namespace', `scale-${fn}-${i}`], { allowFail: true });
    for (const size of sizes)
      for (const fn of functions) {
        say(`${fn}: ${size} Widgets`);
        const r = await new Scale(cp, fn, size).run();
        results.push(r);
        report([r]);
      }
  } finally {
    await cp.stop();
  }
  say('');
  say(
    `bench:scale, ${new Date().toISOString()}, Crossplane's poll interval and reconcile rate as the control plane starts it`,
  );
  report(results);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'scale.json'), `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
  say(`wrote ${join(outDir, 'scale.json')}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:scale failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
