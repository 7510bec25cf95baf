#!/usr/bin/env node
// Fills the bundle's compile cache inside an image's root, for each uid the
// image may run as (scripts/build-image.sh calls it before the last layer is
// packed). Node keeps compiled code per uid and per file path
// (<cache>/v<node>-<arch>-<flags hash>-<uid>/): a cache filled as root, or
// outside the image's paths, is never read by Crossplane's uid 2000. So each
// uid starts the server in the root itself (a user namespace maps it, the
// root is the filesystem) and stops it once it listens; Node writes the cache
// as it exits. No call is made: what a call compiles lazily comes out
// different from one run to the next (V8's code cache is not deterministic
// there), and the image must be reproducible; what loading compiles is.
//
//   node scripts/fill-compile-cache.mjs ROOT UID [UID ...]
//
// The entry and Node flags are the image's (ENTRYPOINT); ROOT/function/dist/bundle/compile-cache
// must be writable by those uids while this runs.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const [root, ...uids] = process.argv.slice(2);
if (!root || uids.length === 0) {
  process.stderr.write('usage: fill-compile-cache.mjs ROOT UID [UID ...]\n');
  process.exit(2);
}
const ENTRYPOINT = [
  '/nodejs/bin/node',
  '--max-semi-space-size=1',
  '--no-concurrent-recompilation',
  'dist/bundle/main.mjs',
];
const CACHE = 'function/dist/bundle/compile-cache';

const UNSHARE = execFileSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).trim();

function fill(uid) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      UNSHARE,
      [
        '--user',
        `--map-user=${uid}`,
        `--map-group=${uid}`,
        `--root=${root}`,
        '--wd=/function',
        '--',
        ...ENTRYPOINT,
        '--insecure',
        '--address',
        '127.0.0.1:0',
      ],
      // The image's environment only (its ENV), as a pod gets it.
      { stdio: ['ignore', 'pipe', 'inherit'], env: { PATH: '/nodejs/bin', NODE_ENV: 'production' } },
    );
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (/"msg":"listening on port \d+"/.test(out)) child.kill('SIGTERM');
    });
    // A server that never listens must not hold the build.
    const limit = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      if (code !== 0) return reject(new Error(`uid ${uid}: the server exited ${code ?? signal}\n${out}`));
      // What Node wrote for this uid: a folder of its own (…-<uid>) holding the cache's files.
      const cache = join(root, CACHE);
      const mine = readdirSync(cache).filter((d) => d.endsWith(`-${uid}`));
      const files = mine.flatMap((d) => readdirSync(join(cache, d)));
      if (mine.length !== 1 || files.length === 0)
        return reject(
          new Error(`uid ${uid}: no compile cache written in ${cache} (${mine.join(', ') || 'no folder'})`),
        );
      resolve();
    });
  });
}

for (const uid of uids) {
  await fill(uid);
  process.stderr.write(`fill-compile-cache: filled for uid ${uid}\n`);
}
