// Faults for the chaos harness (test/chaos), each done to the real thing on a
// control plane with a real node: a component's process killed with SIGKILL
// and started again as a supervisor would (the function, Crossplane core,
// kube-apiserver with etcd kept, kube-controller-manager, the kubelet,
// containerd), one container of a pod killed (a database's server, a backup
// or restore Job's step), the object store made unreachable from the node for
// a while (a DROP rule in the node's own network namespace, never the host's),
// the function stopped for longer than Crossplane waits for it, and Crossplane
// killed between the function's answer and its status write.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Json } from './apiserver.js';
import type { ControlPlane } from './control-plane.js';
import { inNode } from './real-node.js';

/** How long Crossplane waits for a composite's reconcile, function calls included (composite/reconciler.go). */
export const CROSSPLANE_TIMEOUT_MS = 120_000;

/** Kills a component with SIGKILL, waits `downMs`, and starts it again; resolves once it serves. */
export async function killAndRestart(cp: ControlPlane, component: string, downMs: number): Promise<void> {
  await cp.kill(component, 'SIGKILL');
  await sleep(downMs);
  await cp.restart(component);
}

/** The containerd ID of a pod's container (init or not), from the pod's status, if it has started. */
export function containerId(pod: Json | undefined, container: string): string | undefined {
  const statuses: Json[] = [
    ...(pod?.['status']?.['initContainerStatuses'] ?? []),
    ...(pod?.['status']?.['containerStatuses'] ?? []),
  ];
  const id = statuses.find((s) => s['name'] === container)?.['containerID'];
  return typeof id === 'string' ? id.replace(/^[a-z]+:\/\//, '') : undefined;
}

/** The container a pod runs now: the init container running, else the first running container. */
export function runningContainer(pod: Json | undefined): string | undefined {
  for (const field of ['initContainerStatuses', 'containerStatuses'])
    for (const s of (pod?.['status']?.[field] ?? []) as Json[]) if (s['state']?.['running']) return String(s['name']);
  return undefined;
}

/** The host PID of a container's first process (PID 1 in its namespace), found by its cgroup. */
export function containerInit(id: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(id)) continue;
      const nspid = /^NSpid:\s+(.*)$/m
        .exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
        ?.trim()
        .split(/\s+/);
      if (nspid && nspid[nspid.length - 1] === '1') return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

/** The command lines of a container's processes (to see what step it is at, e.g. pg_dump running). */
export function containerCommands(id: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(id))
        out.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim());
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/**
 * Kills one container of a pod with SIGKILL (its first process, and so the
 * whole container): what an OOM kill, a crash or a node's kill looks like to
 * the kubelet (exit code 137). Returns the PID killed, or undefined when the
 * container runs no process (yet, or any more).
 */
export function killContainer(pod: Json, container: string): number | undefined {
  const id = containerId(pod, container);
  const pid = id ? containerInit(id) : undefined;
  if (!pid) return undefined;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return undefined;
  }
  return pid;
}

/**
 * Makes the object store unreachable from the node (its pods and itself) for
 * `ms`: packets to its address and port are dropped in the node's network
 * namespace (FORWARD for pods, OUTPUT for the node), so connections hang as
 * over a broken network, then the rules go. The host's own rules are never
 * touched.
 */
export async function objectStoreUnreachable(cp: ControlPlane, ms: number): Promise<void> {
  const node = cp.realNode;
  const store = cp.objectStore;
  if (!node || !store) throw new Error('the object store is unreachable only from a real node');
  const url = new URL(store.endpoint);
  const rule = [
    '-d',
    url.hostname,
    '-p',
    'tcp',
    '--dport',
    url.port,
    '-j',
    'DROP',
    '-m',
    'comment',
    '--comment',
    'fp-chaos',
  ];
  for (const chain of ['FORWARD', 'OUTPUT']) inNode(node, 'iptables', ['-w', '-I', chain, '1', ...rule]);
  try {
    await sleep(ms);
  } finally {
    for (const chain of ['FORWARD', 'OUTPUT']) inNode(node, 'iptables', ['-w', '-D', chain, ...rule]);
  }
}

/**
 * The function answers late: its process is stopped (SIGSTOP) for `ms`, so a
 * call in flight, and every call made meanwhile, is answered only after
 * Crossplane has given up on it; then it goes on (SIGCONT).
 */
export async function functionStopped(cp: ControlPlane, ms: number): Promise<void> {
  await cp.kill('function', 'SIGSTOP');
  try {
    await sleep(ms);
  } finally {
    await cp.kill('function', 'SIGCONT');
  }
}

/** Lines of the function's log that say it composed an answer for `xr` (it runs with --debug). */
function answersFor(log: string, xr: string): number {
  let n = 0;
  for (const line of log.split('\n')) if (line.includes('"msg":"composed"') && line.includes(`/${xr}"`)) n++;
  return n;
}

/**
 * A status write lost: `delayMs` after the function has answered a call for
 * the composite `xr` (its name, as the function logs it), while Crossplane
 * applies the answer and before it writes the composite's status (a few
 * hundred milliseconds here), Crossplane core is killed, and so is the
 * function; both start again. Waits up to `timeoutMs` for an answer. Returns
 * how long after the answer Crossplane died, or undefined if no answer came.
 */
export async function statusWriteLost(
  cp: ControlPlane,
  xr: string,
  delayMs: number,
  timeoutMs: number,
): Promise<{ afterMs: number } | undefined> {
  const file = cp.component('function')!.log;
  const seen = answersFor(readFileSync(file, 'utf8'), xr);
  let size = statSync(file).size;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = statSync(file).size;
    if (now !== size) {
      size = now;
      if (answersFor(readFileSync(file, 'utf8'), xr) > seen) {
        const at = Date.now();
        await sleep(delayMs);
        await cp.kill('crossplane', 'SIGKILL');
        const afterMs = Date.now() - at;
        await cp.killFunction('SIGKILL');
        await cp.startFunction();
        await cp.restart('crossplane');
        return { afterMs };
      }
    }
    await sleep(5);
  }
  return undefined;
}
