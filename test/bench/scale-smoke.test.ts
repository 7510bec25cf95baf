// npm run bench:scale, smoke-run: its quick mode (SCALE_QUICK=1, bench/scale.ts)
// on a few Widgets (both functions) and Databases (ours, every placement), every
// step, under real Crossplane on the local control plane. It proves the scale
// bench still runs and that each step ends as it says (every composite there,
// every call counted, the CPU of the control plane's processes read); it
// judges no figure (speed is the bench's to print, not a test's).
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
const DATABASES = 3;
const skip =
  controlPlaneSkipReason('npm run bench:scale, quick') ??
  toolsSkipReason('npm run bench:scale, quick', ['function-patch-and-transform'], 'scripts/install-peer.sh');

interface Step {
  step: string;
  seconds: number[];
  doneS: number;
  restart: boolean;
  idle: boolean;
  calls: number;
  functionCpu: number;
  crossplaneCpu: number;
  peakRssMiB: number;
  cpu: Record<string, number>;
  machineCpu: number;
  api: { requests: Record<string, number>; watchEvents: Record<string, number> };
}

describe('npm run bench:scale, quick', { skip }, () => {
  test('both functions take a few Widgets, and ours a few Databases, through every step under real Crossplane', {
    timeout: 20 * 60_000,
  }, async () => {
    rmSync(join(repoRoot, OUT), { recursive: true, force: true });
    const run = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [join(repoRoot, 'dist', 'bench', 'scale.js')], {
        cwd: repoRoot,
        env: {
          // The knobs are the test's own: a caller's SCALE_STEPS or flags would change what it checks.
          ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SCALE_'))),
          SCALE_QUICK: '1',
          SCALE_SIZES: String(SIZE),
          SCALE_DATABASES: String(DATABASES),
          SCALE_OUT: OUT,
        },
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
      results: Array<{ fn: string; kind: string; size: number; steps: Step[] }>;
    };
    assert.deepEqual(
      json.results.map((r) => [r.fn, r.kind, r.size]),
      [
        ['ours', 'Widget', SIZE],
        ['peer', 'Widget', SIZE],
        ['ours', 'Database', DATABASES],
      ],
    );
    for (const r of json.results) {
      const names = r.steps.map((s) => s.step);
      const widgets = r.kind === 'Widget';
      assert.deepEqual(names, [
        'apply → Ready',
        ...(widgets ? ['every size 1 → 2 → 2 available'] : []),
        ...(widgets && r.fn === 'ours' ? ['every color changed → live on it'] : []),
        'idle 10 s',
        'function restarted → each called again',
        'Crossplane restarted → each called again',
      ]);
      const what = `${r.fn} ${r.kind}s`;
      for (const s of r.steps) {
        if (s.idle) assert.ok(s.doneS >= 10 && s.seconds.length === 0, `${what} ${s.step}: watched 10 s`);
        // A restart has no times per composite: every one was done before it.
        else if (s.restart) assert.equal(s.seconds.length, 0, `${what} ${s.step}`);
        else assert.equal(s.seconds.length, r.size, `${what} ${s.step}: every composite seen done`);
        if (!s.idle)
          assert.ok(s.calls >= (s.restart ? r.size : 1), `${what} ${s.step}: Crossplane's calls counted (${s.calls})`);
        assert.ok(s.doneS > 0 && s.functionCpu >= 0 && s.crossplaneCpu > 0 && s.peakRssMiB > 0, `${what} ${s.step}`);
        assert.ok((s.cpu['kube-apiserver'] ?? 0) > 0 && s.machineCpu > 0, `${what} ${s.step}: where the time went`);
        // What the API server was asked: a converging step has the XR's status written (Crossplane's own update).
        const asked = s.api.requests;
        if (!s.idle && !s.restart)
          assert.ok(
            (asked[`PUT example.com/${widgets ? 'widgets' : 'databases'}/status`] ?? 0) >= r.size,
            `${what} ${s.step}: the API server's requests counted (${JSON.stringify(asked).slice(0, 400)})`,
          );
      }
      // Every composite's watch events were sent while it was applied.
      const applied = r.steps[0]!.api.watchEvents;
      assert.ok((applied[`example.com/${r.kind === 'Widget' ? 'widgets' : 'databases'}`] ?? 0) >= r.size, what);
    }
    assert.match(run.output, /function-platform, 6 Widgets +apply → Ready/);
    assert.match(run.output, /function-patch-and-transform, 6 Widgets +apply → Ready/);
    assert.match(run.output, /function-platform, 3 Databases +apply → Ready/);
    assert.match(run.output, /Where the time went/);
    assert.match(run.output, /What the API server was asked/);
  });
});
