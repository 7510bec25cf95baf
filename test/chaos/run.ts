// A chaos run: the world brought up, the monitors started, the rounds run one
// after another, and the table of what happened: rounds, faults by kind,
// checks made per invariant, violations, and the time each moment took to
// converge after its fault (median and maximum).
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { EndpointsMonitor, HoldersMonitor, INVARIANTS, Ledger, RowsMonitor, TrafficMonitor } from './invariants.js';
import { FAULTS, MOMENTS, type RoundPlan } from './plan.js';
import { CONVERGE_BOUND_MS, type Harness, type RoundResult, runRound } from './rounds.js';
import { DATABASE, NS, type Say, WIDGET, World } from './world.js';

export interface Report {
  seed?: number;
  startedAt: string;
  durationMs: number;
  machine: string;
  rounds: RoundResult[];
  faults: Record<string, number>;
  checks: Record<string, number>;
  violations: Array<{ round: number; invariant: string; detail: string }>;
  converge: Record<string, { rounds: number; medianS: number; maxS: number }>;
  failures: Record<string, number>;
  requests: number;
  writes: number;
}

/**
 * How many filler rows the Database holds besides the writer's: enough that a dump and a restore take a few seconds.
 * Its two indexes are rebuilt by every restore: they keep pg_restore at work for seconds, where the rows alone
 * were restored between two looks of the harness on two shared cores (the restore moment was missed).
 */
const FILLER_ROWS = 400_000;

/** Keeps the writer's configuration the connection Secret's, as an application re-reading it would. */
async function followSecret(h: Harness, stop: () => boolean): Promise<void> {
  let last = '';
  while (!stop()) {
    try {
      const c = await h.w.connection(DATABASE, 'postgres');
      const now = c ? JSON.stringify(c) : '';
      if (c && now !== last) {
        h.w.writeConfig(DATABASE, c);
        if (last) h.w.say(`  the connection Secret changed: host ${c.host}`);
        last = now;
      }
    } catch {
      // The API server away, or the Secret gone with its Database: keep what the application has.
    }
    await sleep(1000);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

export async function runChaos(opts: {
  dir: string;
  plans: RoundPlan[];
  say: Say;
  seed?: number;
  out?: string;
  keep?: boolean;
}): Promise<Report> {
  const { say } = opts;
  const started = Date.now();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  say(`bringing up a control plane with a real node (claims mode) in ${opts.dir}`);
  const w = await World.start(opts.dir, say);
  // Interrupted (Ctrl-C, a CI timeout): the control plane goes down with the run, the node's namespaces first
  // of all, while the process that holds them still runs.
  const interrupted = (signal: NodeJS.Signals) => {
    say(`${signal}: stopping the control plane`);
    void w.cp.stop().finally(() => process.exit(130));
  };
  if (!opts.keep) for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, interrupted);
  const ledger = new Ledger(say);
  const s3 = w.s3();
  let stopping = false;
  const h: Harness = {
    w,
    ledger,
    s3,
    endpoints: new EndpointsMonitor(w, ledger),
    traffic: new TrafficMonitor(w, ledger),
    holders: new HoldersMonitor(w, ledger, s3),
    rows: new RowsMonitor(w, ledger),
    color: 'blue',
    storageGB: 1,
    restores: 0,
    upgrades: 0,
    config: '',
  };
  const results: RoundResult[] = [];
  let follower: Promise<void> | undefined;
  try {
    // The workloads: a Widget serving requests, a Database with rows an application writes.
    await w.apply(w.widgetYaml(h.color));
    await w.apply(w.databaseYaml(DATABASE));
    await w.until(
      `Widget ${WIDGET} Ready`,
      async () => ((await w.claim('Widget', WIDGET))?.['status']?.['ready'] === true ? true : undefined),
      300_000,
      1000,
    );
    await w.until(
      `Database ${DATABASE} Ready`,
      async () => ((await w.claim('Database', DATABASE))?.['status']?.['phase'] === 'Ready' ? true : undefined),
      300_000,
      1000,
    );
    const config = await w.until('the connection Secret', () => w.connection(DATABASE, 'postgres'), 60_000);
    h.config = w.writeConfig(DATABASE, config);
    await w.retry('the rows table', () =>
      w.sql(
        h.config,
        `CREATE TABLE IF NOT EXISTS chaos_rows (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT now()); CREATE TABLE IF NOT EXISTS chaos_filler AS SELECT g AS id, md5(g::text) || md5((g * 7)::text) AS v FROM generate_series(1, ${FILLER_ROWS}) g; CREATE INDEX IF NOT EXISTS chaos_filler_id ON chaos_filler (id); CREATE INDEX IF NOT EXISTS chaos_filler_v ON chaos_filler (v)`,
      ),
    );
    follower = followSecret(h, () => stopping);
    h.rows.start(h.config);
    h.endpoints.start();
    await h.traffic.start();
    h.traffic.expected = h.color;
    h.holders.start();
    await sleep(3000);
    say(
      `the world is up in ${((Date.now() - started) / 1000).toFixed(0)} s: Widget ${WIDGET} and Database ${DATABASE} in namespace ${NS}; ${opts.plans.length} rounds`,
    );

    for (const [i, plan] of opts.plans.entries()) {
      try {
        results.push(await runRound(h, plan, i + 1));
      } catch (e) {
        // The harness could not go on with this round (not the product's answer): said, counted, and the next one runs.
        ledger.check('converge', false, () => `round ${i + 1} could not be run to its end: ${(e as Error).message}`);
        results.push({
          index: i + 1,
          seed: plan.seed,
          moment: plan.moment,
          at: plan.at,
          fault: plan.fault,
          reached: false,
          acted: false,
          convergeMs: CONVERGE_BOUND_MS,
          totalMs: CONVERGE_BOUND_MS,
          faultMs: 0,
          outcome: `harness: ${(e as Error).message}`,
          violations: 1,
        });
      }
    }
  } finally {
    stopping = true;
    await Promise.allSettled([h.rows.stop(), h.endpoints.stop(), h.traffic.stop(), h.holders.stop(), follower]);
    s3.destroy();
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.off(s, interrupted);
    if (!opts.keep) await w.cp.stop();
    else say(`left running: KUBECONFIG=${w.cp.kubeconfig}`);
  }

  const byMoment: Report['converge'] = {};
  for (const m of Object.keys(MOMENTS)) {
    const xs = results.filter((r) => r.moment === m).map((r) => r.convergeMs / 1000);
    if (xs.length)
      byMoment[m] = {
        rounds: xs.length,
        medianS: Number(median(xs).toFixed(1)),
        maxS: Number(Math.max(...xs).toFixed(1)),
      };
  }
  const faults: Record<string, number> = {};
  for (const f of FAULTS) faults[f] = results.filter((r) => r.fault === f).length;
  const failures: Record<string, number> = {};
  for (const f of ledger.failures) {
    const key = `${f.what.split(':')[0]} during ${f.during ?? 'no fault'}`;
    failures[key] = (failures[key] ?? 0) + 1;
  }
  const report: Report = {
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    machine: `${cpus().length} CPUs, load average at start ${load}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    rounds: results,
    faults,
    checks: Object.fromEntries(INVARIANTS.map((i) => [i, ledger.checks[i]])),
    violations: ledger.violations.map(({ round, invariant, detail }) => ({ round, invariant, detail })),
    converge: byMoment,
    failures,
    requests: h.traffic.requests,
    writes: h.rows.writes,
  };
  if (opts.out) writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
  say('');
  for (const line of table(report)) say(line);
  return report;
}

/** The report as the note's table. */
export function table(r: Report): string[] {
  const out: string[] = [];
  out.push(
    `chaos${r.seed !== undefined ? ` seed 0x${r.seed.toString(16)}` : ''}: ${r.rounds.length} rounds in ${(r.durationMs / 60_000).toFixed(1)} min (${r.machine})`,
  );
  out.push(
    `faults: ${Object.entries(r.faults)
      .map(([f, n]) => `${f} ${n}`)
      .join(', ')}`,
  );
  out.push(
    `checks: ${Object.entries(r.checks)
      .map(([i, n]) => `${i} ${n}`)
      .join(', ')} (${r.requests} requests, ${r.writes} writes)`,
  );
  out.push(`violations: ${r.violations.length}`);
  for (const v of r.violations) out.push(`  round ${v.round} [${v.invariant}] ${v.detail}`);
  out.push('time to converge after the fault, by moment (median / max):');
  for (const [m, c] of Object.entries(r.converge))
    out.push(
      `  ${m.padEnd(22)} ${String(c.rounds).padStart(3)} rounds  ${c.medianS.toFixed(1).padStart(6)} s / ${c.maxS.toFixed(1).padStart(6)} s`,
    );
  if (Object.keys(r.failures).length) {
    out.push('failed requests and writes, by the fault in progress:');
    for (const [k, n] of Object.entries(r.failures)) out.push(`  ${k}: ${n}`);
  }
  return out;
}
