#!/usr/bin/env node
// The wire output of every example scenario, to hold two builds against each
// other byte for byte (a refactor must not change what the function answers).
//
//   node scripts/render-wire.mjs render DIST OUT      every call of every scenario of
//        examples/scenarios.yaml through DIST's pure pipeline (as npm run demo sends
//        them, requirements answered until they settle), each answer encoded by DIST's
//        own server codec (src/wire.ts), one JSON line a call into OUT; then, for a wider net,
//        every example XR crosswise with each observed and each required file of its folder
//   node scripts/render-wire.mjs compare BASE [HEAD]   builds both revisions' src in
//        temporary worktrees (this checkout's node_modules), renders both, compares;
//        HEAD defaults to the working tree as it is. Exits 1 on the first difference,
//        printing where the two answers part
//
// Held fixed so that two runs can be equal: the clock (the examples' time,
// test/support/render-cases.ts) and the one random input, a generated password
// (node:crypto's randomBytes returns a constant here, never in the product).
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const EXAMPLES_NOW = '2026-12-02T10:00:00Z';

async function render(dist, out) {
  // The password generator draws from randomBytes: a constant makes every generated password the same.
  crypto.randomBytes = (n) => Buffer.alloc(n, 7);
  syncBuiltinESMExports();
  const load = (p) => import(pathToFileURL(join(resolve(dist), p)).href);
  const { setClock } = await load('src/clock.js');
  const { runFunction } = await load('src/function.js');
  const { buildRequest, readYamlObjects, runWithRequirements } = await load('src/render.js');
  const { encodeRunFunctionResponse } = await load('src/wire.js');
  const { parse } = await import('yaml');
  setClock(() => new Date(EXAMPLES_NOW));
  const examples = join(root, 'examples');
  const scenarios = parse(readFileSync(join(examples, 'scenarios.yaml'), 'utf8'));
  const lines = [];
  for (const s of scenarios) {
    const [xr] = readYamlObjects(join(examples, s.xr));
    const required = s.required ? readYamlObjects(join(examples, s.required)) : [];
    for (const observed of s.observed) {
      const what = `${s.xr}${s.required ? ` (required ${s.required})` : ''} + ${observed}`;
      let call = 0;
      const record = (req) => {
        const rsp = runFunction(req);
        lines.push(JSON.stringify({ what, call: ++call, bytes: encodeRunFunctionResponse(rsp).toString('base64') }));
        return rsp;
      };
      runWithRequirements(record, buildRequest(xr, readYamlObjects(join(examples, observed))), required);
    }
  }
  const scenarioCalls = lines.length;
  // Crosswise, for a wider net than the scenarios: every example XR of a folder with nothing observed and with
  // each observed file of its folder, each with no required resources and with each required file of its folder.
  const XR_KINDS = new Set(['Widget', 'Database', 'DatabaseBackup', 'DatabaseRestore']);
  const yamlsIn = (dir) =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.yaml'))
          .sort()
          .map((f) => join(dir, f))
      : [];
  let crosswise = 0;
  for (const folder of readdirSync(examples).sort()) {
    const dir = join(examples, folder);
    if (!statSync(dir).isDirectory()) continue;
    const xrs = yamlsIn(dir).filter((f) => XR_KINDS.has(readYamlObjects(f)[0]?.kind));
    for (const xrFile of xrs)
      for (const observed of [undefined, ...yamlsIn(join(dir, 'observed'))])
        for (const required of [undefined, ...yamlsIn(join(dir, 'required'))]) {
          const what = `crosswise ${[xrFile, observed, required]
            .filter(Boolean)
            .map((f) => f.slice(examples.length + 1))
            .join(' + ')}`;
          let call = 0;
          const record = (req) => {
            const rsp = runFunction(req);
            lines.push(
              JSON.stringify({ what, call: ++call, bytes: encodeRunFunctionResponse(rsp).toString('base64') }),
            );
            return rsp;
          };
          const req = buildRequest(readYamlObjects(xrFile)[0], observed ? readYamlObjects(observed) : []);
          try {
            runWithRequirements(record, req, required ? readYamlObjects(required) : []);
          } catch (err) {
            // Requirements that never settle are an answer too (Crossplane gives up the same way).
            lines.push(
              JSON.stringify({ what, call: 'error', bytes: Buffer.from(String(err.message)).toString('base64') }),
            );
          }
          crosswise++;
        }
  }
  writeFileSync(out, `${lines.join('\n')}\n`);
  process.stdout.write(
    `${scenarioCalls} calls of ${scenarios.length} scenarios, ${lines.length - scenarioCalls} of ${crosswise} crosswise renders, into ${out}\n`,
  );
}

/** A revision's src built into DIST of a temporary worktree; the working tree itself when rev is undefined. */
function build(rev, work) {
  let dir = root;
  if (rev !== undefined) {
    dir = join(work, rev.replace(/[^A-Za-z0-9._-]/g, '_'));
    execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', '--quiet', dir, rev], { stdio: 'inherit' });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  }
  const dist = join(work, `dist-${rev === undefined ? 'working-tree' : rev.replace(/[^A-Za-z0-9._-]/g, '_')}`);
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json'), '--outDir', dist],
    { stdio: 'inherit', cwd: dir },
  );
  // Each build answers from its own tree (render reads examples/ from this checkout: the scenarios are the same).
  symlinkSync(join(root, 'node_modules'), join(dist, 'node_modules'));
  return { dir, dist };
}

function renderIn(dist, out) {
  // A process of its own: each build's modules, its clock and its patched randomBytes stay apart.
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), 'render', dist, out], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`rendering with ${dist} failed`);
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Where two decoded answers first part: a path and both values. */
function firstDifference(a, b, path = '') {
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null)
    return `${path || '(root)'}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = firstDifference(a[k], b[k], `${path}.${k}`);
    if (d) return d;
  }
  return `${path || '(root)'}: same keys, different order`;
}

async function compare(base, head) {
  const work = mkdtempSync(join(tmpdir(), 'render-wire-'));
  const worktrees = [];
  try {
    const before = build(base, work);
    if (before.dir !== root) worktrees.push(before.dir);
    const after = build(head, work);
    if (after.dir !== root) worktrees.push(after.dir);
    const a = renderIn(before.dist, join(work, 'before.jsonl'));
    const b = renderIn(after.dist, join(work, 'after.jsonl'));
    const { RunFunctionResponse } = await import('@crossplane-org/function-sdk-typescript');
    const decode = (line) => RunFunctionResponse.toJSON(RunFunctionResponse.decode(Buffer.from(line.bytes, 'base64')));
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i];
      const y = b[i];
      if (!x || !y || x.what !== y.what || x.call !== y.call) {
        process.stderr.write(
          `call ${i + 1}: ${x ? `${x.what} #${x.call}` : 'none'} vs ${y ? `${y.what} #${y.call}` : 'none'}\n`,
        );
        process.exitCode = 1;
        return;
      }
      if (x.bytes !== y.bytes && (x.call === 'error' || y.call === 'error')) {
        const text = (l) => Buffer.from(l.bytes, 'base64').toString();
        process.stderr.write(`${x.what}: ${text(x)} vs ${text(y)}\n`);
        process.exitCode = 1;
        return;
      }
      if (x.bytes !== y.bytes) {
        process.stderr.write(
          `${x.what}, call ${x.call}: the answers differ\n  ${firstDifference(decode(x), decode(y))}\n`,
        );
        process.exitCode = 1;
        return;
      }
    }
    const bytes = a.reduce((n, l) => n + Buffer.from(l.bytes, 'base64').length, 0);
    process.stdout.write(
      `byte-identical: ${a.length} answers (${bytes} bytes) of ${base} and ${head ?? 'the working tree'}\n`,
    );
  } finally {
    for (const dir of worktrees) execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', dir]);
    rmSync(work, { recursive: true, force: true });
  }
}

const [verb, ...args] = process.argv.slice(2);
if (verb === 'render' && args.length === 2) await render(args[0], args[1]);
else if (verb === 'compare' && (args.length === 1 || args.length === 2)) await compare(args[0], args[1]);
else {
  process.stderr.write('usage: render-wire.mjs render DIST OUT | compare BASE [HEAD]\n');
  process.exitCode = 2;
}
