#!/usr/bin/env node
// npm run chaos [-- --rounds N] [-- --seed S]     N rounds (default 12) drawn from seed S (default: random, printed)
// npm run chaos -- --set ci                       the short set CI runs (plan.ts: CI_SET, what it leaves out)
// npm run chaos -- --set all                      every fault and every moment once
// npm run chaos -- --replay S                     the one round of seed S (as printed), alone
// npm run chaos -- --only M[:AT[:FAULT]],...       these rounds, in order (e.g. cutover::kubelet-kill), the rest
//                                                 of each drawn from the seed
// Options: --out FILE (the report as JSON), --dir DIR (where the control plane goes; default a temp dir),
// --keep (leave the control plane running afterwards). Exits 1 when any invariant was violated.
// Needs root and the real node's tools (scripts/install-node.sh and the rest, as npm test installs them).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realNodeSuiteSkipReason } from '../support/control-plane.js';
import { ALL_SET, CI_SET, type Fault, type Moment, planRound, type RoundPlan, roundSeed } from './plan.js';
import { runChaos } from './run.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const flag = (name: string) => process.argv.includes(`--${name}`);
const number = (s: string) => (s.startsWith('0x') ? Number.parseInt(s.slice(2), 16) : Number(s));

const t0 = Date.now();
const say = (line: string) =>
  process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${line}\n`);

const why = realNodeSuiteSkipReason('npm run chaos');
if (why) {
  say(`cannot run: ${why}`);
  process.exit(2);
}

let plans: RoundPlan[];
let seed: number | undefined;
if (arg('set') === 'ci' || arg('set') === 'all') {
  // Fixed seeds: the same rounds, with the same timings, every time.
  const set = arg('set') === 'ci' ? CI_SET : ALL_SET;
  plans = set.map((only, i) => planRound(roundSeed(0xc1, i), only));
} else if (arg('only')) {
  seed = arg('seed') ? number(arg('seed')!) : Math.floor(Math.random() * 0xffffffff) + 1;
  plans = arg('only')!
    .split(',')
    .map((spec, i) => {
      const [moment, at, fault] = spec.split(':');
      return planRound(roundSeed(seed!, i), {
        ...(moment ? { moment: moment as Moment } : {}),
        ...(at ? { at } : {}),
        ...(fault ? { fault: fault as Fault } : {}),
      });
    });
} else if (arg('replay')) {
  plans = [planRound(number(arg('replay')!))];
} else {
  seed = arg('seed') ? number(arg('seed')!) : Math.floor(Math.random() * 0xffffffff) + 1;
  const rounds = Number(arg('rounds') ?? '12');
  plans = Array.from({ length: rounds }, (_, i) => planRound(roundSeed(seed!, i)));
  say(`seed 0x${seed.toString(16)} (again: npm run chaos -- --seed 0x${seed.toString(16)} --rounds ${rounds})`);
}

const dir = arg('dir') ?? mkdtempSync(join(tmpdir(), 'fp-chaos-'));
const report = await runChaos({
  dir,
  plans,
  say,
  ...(seed !== undefined ? { seed } : {}),
  ...(arg('out') ? { out: arg('out')! } : {}),
  keep: flag('keep'),
});
if (!arg('dir') && !flag('keep') && report.violations.length === 0) rmSync(dir, { recursive: true, force: true });
for (const r of report.rounds.filter((x) => x.violations > 0))
  say(`round ${r.index} failed: npm run chaos -- --replay 0x${r.seed.toString(16)}`);
process.exit(report.violations.length === 0 ? 0 : 1);
