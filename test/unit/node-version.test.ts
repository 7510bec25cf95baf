// dist/main.js refuses a Node older than package.json's engines, naming both
// versions, before the server's modules load; the bench does the same.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../dev/infra/paths.js';
import { nodeTooOld, requiredNode, satisfies } from '../../src/node-version.js';

const main = join(repoRoot, 'dist', 'main.js');
// The bundled server's entry (scripts/bundle.mjs) refuses the same way.
const bundle = join(repoRoot, 'dist', 'bundle', 'main.mjs');
const engines = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { engines: { node: string } })
  .engines.node;

// Makes the process report another version, as an older Node would, before dist/main.js runs.
const pretend = (version: string) =>
  `data:text/javascript,Object.defineProperty(process,'version',{value:${JSON.stringify(version)}})`;

describe('the Node version check', () => {
  test('versions compared part by part, missing parts as 0', () => {
    assert.equal(satisfies('v24.0.0', '>=24'), true);
    assert.equal(satisfies('v24.21.0', '>=24.19.0'), true);
    assert.equal(satisfies('v24.18.9', '>=24.19.0'), false);
    assert.equal(satisfies('v23.99.99', '>=24'), false);
    assert.equal(satisfies('v100.0.0', '>=24.1'), true);
    assert.equal(satisfies('v9.0.0', '>=24'), false);
  });

  test('the range is package.json engines.node; a range it cannot judge is an error', () => {
    assert.equal(requiredNode(), engines);
    assert.match(nodeTooOld('x', 'v1.0.0', '>=24') ?? '', /x needs Node >=24 .* runs on Node v1\.0\.0/);
    assert.equal(nodeTooOld('x', 'v24.0.0', '>=24'), undefined);
  });

  for (const entry of [main, bundle]) {
    const name = entry.slice(repoRoot.length + 1);
    test(`${name} on an older Node: exit 1, one line naming both versions, no server`, () => {
      const r = spawnSync(
        process.execPath,
        ['--import', pretend('v20.11.1'), entry, '--insecure', '--address', '127.0.0.1:0'],
        { encoding: 'utf8', timeout: 20_000 },
      );
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(
        r.stderr.trim(),
        `function-platform needs Node ${engines} (package.json engines) but runs on Node v20.11.1: start it with a newer node (npm scripts use the project's own Node)`,
      );
    });

    test(`${name} on this Node starts (--help answers)`, () => {
      const r = spawnSync(process.execPath, [entry, '--help'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /--insecure/);
    });
  }

  test('a real older Node on the machine is refused too', (t) => {
    const old = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' });
    const version = old.status === 0 ? old.stdout.trim() : undefined;
    if (!version || satisfies(version, engines)) {
      t.skip(`no Node older than ${engines} at /usr/bin/node`);
      return;
    }
    const r = spawnSync('/usr/bin/node', [main, '--insecure'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`needs Node ${engines} .* runs on Node ${version.replace(/\./g, '\\.')}:`));
  });
});
