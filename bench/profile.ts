#!/usr/bin/env node
// Summarises V8 CPU profiles (`node --cpu-prof`): self and inclusive time per
// function, and self time per package, as a share of the time the process was
// not idle.
//
//   node dist/bench/profile.js FILE.cpuprofile|DIR [--top 25]
//   (npm run bench with BENCH_PROFILE=1 writes them and prints this summary)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Row {
  name: string;
  where: string;
  selfMs: number;
  selfPct: number;
  totalMs: number;
  totalPct: number;
}

export interface ProfileSummary {
  /** Time sampled, ms, and how much of it was busy (not idle). */
  sampledMs: number;
  busyMs: number;
  /** V8's garbage collector, ms and share of busy time. */
  gcMs: number;
  gcPct: number;
  functions: Row[];
  packages: Array<{ where: string; selfMs: number; selfPct: number }>;
}

const SPECIAL = new Set(['(idle)', '(root)']);

/** Where code lives, short: src/function.js:12, ajv, @grpc/grpc-js, node:internal/..., (gc). */
export function place(frame: CallFrame): { pkg: string; at: string } {
  const url = frame.url;
  if (!url) return { pkg: frame.functionName.startsWith('(') ? frame.functionName : '(native)', at: '' };
  if (url.startsWith('node:')) return { pkg: 'node internals', at: url };
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
    return { pkg, at: `${rest.join('/')}:${frame.lineNumber + 1}` };
  }
  const dist = path.lastIndexOf('/dist/');
  const rel = dist >= 0 ? path.slice(dist + '/dist/'.length) : path;
  return {
    pkg: rel.startsWith('src/') ? `function-platform ${rel.split('/').slice(0, -1).join('/') || 'src'}` : rel,
    at: `${rel}:${frame.lineNumber + 1}`,
  };
}

/** Self time per node, ms, from the sample timeline (falls back to hit counts). */
function selfTimes(p: CpuProfile): Map<number, number> {
  const out = new Map<number, number>();
  if (p.samples && p.timeDeltas && p.samples.length === p.timeDeltas.length) {
    // timeDeltas[i] is the time from sample i-1 to sample i; sample i lasts until sample i+1 (as DevTools counts it).
    for (let i = 0; i < p.samples.length; i++) {
      const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
      const id = p.samples[i]!;
      out.set(id, (out.get(id) ?? 0) + dt);
    }
    return out;
  }
  const hits = p.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0) || 1;
  const per = (p.endTime - p.startTime) / 1000 / hits;
  for (const n of p.nodes) out.set(n.id, (n.hitCount ?? 0) * per);
  return out;
}

export function summarize(profiles: CpuProfile[], top = 25): ProfileSummary {
  const self = new Map<string, { name: string; where: string; ms: number }>();
  const total = new Map<string, number>();
  const pkgs = new Map<string, number>();
  let sampledMs = 0;
  let idleMs = 0;
  let gcMs = 0;
  for (const p of profiles) {
    const times = selfTimes(p);
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const key = (n: ProfileNode) => {
      const { at } = place(n.callFrame);
      return `${n.callFrame.functionName || '(anonymous)'}@${at}`;
    };
    // Inclusive time per node, computed bottom-up.
    const incl = new Map<number, number>();
    const visit = (id: number): number => {
      const n = byId.get(id)!;
      let t = times.get(id) ?? 0;
      for (const c of n.children ?? []) t += visit(c);
      incl.set(id, t);
      return t;
    };
    const roots = p.nodes.filter((n) => !parent.has(n.id));
    for (const r of roots) visit(r.id);
    for (const n of p.nodes) {
      const ms = times.get(n.id) ?? 0;
      sampledMs += ms;
      const name = n.callFrame.functionName || '(anonymous)';
      if (name === '(idle)') {
        idleMs += ms;
        continue;
      }
      if (name === '(garbage collector)') gcMs += ms;
      if (SPECIAL.has(name)) continue;
      const k = key(n);
      const { pkg, at } = place(n.callFrame);
      const row = self.get(k) ?? { name, where: at || pkg, ms: 0 };
      row.ms += ms;
      self.set(k, row);
      pkgs.set(pkg, (pkgs.get(pkg) ?? 0) + ms);
      // Inclusive: count a node only if no ancestor is the same function (recursion).
      let a = parent.get(n.id);
      let nested = false;
      while (a !== undefined) {
        if (key(byId.get(a)!) === k) {
          nested = true;
          break;
        }
        a = parent.get(a);
      }
      if (!nested) total.set(k, (total.get(k) ?? 0) + (incl.get(n.id) ?? 0));
    }
  }
  const busyMs = sampledMs - idleMs;
  const pct = (ms: number) => (busyMs > 0 ? (100 * ms) / busyMs : 0);
  const functions = [...self.entries()]
    .map(([k, r]) => ({
      name: r.name,
      where: r.where,
      selfMs: r.ms,
      selfPct: pct(r.ms),
      totalMs: total.get(k) ?? r.ms,
      totalPct: pct(total.get(k) ?? r.ms),
    }))
    .sort((a, b) => b.selfMs - a.selfMs)
    .slice(0, top);
  const packages = [...pkgs.entries()]
    .map(([where, ms]) => ({ where, selfMs: ms, selfPct: pct(ms) }))
    .sort((a, b) => b.selfMs - a.selfMs);
  return { sampledMs, busyMs, gcMs, gcPct: pct(gcMs), functions, packages };
}

/** The heaviest inclusive entries among the given names (e.g. runFunction, encode, decode). */
export function inclusiveOf(
  profiles: CpuProfile[],
  names: string[],
): Array<{ name: string; where: string; totalPct: number }> {
  const s = summarize(profiles, 100000);
  return s.functions
    .filter((f) => names.includes(f.name))
    .sort((a, b) => b.totalMs - a.totalMs)
    .map((f) => ({ name: f.name, where: f.where, totalPct: f.totalPct }));
}

export function formatSummary(s: ProfileSummary, title: string): string {
  const lines = [
    `${title}: ${(s.busyMs / 1000).toFixed(2)} s busy of ${(s.sampledMs / 1000).toFixed(2)} s sampled; garbage collection ${s.gcPct.toFixed(1)} % of busy time`,
    '',
    '  self%  incl%  function (where)',
  ];
  for (const f of s.functions)
    lines.push(`  ${f.selfPct.toFixed(1).padStart(5)}  ${f.totalPct.toFixed(1).padStart(5)}  ${f.name} (${f.where})`);
  lines.push('', '  self%  package');
  for (const p of s.packages.slice(0, 14)) lines.push(`  ${p.selfPct.toFixed(1).padStart(5)}  ${p.where}`);
  return lines.join('\n');
}

export function readProfiles(target: string): CpuProfile[] {
  const files = statSync(target).isDirectory()
    ? readdirSync(target)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(target, f))
    : [target];
  return files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as CpuProfile);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
  const targets = args.filter((a, i) => a !== '--top' && i !== topAt + 1);
  if (targets.length === 0) {
    process.stderr.write('usage: node dist/bench/profile.js FILE.cpuprofile|DIR [--top N]\n');
    process.exit(2);
  }
  for (const t of targets) process.stdout.write(`${formatSummary(summarize(readProfiles(t), top), t)}\n\n`);
}
