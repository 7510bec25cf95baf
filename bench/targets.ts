// The targets, judged PASS/MISS (n/a when their figure is missing) for
// function-platform and for the candidate, with the figures they were judged
// on. Every target is judged on figures of one run, measured in turns with the
// floors (the SDK no-ops on Node, Go and Python) it is a ratio to.
import { f, median, pad, say } from './format.js';
import { type ImplCaseResult, levelOf, resultOf } from './orchestrate.js';
import type { ImplId } from './servers.js';
import type { SizePoint } from './sizes.js';

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

/** The case with the highest (atMost) or lowest value of a per-case figure; NaN when none has it. */
function worstOf(xs: Array<{ value: number; at: string }>, atMost: boolean, none: string) {
  let worst = { value: NaN, at: none };
  for (const x of xs) {
    if (!Number.isFinite(x.value)) continue;
    if (!Number.isFinite(worst.value) || (atMost ? x.value > worst.value : x.value < worst.value)) worst = x;
  }
  return worst;
}

/** Cases whose request carries observed composed resources: the seed has none. */
const hasObserved = (caseId: string) => caseId !== 'widget-seed';
/** Cases that call AWS (step credentials): they load the AWS SDK and keep its clients. */
const withAwsCredentials = (caseId: string) => caseId === 'database-aws-live';

/** Function-platform's limit over the Go floor's CPU per call at 16 in flight (issue 31: 1.5× from 3 KB up, 2.5× on the seed). */
export const GO_CPU_LIMIT = { observed: 1.5, seed: 2.5 };

export function judgeTargets(
  subjects: readonly ImplId[],
  results: ImplCaseResult[],
  ratios: PeerRatio[],
  coldStarts: Record<string, number[]>,
  sizes: SizePoint[],
): Target[] {
  const cases = [...new Set(results.map((r) => r.case))];
  const at = (caseId: string, impl: ImplId, level: number) => levelOf(resultOf(results, caseId, impl), level);
  const targets: Target[] = [];
  for (const subject of subjects) {
    const ran = cases.filter((c) => resultOf(results, c, subject));
    const cpu16 = (c: string, impl: ImplId) => at(c, impl, 16)?.cpuMsPerCall ?? NaN;
    const ratio16 = (c: string, impl: ImplId) => ({
      value: cpu16(c, subject) / cpu16(c, impl),
      at: `${c}: ${f(cpu16(c, subject), 3)} vs ${f(cpu16(c, impl), 3)} ms`,
    });
    {
      const w = worstOf(
        ran.map((c) => ratio16(c, 'floor')),
        true,
        'no 16-in-flight figures',
      );
      targets.push(
        judge({
          id: 'cpu-at-16-vs-node-floor',
          impl: subject,
          text: 'server CPU/call at 16 in flight ≤ 1.2× the Node SDK floor (every case)',
          value: w.value,
          limit: 1.2,
          atMost: true,
          unit: '×',
          detail: `worst ${w.at}`,
        }),
      );
    }
    for (const [observed, limit] of [
      [true, GO_CPU_LIMIT.observed],
      [false, GO_CPU_LIMIT.seed],
    ] as const) {
      const w = worstOf(
        ran.filter((c) => hasObserved(c) === observed).map((c) => ratio16(c, 'go-floor')),
        true,
        'the Go floor did not run',
      );
      targets.push(
        judge({
          id: observed ? 'cpu-at-16-vs-go-floor' : 'seed-cpu-at-16-vs-go-floor',
          impl: subject,
          text: observed
            ? `server CPU/call at 16 in flight ≤ ${limit}× the Go floor (cases with observed state)`
            : `server CPU/call at 16 in flight ≤ ${limit}× the Go floor (seed Widget)`,
          value: w.value,
          limit,
          atMost: true,
          unit: '×',
          detail: `worst ${w.at}`,
        }),
      );
    }
    {
      const w = worstOf(
        ran.map((c) => ({ value: at(c, subject, 1)?.latencyMs.p99 ?? NaN, at: c })),
        true,
        'no 1-in-flight figures',
      );
      targets.push(
        judge({
          id: 'p99-at-1',
          impl: subject,
          text: 'p99 at 1 in flight ≤ 3 ms (every case)',
          value: w.value,
          limit: 3,
          atMost: true,
          unit: ' ms',
          detail: `worst ${w.at}`,
        }),
      );
    }
    {
      // With a closed loop, p99 at 16 follows throughput (Little's law): judged against the Go floor's, as CPU is.
      const w = worstOf(
        ran.map((c) => {
          const ours = at(c, subject, 16)?.latencyMs.p99 ?? NaN;
          const go = at(c, 'go-floor', 16)?.latencyMs.p99 ?? NaN;
          return { value: ours / go, at: `${c}: ${f(ours)} vs ${f(go)} ms` };
        }),
        true,
        'the Go floor did not run',
      );
      targets.push(
        judge({
          id: 'p99-at-16-vs-go-floor',
          impl: subject,
          text: `p99 at 16 in flight ≤ ${GO_CPU_LIMIT.observed}× the Go floor's (every case)`,
          value: w.value,
          limit: GO_CPU_LIMIT.observed,
          atMost: true,
          unit: '×',
          detail: `worst ${w.at}`,
        }),
      );
    }
    for (const aws of [false, true]) {
      const limit = aws ? 130 : 100;
      const w = worstOf(
        ran
          .filter((c) => withAwsCredentials(c) === aws)
          .map((c) => ({ value: at(c, subject, 64)?.peakRssMb ?? NaN, at: c })),
        true,
        aws ? 'no case with AWS credentials (moto not installed)' : 'no 64-in-flight figures',
      );
      const floors = (['floor', 'go-floor', 'py-floor'] as const)
        .map(
          (id) =>
            `${id} ${f(Math.max(...cases.map((c) => at(c, id, 64)?.peakRssMb ?? NaN).filter(Number.isFinite)), 0)}`,
        )
        .join(', ');
      targets.push(
        judge({
          id: aws ? 'peak-rss-at-64-aws' : 'peak-rss-at-64',
          impl: subject,
          text: `peak RSS at 64 in flight ≤ ${limit} MB (every case ${aws ? 'with' : 'without'} AWS credentials)`,
          value: w.value,
          limit,
          atMost: true,
          unit: ' MB',
          detail: `highest ${w.at}; floors' highest: ${floors} MB`,
        }),
      );
    }
    {
      const xs = coldStarts[subject] ?? [];
      const others = (['floor', 'go-floor', 'py-floor'] as const)
        .map((id) => `${id} ${f(median(coldStarts[id] ?? []), 0)}`)
        .join(', ');
      targets.push(
        judge({
          id: 'cold-start',
          impl: subject,
          text: 'cold start ≤ 170 ms (median of every start, as the image starts it)',
          value: median(xs),
          limit: 170,
          atMost: true,
          unit: ' ms',
          detail: `${xs.length} starts, max ${f(Math.max(...xs), 0)} ms; medians: ${others} ms`,
        }),
      );
    }
    targets.push(...sizeTargets(subject, sizes));
    {
      const w = worstOf(
        ratios
          .filter((r) => r.impl === subject && r.case.startsWith('widget'))
          .map((r) => ({ value: r.throughputVsPeer, at: `${r.case} at ${r.concurrency} in flight` })),
        false,
        'no Widget case ran against the peer',
      );
      targets.push(
        judge({
          id: 'widget-throughput-vs-peer',
          impl: subject,
          text: 'Widget throughput ≥ 3× function-patch-and-transform (every Widget case and level)',
          value: w.value,
          limit: 3,
          atMost: false,
          unit: '×',
          detail: `lowest ${w.at}`,
        }),
      );
    }
  }
  return targets;
}

/**
 * CPU per call against request size: linear (the marginal cost per KB from the
 * middle to the largest size at most 1.5× that from the smallest to the
 * middle: no superlinear growth), at most the Go floor's from 10 KB up, and
 * the largest (1 MB) request within 10 ms.
 */
function sizeTargets(subject: ImplId, sizes: SizePoint[]): Target[] {
  const mine = sizes.filter((p) => p.impl === subject).sort((a, b) => a.requestBytes - b.requestBytes);
  const go = (kb: number) => sizes.find((p) => p.impl === 'go-floor' && p.kb === kb);
  const slope = (a: SizePoint, b: SizePoint) =>
    (b.cpuMsPerCall - a.cpuMsPerCall) / ((b.requestBytes - a.requestBytes) / 1024);
  const [lo, mid, hi] = [mine[0], mine[Math.floor(mine.length / 2)], mine[mine.length - 1]];
  const linear = lo && mid && hi && lo !== mid && mid !== hi ? slope(mid, hi) / slope(lo, mid) : NaN;
  const vsGo = worstOf(
    mine
      .filter((p) => p.kb >= 10)
      .map((p) => ({
        value: p.cpuMsPerCall / (go(p.kb)?.cpuMsPerCall ?? NaN),
        at: `${p.kb} KB: ${f(p.cpuMsPerCall, 3)} vs ${f(go(p.kb)?.cpuMsPerCall ?? NaN, 3)} ms`,
      })),
    true,
    'the Go floor did not run the sweep',
  );
  const largest = mine.find((p) => p.kb >= 1000);
  return [
    judge({
      id: 'cpu-linear-in-size',
      impl: subject,
      text: 'CPU/call linear in request size (marginal ms/KB, largest step ÷ first step ≤ 1.5)',
      value: linear,
      limit: 1.5,
      atMost: true,
      unit: '×',
      detail:
        lo && mid && hi ? `${mine.map((p) => `${p.kb} KB ${f(p.cpuMsPerCall, 3)} ms`).join(', ')}` : 'no size sweep',
    }),
    judge({
      id: 'cpu-vs-go-floor-by-size',
      impl: subject,
      text: "CPU/call ≤ the Go floor's from 10 KB up (size sweep, 1 in flight)",
      value: vsGo.value,
      limit: 1,
      atMost: true,
      unit: '×',
      detail: `worst ${vsGo.at}`,
    }),
    judge({
      id: 'cpu-at-1mb',
      impl: subject,
      text: 'a 1 MB request ≤ 10 ms of server CPU',
      value: largest?.cpuMsPerCall ?? NaN,
      limit: 10,
      atMost: true,
      unit: ' ms',
      detail: largest ? `${largest.requestBytes} B` : 'no 1 MB point in the sweep (BENCH_SIZES)',
    }),
  ];
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
