#!/usr/bin/env node
// npm test: every test of the project, after installing the tools they need.
// The real Crossplane CLI comes from the Go module proxy (scripts/install-crossplane.sh);
// without Go, those tests skip loudly, except in CI where they must run.
import { spawnSync } from 'node:child_process';

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) return { ok: false, error: r.error };
  return { ok: r.status === 0, status: r.status };
}

const ci = Boolean(process.env.CI) && !['0', 'false'].includes(String(process.env.CI).toLowerCase());
const check = run(process.execPath, ['scripts/generate-schemas.mjs', '--check']);
if (!check.ok) process.exit(1);

const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
if (hasGo) {
  const crank = run('bash', ['scripts/install-crossplane.sh']);
  if (!crank.ok) {
    console.error('installing the crossplane CLI failed');
    if (ci) process.exit(1);
  }
} else if (ci) {
  console.error('CI needs Go to build the crossplane CLI');
  process.exit(1);
} else {
  console.warn('\n!!! Go is not installed: the tests against the real crossplane CLI will be SKIPPED !!!\n');
}

// moto's server: the real AWS API the tests of the AWS path talk to.
const hasPython = spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0;
if (hasPython) {
  const moto = run('bash', ['scripts/install-moto.sh']);
  if (!moto.ok) {
    console.error('installing moto failed');
    if (ci) process.exit(1);
  }
} else if (ci) {
  console.error('CI needs Python 3 for moto');
  process.exit(1);
} else {
  console.warn('\n!!! Python 3 is not installed: the tests against moto (AWS) will be SKIPPED !!!\n');
}

// A real kube-apiserver and etcd for test/apiserver/ (scripts/install-kube.sh):
// copied from the per-user cache when built before, else built with Go.
const kube = run('bash', ['scripts/install-kube.sh']);
if (!kube.ok) {
  console.error('installing kube-apiserver and etcd failed');
  if (ci) process.exit(1);
  console.warn('\n!!! no kube-apiserver/etcd: the tests against a real API server will be SKIPPED !!!\n');
}

const files = process.argv.slice(2);
const args = ['--test', '--test-timeout=300000', ...(files.length ? files : ['dist/test/**/*.test.js'])];
const result = run(process.execPath, args);
process.exit(result.ok ? 0 : 1);
