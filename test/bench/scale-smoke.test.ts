// npm run bench:scale, smoke-run: its quick mode (SCALE_QUICK=1, bench/scale.ts)
// on a few Widgets, both functions, every step, under real Crossplane on the
// local control plane. It proves the scale bench still runs and that each
// step ends as it says (every Widget there, every call counted); it judges no
// figure (speed is the bench's to print, not a test's).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../dev/infra/paths.js';
import { controlPlaneSkipReason } from '../support/control-plane.js';
import { toolsSkipReason } from '../support/tools.js';

const OUT = join('.cache', 'bench', 'scale-smoke');
const SIZE = 6;
const skip =
  controlPlaneSkipReason('npm run bench:scale, quick') ??
  toolsSkipReason('npm run bench:scale, quick', ['function-patch-and-transform'], 'scripts/install-peer.sh');

interface Step {
  step: string;
  seconds: number[];
  doneS: number;
  restart: boolean;
  calls: number;
  functionCpu: number;
  crossplaneCpu: number;
  peakRssMiB: number;
}

describe('npm run bench:scale, quick', { skip }, () => {
  test('both functions take a few Widgets through every step under real Crossplane', {
    timeout: 20 * 60_000,
  }, async () => {
    rmSync(join(repoRoot, OUT), { recursive: true, force: true });
    const run = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [join(repoRoot, 'dist', 'bench', 'scale.js')], {
        cwd: repoRoot,
        env: { ...process.env, SCALE_QUICK: '1', SCALE_SIZES: String(SIZE), SCALE_OUT: OUT },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (b: Buffer) => (output += b.toString()));
      child.stderr.on('data', (b: Buffer) => (output += b.toString()));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, output }));
    });
    assert.equal(run.code, 0, `bench:scale failed:\n${run.output.slice(-6000)}`);
    const file = join(repoRoot, OUT, 'scale.json');
    assert.ok(existsSync(file), `no ${OUT}/scale.json:\n${run.output.slice(-3000)}`);
    const json = JSON.parse(readFileSync(file, 'utf8')) as {
      results: Array<{ fn: string; size: number; steps: Step[] }>;
    };
    assert.deepEqual(
      json.results.map((r) => [r.fn, r.size]),
      [
        ['ours', SIZE],
        ['peer', SIZE],
      ],
    );
    for (const r of json.results) {
      const names = r.steps.map((s) => s.step);
      assert.deepEqual(names, [
        'apply → Ready',
        'every size 1 → 2 → 2 available',
        ...(r.fn === 'ours' ? ['every color changed → live on it'] : []),
        'function restarted → each called again',
        'Crossplane restarted → each called again',
      ]);
      for (const s of r.steps) {
        assert.equal(s.seconds.length, SIZE, `${r.fn} ${s.step}: every Widget seen done`);
        assert.ok(s.calls >= (s.restart ? SIZE : 1), `${r.fn} ${s.step}: Crossplane's calls counted (${s.calls})`);
        assert.ok(s.doneS > 0 && s.functionCpu >= 0 && s.crossplaneCpu > 0 && s.peakRssMiB > 0, `${r.fn} ${s.step}`);
      }
    }
    assert.match(run.output, /function-platform +6 +apply → Ready/);
    assert.match(run.output, /function-patch-and-transform +6 +apply → Ready/);
  });
});
