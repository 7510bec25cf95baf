// `npm run build`'s second output: the server as one bundled ES module (and
// the chunks it loads on first use: the AWS SDK), started through a small
// entry that refuses too old a Node and turns on Node's compile cache.
// Loading 190 modules from node_modules is most of a cold start; one file
// whose compiled code comes from the cache starts faster (npm run bench
// measures both as `ours` and `bundle`).
//
//   node dist/bundle/main.mjs [the flags of dist/main.js]
//
// The compile cache lives in dist/bundle/compile-cache (or NODE_COMPILE_CACHE):
// an image fills it at build time by starting the server once, and reads it
// read-only after; where it cannot be written, Node runs without writing it.
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const out = 'dist/bundle';
rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: { server: 'dist/src/main.js' },
  outdir: out,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  // Packages' ES module builds where they ship one (the AWS SDK does): a CommonJS package in a split-off
  // chunk would reach import() as `default` only (esbuild's interop), without the named exports Node gives it.
  mainFields: ['module', 'main'],
  format: 'esm',
  platform: 'node',
  target: 'node24',
  // CommonJS packages inside an ES module bundle still call require() for Node's built-ins.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  legalComments: 'linked',
  logLevel: 'warning',
});
writeFileSync(
  `${out}/main.mjs`,
  `#!/usr/bin/env node
import { constants, enableCompileCache } from 'node:module';
import { refuseOldNode } from '../src/node-version.js';
refuseOldNode('function-platform');
const cache = enableCompileCache(process.env.NODE_COMPILE_CACHE || new URL('./compile-cache', import.meta.url).pathname);
// Node keys the cache by uid, V8 flags and the CPU's features: a uid or CPU the image was not filled for finds
// no folder of its own, and a read-only root cannot make one. It starts as well, only slower: said once.
if (cache.status === constants.compileCacheStatus.FAILED)
  process.stdout.write(
    \`\${JSON.stringify({ severity: 'WARN', time: Date.now(), fn: 'function-platform', compileCache: cache.message, msg: 'starting without the compile cache (slower): ' + cache.message })}\\n\`,
  );
await import('./server.mjs');
`,
);
chmodSync(`${out}/main.mjs`, 0o755);
