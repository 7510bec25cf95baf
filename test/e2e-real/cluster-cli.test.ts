// `npm run cluster -- --real-nodes` and `npm run cluster:down` as a person
// runs them (the same command, in a directory of the test's own): up prints
// what to export, a second up finds it up, down stops it all and leaves the
// machine exactly as it found it (links, addresses, mounts, loop devices,
// cgroups, the host's iptables rules, the kernel settings the kubelet changes,
// the kubelet's and containerd's fixed paths, no process left), and a second
// down has nothing to stop. Another real node up on the machine meanwhile (a
// developer's, say) changes the machine too: then only what this run made is
// compared, and the test says so.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { realNodeSuiteSkipReason } from '../support/control-plane.js';
import { repoRoot } from '../../dev/infra/paths.js';

const skip = realNodeSuiteSkipReason('e2e-real: npm run cluster -- --real-nodes');
const dir = mkdtempSync(join(tmpdir(), 'fp-cluster-cli-'));
const cli = join(repoRoot, 'dist', 'test', 'support', 'control-plane-cli.js');

function run(args: string[]): string {
  return execFileSync(process.execPath, [cli, ...args], {
    env: { ...process.env, FUNCTION_PLATFORM_CLUSTER_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 600_000,
  }).toString();
}

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString();

/** What a real node could leave behind on the machine, read as text to compare. */
function machine(): Record<string, string> {
  const hierarchies = readdirSync('/sys/fs/cgroup').filter((d) =>
    existsSync(join('/sys/fs/cgroup', d, 'cgroup.procs')),
  );
  const processes = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0] ?? '';
      } catch {
        return '';
      }
    })
    .filter((c) => /(containerd|kubelet|kube-proxy|coredns|moto_server|pause|whoami)$/.test(c));
  return {
    links: sh('ip', ['-o', 'link', 'show'])
      .replace(/^\d+: /gm, '')
      .replace(/ link\/.*$/gm, ''),
    addresses: sh('ip', ['-o', 'addr', 'show']),
    routes: sh('ip', ['route', 'show']),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .sort()
      .join('\n'),
    loops: sh('losetup', ['-a']),
    cgroups: hierarchies
      .flatMap((h) => readdirSync(join('/sys/fs/cgroup', h)).filter((d) => d.startsWith('fp-node') || d === 'kubepods'))
      .join('\n'),
    iptables: sh('iptables-save', [])
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.replace(/\[\d+:\d+\]$/, ''))
      .join('\n'),
    sysctls: ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops', 'net/ipv4/ip_forward']
      .map((k) => `${k}=${readFileSync(`/proc/sys/${k}`, 'utf8').trim()}`)
      .join(' '),
    paths: [
      '/var/lib/kubelet',
      '/var/log/pods',
      '/var/log/containers',
      '/run/containerd',
      '/var/lib/cni',
      '/opt/containerd',
      '/etc/cni',
    ]
      .filter((p) => existsSync(p))
      .join(' '),
    processes: processes.sort().join(' '),
  };
}

describe('npm run cluster -- --real-nodes, then cluster:down', { skip }, () => {
  after(() => {
    // Whatever happened, nothing of it stays up.
    try {
      run(['down']);
    } catch {
      // Reported by the test itself.
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('up prints what to export; a second up finds it up; down leaves the machine as it was; a second down has nothing to stop', (t) => {
    const others = (): string[] => sh('ip', ['-o', 'link', 'show']).match(/fph\d+/g) ?? [];
    const alone = others().length === 0;
    const before = machine();
    const started = Date.now();
    const up = run(['up', '--real-nodes']);
    const upMs = Date.now() - started;
    assert.match(up, /export PATH=\S+\/\.cache\/cli:\$PATH KUBECONFIG=\S+\/apiserver\/kubeconfig KUBECACHEDIR=/);
    assert.match(up, /object-store-secret\.yaml/);
    const kubeconfig = / KUBECONFIG=(\S+)/.exec(up)![1]!;
    const nodes = execFileSync('kubectl', ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'name'], {
      env: { ...process.env, KUBECACHEDIR: join(dir, 'kubectl-cache') },
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
    assert.match(nodes, /node\/real-node-1/);
    const ours = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8'))['realNode'] as { index: number };
    assert.ok(others().includes(`fph${ours.index}`), 'the node link is up while it runs');
    assert.match(run(['up', '--real-nodes']), /already up/);
    const down = run(['down']);
    t.diagnostic(`up in ${upMs} ms; down said:\n${down}`);
    assert.match(down, /killed \d+ processes of the node/);
    const after = machine();
    if (alone && others().length === 0) assert.deepEqual(after, before, 'the machine is as it was');
    else {
      t.diagnostic('another real node ran meanwhile: only what this run made is compared');
      assert.ok(!others().includes(`fph${ours.index}`), 'the node link is gone');
      assert.ok(!after['mounts']!.includes(dir), 'nothing is mounted under the run');
      assert.ok(!after['cgroups']!.split('\n').includes(`fp-node-${ours.index}`), 'the cgroups are gone');
    }
    assert.match(run(['down']), /nothing to stop/);
  });
});
