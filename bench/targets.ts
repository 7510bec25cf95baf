// The targets, judged PASS/MISS (n/a when their figure is missing) for
// function-platform and for the candidate, with the figures they were judged on.
import { f, median, pad, say } from './format.js';
import { type ImplCaseResult, levelOf, resultOf } from './orchestrate.js';
import type { ImplId } from './servers.js';

export interface Target {
  id: string;
  impl: ImplId;
  text: string;
  value: number;
  limit: number;
  atMost: boolean;
  unit: string;
  detail: string;
  status: 'PASS' | 'MISS' | 'n/a';
}

/** What the throughput target reads of a ratio (report.ts's Ratio). */
interface PeerRatio {
  impl: ImplId;
  case: string;
  concurrency: number;
  throughputVsPeer: number;
}

const judge = (t: Omit<Target, 'status'>): Target => ({
  ...t,
  status: !Number.isFinite(t.value) ? 'n/a' : (t.atMost ? t.value <= t.limit : t.value >= t.limit) ? 'PASS' : 'MISS',
});

/** Server CPU per call over all levels, weighted by calls. */
const cpuPerCall = (r: ImplCaseResult | undefined) =>
  r ? r.levels.reduce((a, l) => a + l.cpuMsPerCall * l.calls, 0) / r.levels.reduce((a, l) => a + l.calls, 0) : NaN;

export function judgeTargets(
  subjects: readonly ImplId[],
  results: ImplCaseResult[],
  ratios: PeerRatio[],
  coldStarts: Record<string, number[]>,
): Target[] {
  const get = (caseId: string, impl: ImplId) => resultOf(results, caseId, impl);
  const targets: Target[] = [];
  for (const subject of subjects) {
    {
      let worst = { value: NaN, at: 'no Widget case ran against the peer' };
      for (const r of ratios) {
        if (r.impl !== subject || !r.case.startsWith('widget') || !Number.isFinite(r.throughputVsPeer)) continue;
        if (!(r.throughputVsPeer >= worst.value))
          worst = { value: r.throughputVsPeer, at: `lowest: ${r.case} at ${r.concurrency} concurrent` };
      }
      targets.push(
        judge({
          id: 'widget-throughput-vs-peer',
          impl: subject,
          text: 'Widget throughput ≥ 1.0× function-patch-and-transform (every Widget case and level)',
          value: worst.value,
          limit: 1.0,
          atMost: false,
          unit: '×',
          detail: worst.at,
        }),
      );
    }
    {
      const ours = cpuPerCall(get('widget-seed', subject));
      const floor = cpuPerCall(get('widget-seed', 'floor'));
      const p50 =
        (levelOf(get('widget-seed', subject), 1)?.latencyMs.p50 ?? NaN) /
        (levelOf(get('widget-seed', 'floor'), 1)?.latencyMs.p50 ?? NaN);
      targets.push(
        judge({
          id: 'seed-overhead-vs-floor',
          impl: subject,
          text: 'seed Widget per-call overhead (server CPU per call, all levels) ≤ 1.3× the SDK floor',
          value: ours / floor,
          limit: 1.3,
          atMost: true,
          unit: '×',
          detail: `${f(ours, 3)} vs ${f(floor, 3)} ms/call; p50 at 1 concurrent ${f(p50)}× the floor's`,
        }),
      );
    }
    {
      const l = levelOf(get('database-aws', subject), 16);
      const fl = levelOf(get('database-aws', 'floor'), 16);
      targets.push(
        judge({
          id: 'aws-p99-at-16',
          impl: subject,
          text: 'Database on AWS p99 at 16 concurrent ≤ 5 ms',
          value: l?.latencyMs.p99 ?? NaN,
          limit: 5,
          atMost: true,
          unit: ' ms',
          detail: l
            ? `p50 ${f(l.latencyMs.p50)} ms${fl ? `; the floor's p99 ${f(fl.latencyMs.p99)} ms` : ''}`
            : 'not run',
        }),
      );
    }
    {
      const xs = coldStarts[subject] ?? [];
      targets.push(
        judge({
          id: 'cold-start',
          impl: subject,
          text: 'cold start ≤ 300 ms (median of every start)',
          value: median(xs),
          limit: 300,
          atMost: true,
          unit: ' ms',
          detail: `${xs.length} starts, max ${f(Math.max(...xs), 0)} ms; the floor's median ${f(median(coldStarts['floor'] ?? []), 0)} ms`,
        }),
      );
    }
    {
      const peaks = results
        .filter((r) => r.impl === subject)
        .flatMap((r) => r.levels.filter((l) => l.concurrency === 64).map((l) => ({ mb: l.peakRssMb, at: r.case })));
      const worst = peaks.reduce((a, b) => (!(a.mb >= b.mb) ? b : a), { mb: NaN, at: 'no 64-concurrency run' });
      const floorPeak = Math.max(
        ...results
          .filter((r) => r.impl === 'floor')
          .flatMap((r) => r.levels.filter((l) => l.concurrency === 64).map((l) => l.peakRssMb)),
      );
      targets.push(
        judge({
          id: 'peak-rss-at-64',
          impl: subject,
          text: 'peak RSS ≤ 120 MB under 64 concurrent calls (every case)',
          value: worst.mb,
          limit: 120,
          atMost: true,
          unit: ' MB',
          detail: `highest: ${worst.at}; the floor's ${f(floorPeak, 1)} MB`,
        }),
      );
    }
  }
  return targets;
}

/** One line per target; the implementation's label only when more than one was judged. */
export function printTargets(
  targets: Target[],
  labels: Record<ImplId, { label: string }>,
  subjects: readonly ImplId[],
): void {
  say();
  say('Targets');
  for (const t of targets) {
    say(
      `  ${pad(t.status, 4)}  ${subjects.length > 1 ? `${pad(labels[t.impl].label, 34)} ` : ''}${pad(t.text, 86)} ${f(t.value, t.unit === '×' ? 2 : 1)}${t.unit} (limit ${t.limit}${t.unit}; ${t.detail})`,
    );
  }
}
