// `node dist/main.js` is how Crossplane-style images start a function; the
// compiled entry lives at dist/src/main.js, so dist/main.js forwards to it.
import { writeFileSync, chmodSync } from 'node:fs';
writeFileSync('dist/main.js', "#!/usr/bin/env node\nimport './src/main.js';\n");
chmodSync('dist/main.js', 0o755);
chmodSync('dist/src/cli.js', 0o755);
