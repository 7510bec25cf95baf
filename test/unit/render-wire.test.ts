// scripts/render-wire.mjs, the check that two builds answer every example
// byte for byte alike (`node scripts/render-wire.mjs compare BASE`): it runs
// on this build, covers every scenario, and renders the same bytes twice, so
// the check itself cannot rot unnoticed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { repoRoot } from '../../dev/infra/paths.js';

test('render-wire renders every example scenario, the same bytes twice', () => {
  const dir = mkdtempSync(join(tmpdir(), 'render-wire-test-'));
  try {
    const run = (out: string) => {
      const r = spawnSync(
        process.execPath,
        [join(repoRoot, 'scripts', 'render-wire.mjs'), 'render', join(repoRoot, 'dist'), out],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      return readFileSync(out, 'utf8');
    };
    const first = run(join(dir, 'a.jsonl'));
    assert.equal(run(join(dir, 'b.jsonl')), first);
    const lines = first
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { what: string; call: number | string });
    const scenarios = parse(readFileSync(join(repoRoot, 'examples', 'scenarios.yaml'), 'utf8')) as Array<{
      xr: string;
      observed: string[];
    }>;
    for (const s of scenarios)
      for (const o of s.observed)
        assert.ok(
          lines.some((l) => l.what.startsWith(s.xr) && l.what.endsWith(` + ${o}`)),
          `${s.xr} + ${o} rendered`,
        );
    assert.ok(lines.filter((l) => l.what.startsWith('crosswise')).length > 500, 'the crosswise renders ran');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
