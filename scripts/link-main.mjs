// `node dist/main.js` is how Crossplane-style images start a function; the
// compiled entry lives at dist/src/main.js, so dist/main.js forwards to it,
// after refusing a Node older than package.json's engines (checked before the
// server's modules load, so the refusal is the only thing an old Node says).
import { writeFileSync, chmodSync } from 'node:fs';
writeFileSync(
  'dist/main.js',
  "#!/usr/bin/env node\nimport { refuseOldNode } from './src/node-version.js';\nrefuseOldNode('function-platform');\nawait import('./src/main.js');\n",
);
chmodSync('dist/main.js', 0o755);
chmodSync('dist/src/cli.js', 0o755);
