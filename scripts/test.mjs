#!/usr/bin/env node
// npm test: every test of the project, after installing the tools they need.
// Each tool comes from a package registry through the project's own script;
// without what a script needs (Go, Python), the suites that use the tool skip
// loudly, except in CI where they must run.
import { spawn, spawnSync } from 'node:child_process';

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) return { ok: false, error: r.error };
  return { ok: r.status === 0, status: r.status };
}

const has = (cmd, arg) => spawnSync(cmd, [arg], { stdio: 'ignore' }).status === 0;
const ci = Boolean(process.env.CI) && !['0', 'false'].includes(String(process.env.CI).toLowerCase());

// Lint and format first: cheap, and a red one is red whatever the suites say.
const lint = run(process.execPath, ['node_modules/@biomejs/biome/bin/biome', 'check', '.']);
if (!lint.ok) {
  console.error('biome check failed: `npm run format` fixes formatting; lint findings need a hand');
  process.exit(1);
}
// The import rules (.dependency-cruiser.cjs): the layering CONTRIBUTING.md draws.
const rules = run(process.execPath, [
  'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs',
  'src',
  '--config',
  '.dependency-cruiser.cjs',
]);
if (!rules.ok) {
  console.error('the import rules failed (.dependency-cruiser.cjs; CONTRIBUTING.md says what may import what)');
  process.exit(1);
}
const check = run(process.execPath, ['scripts/generate-schemas.mjs', '--check']);
if (!check.ok) process.exit(1);

const tools = [
  // crank and Crossplane core v2.2.1, the OCI registry, and our Go helpers (Crossplane-shaped certificates and client).
  {
    script: 'scripts/install-crossplane.sh',
    what: 'Crossplane (CLI and core)',
    needs: 'go',
    ok: () => has('go', 'version'),
    skipped: 'the tests against the real crossplane CLI',
  },
  // moto's server: the real RDS and S3 APIs the tests of the AWS path talk to.
  {
    script: 'scripts/install-moto.sh',
    what: 'moto',
    needs: 'Python 3',
    ok: () => has('python3', '--version'),
    skipped: 'the tests against moto (AWS)',
  },
  // etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok: copied from the per-user cache when built before, else built with Go.
  {
    script: 'scripts/install-kube.sh',
    what: 'the Kubernetes binaries',
    needs: 'go',
    ok: () => true,
    skipped: 'the tests against a real API server and the e2e suites',
  },
  // PostgreSQL 15 and MariaDB 10.11 (Debian's packages) and the AWS CLI: the backup Job's commands run against them.
  {
    script: 'scripts/install-databases.sh',
    what: 'the database servers and the AWS CLI',
    needs: 'Debian packages',
    ok: () => has('apt-get', '--version'),
    skipped: 'the tests of dumps and restores',
  },
  // The benchmark's anchors (Go and Python no-op functions, ghz) and its Go peer, for the bench smoke test.
  {
    script: 'scripts/install-bench-anchors.sh',
    what: "the benchmark's anchors (Go and Python no-op functions, ghz)",
    needs: 'go',
    ok: () => has('go', 'version') && has('python3', '--version'),
    skipped: "the bench smoke test's floors",
  },
  // promtool (Prometheus's rule checker and rule unit-test runner): it evaluates the alerts a Database composes.
  {
    script: 'scripts/install-prometheus.sh',
    what: 'promtool (Prometheus)',
    needs: 'go',
    ok: () => has('go', 'version'),
    skipped: 'the alerts evaluated by Prometheus',
  },
  {
    script: 'scripts/install-peer.sh',
    what: 'function-patch-and-transform (the benchmark peer)',
    needs: 'go',
    ok: () => has('go', 'version'),
    skipped: "the bench smoke test's peer",
  },
  // The real node: containerd, runc and the CNI plugins from Debian, CoreDNS and small tools from Go
  // modules, and the images its pods run (after install-crossplane.sh and install-kube.sh: it needs
  // xp-image, the kubelet and kube-proxy).
  {
    script: 'scripts/install-node.sh',
    what: 'the real node (containerd, runc, CNI plugins, CoreDNS, the node images)',
    needs: 'root and Debian packages',
    ok: () => process.getuid?.() === 0 && has('apt-get', '--version'),
    skipped: 'the suites on a real node (test/e2e-real)',
  },
  // provider-kubernetes, for the claims e2e suites.
  {
    script: 'scripts/install-provider-kubernetes.sh',
    what: 'provider-kubernetes',
    needs: 'go',
    ok: () => true,
    skipped: 'the claims e2e suite',
  },
];
// The installs run side by side: a Go build leaves a core idle while it links, downloads or compiles its
// last big package, and apt, pip and the Go builds wait on different things. At most two Go builds at once
// (two cores here); apt's users one at a time (dpkg's lock); the node after what it builds on.
// Each install's output is printed whole when it ends, so the log reads one install at a time.
const byScript = new Map(tools.map((t) => [t.script, t]));
const after = {
  'scripts/install-node.sh': [
    'scripts/install-crossplane.sh',
    'scripts/install-kube.sh',
    'scripts/install-databases.sh',
  ],
};
// dpkg takes one at a time.
const aptUsers = new Set(['scripts/install-databases.sh', 'scripts/install-node.sh']);
const goBuilds = new Set([
  'scripts/install-crossplane.sh',
  'scripts/install-kube.sh',
  'scripts/install-bench-anchors.sh',
  'scripts/install-peer.sh',
  'scripts/install-prometheus.sh',
  'scripts/install-provider-kubernetes.sh',
  'scripts/install-node.sh',
]);
// Longest first, so the long builds start at once and the short ones fill the gaps.
const order = [
  'scripts/install-kube.sh',
  'scripts/install-crossplane.sh',
  'scripts/install-databases.sh',
  'scripts/install-moto.sh',
  'scripts/install-provider-kubernetes.sh',
  'scripts/install-peer.sh',
  'scripts/install-prometheus.sh',
  'scripts/install-bench-anchors.sh',
  'scripts/install-node.sh',
];
const installStarted = Date.now();
const done = new Map(); // script -> true (installed) or false (failed or skipped)
const running = new Set();
const queue = order.filter((s) => byScript.has(s));
for (const tool of tools) {
  if (tool.ok()) continue;
  if (ci) {
    console.error(`CI needs ${tool.needs} for ${tool.what}`);
    process.exit(1);
  }
  console.warn(`\n!!! ${tool.needs} is not installed: ${tool.skipped} will be SKIPPED !!!\n`);
  done.set(tool.script, false);
  queue.splice(queue.indexOf(tool.script), 1);
}

function startInstall(script) {
  const tool = byScript.get(script);
  const began = Date.now();
  running.add(script);
  console.log(`== ${script} started`);
  return new Promise((resolve) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => out.push(c));
    child.on('close', (code) => {
      running.delete(script);
      process.stdout.write(Buffer.concat(out));
      console.log(`== ${script}: exit ${code} after ${Math.round((Date.now() - began) / 1000)} s`);
      if (code !== 0) {
        console.error(`installing ${tool.what} failed`);
        if (ci) process.exit(1);
        console.warn(`\n!!! no ${tool.what}: ${tool.skipped} will be SKIPPED !!!\n`);
      }
      done.set(script, code === 0);
      resolve();
    });
  });
}

await new Promise((resolveAll) => {
  const pump = () => {
    if (queue.length === 0 && running.size === 0) return resolveAll();
    for (const script of [...queue]) {
      const needs = after[script] ?? [];
      if (!needs.every((n) => done.has(n))) continue;
      if (aptUsers.has(script) && [...running].some((r) => aptUsers.has(r))) continue;
      if (goBuilds.has(script) && [...running].filter((r) => goBuilds.has(r)).length >= 2) continue;
      queue.splice(queue.indexOf(script), 1);
      startInstall(script).then(pump);
    }
  };
  pump();
});
console.log(`== installs done in ${Math.round((Date.now() - installStarted) / 1000)} s`);

const files = process.argv.slice(2);
const args = ['--test', '--test-timeout=300000', ...(files.length ? files : ['dist/test/**/*.test.js'])];
const result = run(process.execPath, args);
process.exit(result.ok ? 0 : 1);
