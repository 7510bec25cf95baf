// A drill's count as the Job controller and the kubelet leave it: STAND-INS
// for both in the drill suites, written as observed state and required
// resources.
import type { Obj } from '../../src/kube.js';
import { NAMESPACE } from './database.js';

/** The pod of count Job `job` of DatabaseBackup `backup`: its verify container ended as `verify` says. */
export function countPod(job: string, backup: string, verify: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${job}-x1`,
      namespace: NAMESPACE,
      labels: {
        'batch.kubernetes.io/job-name': job,
        'app.kubernetes.io/name': 'database-backup',
        'app.kubernetes.io/instance': backup,
      },
    },
    status: { phase: 'Succeeded', containerStatuses: [{ name: 'verify', state: { terminated: verify } }] },
  };
}

/** A count Job's status: started at `start`, and `done` at `end` if it ended. */
export const countJobStatus = (start: string, end: string, done?: 'Complete' | 'Failed') => ({
  startTime: start,
  ...(done === 'Complete' ? { completionTime: end } : {}),
  ...(done ? { conditions: [{ type: done, status: 'True', lastTransitionTime: end }] } : {}),
});
