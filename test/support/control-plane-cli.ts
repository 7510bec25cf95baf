#!/usr/bin/env node
// npm run cluster [-- --claims] [-- --real-nodes]
//                                 brings the local control plane up in .cache/cluster
//                                 (--real-nodes: a real node, real pods, an object store)
// npm run cluster:down            stops exactly the processes it started, and
//                                 undoes what a real node did to the machine
// Both are safe to repeat. See test/support/control-plane.ts for what runs.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type ControlPlaneState, startControlPlane, stopRecorded } from './control-plane.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { runs } from '../../dev/infra/processes.js';
import { motoServerPath } from '../../dev/infra/moto.js';

// FUNCTION_PLATFORM_CLUSTER_DIR: elsewhere than .cache/cluster (the test of this command uses its own).
const dir = process.env['FUNCTION_PLATFORM_CLUSTER_DIR'] ?? join(repoRoot, '.cache', 'cluster');
const stateFile = join(dir, 'state.json');
const say = (line = '') => process.stdout.write(`${line}\n`);

function recorded(): ControlPlaneState | undefined {
  return existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as ControlPlaneState) : undefined;
}

function tryIt(state: ControlPlaneState): void {
  const kubecache = join(state.dir, 'kubectl-cache');
  say();
  say(
    `The control plane is up${state.realNode ? ', with a real node' : ''}. In your shell (the crossplane CLI is .cache/cli/crossplane):`,
  );
  say();
  say(
    `  export PATH=${join(repoRoot, '.cache', 'cli')}:$PATH KUBECONFIG=${state.kubeconfig} KUBECACHEDIR=${kubecache}`,
  );
  say();
  say('Then try, in namespace team-a (made for an application team):');
  say();
  say('  kubectl apply -n team-a -f examples/widget/seed.yaml');
  say('  kubectl get widgets -n team-a -w');
  say('  kubectl get composite -A');
  say('  crossplane beta trace widget my-widget -n team-a');
  if (state.realNode) {
    const at = (f: string) => relative(repoRoot, join(state.dir, f));
    say();
    say(
      `Pods run for real on node ${state.realNode.nodeIp}. A Database backed up to its object store (${at('object-store.json')}):`,
    );
    say();
    say(`  kubectl apply -n team-a -f ${at('object-store-secret.yaml')}`);
    say(`  kubectl apply -f ${at('examples/orders.yaml')}`);
    say('  kubectl get databases -n team-a -w');
  } else if (state.objectStore) {
    say();
    say(
      `Backups can go to the object store at ${state.objectStore.endpoint} (moto's S3 server, bucket ${state.objectStore.bucket}):`,
    );
    say(
      `its keys are the Secret in ${relative(repoRoot, state.objectStore.secretFile)}, its endpoint in ${relative(repoRoot, state.objectStore.endpointFile)}.`,
    );
    say(
      "The installed Database Composition names it as the platform's default store (its Secret is in team-a): a two-line Database backs up there.",
    );
    say();
    say('  kubectl apply -n team-a -f examples/database/two-line.yaml');
    say('  kubectl get database -n team-a -o jsonpath={.status.backup.objectStore}');
  }
  say();
  say(`Logs: ${relative(repoRoot, join(state.dir, 'logs'))}/. Stop it with: npm run cluster:down`);
}

async function up(claims: boolean, realNodes: boolean): Promise<void> {
  const state = recorded();
  if (state?.processes.every(runs)) {
    say(`already up (${relative(repoRoot, stateFile)})`);
    tryIt(state);
    return;
  }
  if (state) {
    say('a previous control plane is partly gone: stopping what is left of it');
    await down();
  }
  rmSync(dir, { recursive: true, force: true });
  say(
    `bringing up the local control plane${claims ? ' with the claims Configuration and provider-kubernetes' : ''}${realNodes ? ' on a real node' : ''} in ${relative(repoRoot, dir)}`,
  );
  // An object store for backups when moto is installed (scripts/install-moto.sh); without it, none (a real node
  // always has one, and needs moto).
  const objectStore = motoServerPath() !== undefined;
  if (!objectStore && !realNodes)
    say('  (no object store for backups: bash scripts/install-moto.sh, then npm run cluster again)');
  const cp = await startControlPlane({
    dir,
    detached: true,
    claims,
    realNodes,
    objectStore,
    // The installed Database Composition names that store as the platform's default: a two-line Database backs up.
    platformStore: objectStore,
    // Crossplane's webhooks, as its Helm chart runs them: Usages order deletions.
    webhooks: true,
    say: (l) => say(`  ${l}`),
    keepOnFailure: process.env['CLUSTER_KEEP_ON_FAILURE'] === '1',
  });
  say(`up in ${((cp.timings['total'] ?? 0) / 1000).toFixed(1)} s`);
  tryIt(recorded()!);
}

async function down(): Promise<void> {
  const stopped = await stopRecorded(dir);
  if (stopped.length === 0) say('nothing to stop (no .cache/cluster/state.json)');
  for (const s of stopped) say(`  ${s.name} (pid ${s.pid}): ${s.outcome}`);
}

const [command = 'up', ...rest] = process.argv.slice(2);
try {
  const unknown = rest.filter((a) => !['--claims', '--real-nodes'].includes(a));
  if (unknown.length) throw new Error(`unknown option ${unknown.join(' ')}: up [--claims] [--real-nodes] or down`);
  if (command === 'up') await up(rest.includes('--claims'), rest.includes('--real-nodes'));
  else if (command === 'down') await down();
  else throw new Error(`unknown command ${command}: up [--claims] [--real-nodes] or down`);
} catch (e) {
  process.stderr.write(`cluster: ${(e as Error).message}\n`);
  process.exit(1);
}
