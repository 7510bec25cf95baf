// KUBELET STAND-IN for the fake (kwok) nodes of the local control plane. kwok
// runs no containers: a Job's pod on a fake node is Running forever. This ends
// it the way a kubelet reports containers that exited: each container
// terminated (exit 0, or an OOM kill of the first), the pod Succeeded or
// Failed, and for a backup the upload container's termination message (the
// key it wrote and the size), which is what the function reads. Nothing is
// dumped, uploaded or restored: on kwok only the reports exist. On real nodes
// (a kubelet and containers) the Job ends by itself and this is not needed.
//
//   npm run kwok -- finish NAMESPACE JOB [--oom] [--size BYTES]
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { type Json, KubeClient } from './apiserver.js';

export interface Finish {
  outcome?: 'succeeded' | 'oom';
  /** For a backup's upload: the size it reports (the key is the Job's own KEY). */
  sizeBytes?: number;
  timeoutMs?: number;
  /** Termination messages by container (a drill's count), as the container wrote them. */
  messages?: Record<string, string>;
  /** A main container that exits with this code (the pod Failed), by name. */
  exitCodes?: Record<string, number>;
}

/** The env value `name` of a container of the pod. */
function envOf(container: Json | undefined, name: string): string | undefined {
  const e = (container?.['env'] as Json[] | undefined)?.find((v) => v['name'] === name);
  return typeof e?.['value'] === 'string' ? e['value'] : undefined;
}

/** Ends the running pod of Job `job` as a kubelet would report it; resolves with the pod's name. */
export async function finishJobPod(
  client: KubeClient,
  namespace: string,
  job: string,
  o: Finish = {},
): Promise<string> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  let pod: Json | undefined;
  for (;;) {
    const pods = await client.listObjs('v1', 'Pod', namespace, `batch.kubernetes.io/job-name=${job}`);
    pod = pods.find((p) => p['status']?.['phase'] === 'Running');
    if (pod) break;
    if (Date.now() > deadline) throw new Error(`no running pod of Job ${job} in namespace ${namespace}`);
    await sleep(500);
  }
  const now = new Date().toISOString();
  const spec = pod['spec'] as Json;
  const inits = (spec['initContainers'] ?? []) as Json[];
  const mains = (spec['containers'] ?? []) as Json[];
  const terminated = (exitCode: number, reason: string, message?: string) => ({
    terminated: { exitCode, reason, startedAt: now, finishedAt: now, ...(message ? { message } : {}) },
  });
  const status = (c: Json, state: Json) => ({
    name: c['name'],
    ready: false,
    restartCount: 0,
    image: c['image'],
    imageID: '',
    state,
  });
  const oom = o.outcome === 'oom';
  // A backup's upload reports where it wrote and how much; other Jobs report nothing.
  const report = (c: Json) => {
    const key = c['name'] === 'upload' ? envOf(c, 'KEY') : undefined;
    return key ? JSON.stringify({ key, sizeBytes: o.sizeBytes ?? 48211 }) : undefined;
  };
  const first = inits[0] ?? mains[0];
  const exited = (c: Json) => o.exitCodes?.[String(c['name'])] ?? 0;
  const failed = oom || mains.some((c) => exited(c) !== 0);
  const body = {
    phase: failed ? 'Failed' : 'Succeeded',
    initContainerStatuses: inits.map((c) =>
      status(c, oom && c === first ? terminated(137, 'OOMKilled') : terminated(0, 'Completed')),
    ),
    containerStatuses: mains.map((c) =>
      oom
        ? status(c, c === first ? terminated(137, 'OOMKilled') : { waiting: { reason: 'PodInitializing' } })
        : status(
            c,
            terminated(
              exited(c),
              exited(c) === 0 ? 'Completed' : 'Error',
              o.messages?.[String(c['name'])] ?? report(c),
            ),
          ),
    ),
    conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: now }],
  };
  await client.mergeStatus(pod, body);
  return String(pod['metadata']['name']);
}

if (process.argv[1]?.endsWith('kwok-kubelet.js')) {
  const [command, namespace, job, ...rest] = process.argv.slice(2);
  if (command !== 'finish' || !namespace || !job) {
    process.stderr.write('usage: npm run kwok -- finish NAMESPACE JOB [--oom] [--size BYTES]\n');
    process.exit(2);
  }
  const sizeAt = rest.indexOf('--size');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  try {
    const pod = await finishJobPod(KubeClient.fromKubeConfig(kc), namespace, job, {
      outcome: rest.includes('--oom') ? 'oom' : 'succeeded',
      ...(sizeAt >= 0 ? { sizeBytes: Number(rest[sizeAt + 1]) } : {}),
    });
    process.stdout.write(
      `kubelet stand-in: pod ${pod} of Job ${job} ${rest.includes('--oom') ? 'killed for memory' : 'ended well'}, as a kubelet reports it (on kwok nothing ran in it)\n`,
    );
  } catch (e) {
    process.stderr.write(`kwok: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
