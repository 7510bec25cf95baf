// The benchmark, smoke-run: `npm run bench` in its quick mode (BENCH_QUICK=1,
// bench/config.ts) over every implementation and case, a handful of calls at
// two levels, every answer decoded and checked. It proves the bench still runs
// and that every server answers every case as function-platform does in
// process; it judges no figure (speed is the bench's to print, not a test's).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../dev/infra/paths.js';
import { IMPL_IDS, imageNodeFlags } from '../../bench/servers.js';
import { inCI } from '../support/tools.js';

const OUT = join('.cache', 'bench', 'smoke');
const CASES = [
  'widget-seed',
  'widget-cutover',
  'database-aws',
  'database-aws-v2',
  'database-aws-live',
  'database-cluster',
];
/** The peer composes Widgets only. */
const WIDGET_ONLY = new Set(['peer']);

interface Run {
  code: number | null;
  output: string;
}

function bench(): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'dist', 'bench', 'run.js')], {
      cwd: repoRoot,
      // Its knobs are the test's own (a caller's BENCH_OURS_NODE_FLAGS would replace the image's flags).
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BENCH_'))),
        BENCH_QUICK: '1',
        BENCH_OUT: OUT,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('npm run bench, quick', () => {
  test('every implementation answers every case, checked', { timeout: 20 * 60_000 }, async () => {
    rmSync(join(repoRoot, OUT), { recursive: true, force: true });
    const run = await bench();
    assert.equal(run.code, 0, `the bench failed:\n${run.output.slice(-6000)}`);
    const file = join(repoRoot, OUT, 'latest.json');
    assert.ok(existsSync(file), `no ${OUT}/latest.json:\n${run.output.slice(-3000)}`);
    const json = JSON.parse(readFileSync(file, 'utf8')) as {
      config: { impls: string[]; checkEvery: number };
      results: Array<{ case: string; impl: string; levels: Array<{ concurrency: number; calls: number }> }>;
      sizes: unknown[];
    };
    assert.equal(json.config.checkEvery, 1, 'every answer is checked');
    const impls = json.config.impls;
    const cases = [...new Set(json.results.map((r) => r.case))];
    // Outside CI a missing Go, Python or moto skips its part loudly (the bench says so); CI runs them all.
    const missingImpls = IMPL_IDS.filter((i) => !impls.includes(i));
    const missingCases = CASES.filter((c) => !cases.includes(c));
    if (missingImpls.length > 0 || missingCases.length > 0) {
      const what = `not run: ${[...missingImpls, ...missingCases].join(', ')}`;
      if (inCI()) assert.fail(`${what} (CI must run every implementation and case)\n${run.output.slice(-3000)}`);
      console.warn(`\n!!! bench smoke: ${what} (in CI this is an error) !!!\n`);
    }
    for (const impl of impls)
      for (const c of cases) {
        if (WIDGET_ONLY.has(impl) && !c.startsWith('widget')) continue;
        const r = json.results.find((x) => x.case === c && x.impl === impl);
        assert.ok(r, `${impl} did not run ${c}`);
        assert.deepEqual(
          r.levels.map((l) => l.concurrency),
          [1, 4],
          `${impl} ${c}: both levels`,
        );
        for (const l of r.levels) assert.ok(l.calls > 0, `${impl} ${c} at ${l.concurrency}: no calls`);
      }
    assert.ok(json.sizes.length > 0, 'the size sweep ran');
    // The server is measured with the Node flags its image starts it with (a run once had none, unseen).
    const flags = entrypointFlags();
    assert.ok(flags.length > 0, 'the image passes Node flags');
    assert.ok(
      run.output.includes(`runs as its image starts it: node ${flags.join(' ')} dist/main.js`),
      `the bench says it starts function-platform with ${flags.join(' ')}`,
    );
    for (const [k, v] of Object.entries(imageNodeFlags(repoRoot).env))
      assert.ok(
        new RegExp(`, ${k}=${v}[ ,]`).test(run.output),
        `the bench says it runs function-platform with ${k}=${v}`,
      );
  });

  test("the bench finds the Node flags in the image's ENTRYPOINT, whatever script it names", () => {
    assert.deepEqual(imageNodeFlags(repoRoot).flags, entrypointFlags());
  });

  test("the bench finds the image's malloc settings", () => {
    const malloc: Record<string, string> = {};
    const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    // The final stage's: the image's environment.
    for (const line of text.slice(text.lastIndexOf('\nFROM ')).split('\n')) {
      const m = /^ENV (MALLOC_[A-Z_]+)=(\S+)$/.exec(line);
      if (m) malloc[m[1]!] = m[2]!;
    }
    assert.ok(Object.keys(malloc).length > 0, 'the image sets MALLOC_ARENA_MAX');
    assert.deepEqual(imageNodeFlags(repoRoot).env, malloc);
  });

  test("the bench reads the final stage only, and a flag's value given as a word of its own", () => {
    const dir = mkdtempSync(join(tmpdir(), 'fp-dockerfile-'));
    try {
      writeFileSync(
        join(dir, 'Dockerfile'),
        [
          'FROM node:24 AS build',
          'ENV MALLOC_ARENA_MAX=4',
          'ENV NODE_OPTIONS=--max-old-space-size=512',
          'ENTRYPOINT ["node", "--stack-size=900", "build.js"]',
          'FROM distroless',
          'ENV MALLOC_TRIM_THRESHOLD_=131072',
          'ENTRYPOINT ["/nodejs/bin/node", "--max-old-space-size", "48", "--max-semi-space-size=1", "dist/bundle/main.mjs"]',
          '',
        ].join('\n'),
      );
      assert.deepEqual(imageNodeFlags(dir), {
        flags: ['--max-old-space-size', '48', '--max-semi-space-size=1'],
        env: { MALLOC_TRIM_THRESHOLD_: '131072' },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The Dockerfile's ENTRYPOINT, [node, ...flags, script]: its flags. */
function entrypointFlags(): string[] {
  const line = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('ENTRYPOINT '));
  const argv = JSON.parse(line?.slice('ENTRYPOINT '.length) ?? '[]') as string[];
  return argv.slice(1, -1);
}
