// npm run demo, as the README's first command runs it (after the build): the
// demo starts the real server on loopback and sends every example scenario
// through it. It must end cleanly with a row per call, no Fatal answer, and
// the render command it suggests must work as printed.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { repoRoot } from '../support/function-process.js';

describe('npm run demo', () => {
  test('every scenario of examples/scenarios.yaml goes through the gRPC server, one row a call, none Fatal', () => {
    const scenarios = parse(readFileSync(join(repoRoot, 'examples', 'scenarios.yaml'), 'utf8')) as Array<{
      xr: string;
      observed: string[];
    }>;
    const run = spawnSync(process.execPath, [join(repoRoot, 'dist', 'dev', 'demo.js')], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(run.status, 0, `the demo failed:\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`);
    assert.match(run.stdout, new RegExp(`gRPC server on 127\\.0\\.0\\.1:\\d+, ${scenarios.length} scenarios`));
    const lines = run.stdout.split('\n');
    const header = lines.findIndex((l) => l.startsWith('OBJECT '));
    const hint = lines.findIndex((l) => l.startsWith('Each row is one RunFunction call'));
    assert.ok(header >= 0 && hint > header, run.stdout.slice(0, 2000));
    const rows = lines.slice(header + 1, hint).filter((l) => l.trim() !== '');
    assert.equal(
      rows.length,
      scenarios.reduce((n, s) => n + s.observed.length, 0),
      'a row for every call',
    );
    for (const row of rows) assert.doesNotMatch(row, / FATAL /, row);
    // Widget rows say what the user would read: the last call of the seed scenario is ready and serving.
    assert.ok(rows.some((r) => /^Widget\/my-widget +ready +.* true +available: 42 replicas of blue/.test(r)));
  });

  test('the render command it suggests runs as printed', () => {
    const out = execFileSync(
      process.execPath,
      [
        join(repoRoot, 'dist', 'src', 'cli.js'),
        'render',
        'examples/widget/seed.yaml',
        '--observed-resources',
        'examples/widget/observed/ready.yaml',
        '-r',
      ],
      { cwd: repoRoot, encoding: 'utf8' },
    );
    assert.match(out, /kind: Widget/);
    assert.match(out, /kind: Deployment/);
  });
});
