// The core group (v1): Services, claims, Secrets and the kinds ready once they exist.
import { condition, isObj, list, type ObjectMeta, str, strings, type Obj } from '../kube.js';
import { exists } from './conditions.js';
import { accessor, type Family } from './kind.js';
import { failed, progressing, ready, type Verdict } from './verdict.js';

export function hasLoadBalancerAddress(obj: Obj): boolean {
  return list(obj, 'status', 'loadBalancer', 'ingress').some(
    (i) => isObj(i) && (typeof i['ip'] === 'string' || typeof i['hostname'] === 'string'),
  );
}

function service(obj: Obj): Verdict {
  const type = str(obj, 'spec', 'type') ?? 'ClusterIP';
  if (type === 'LoadBalancer')
    return hasLoadBalancerAddress(obj)
      ? ready('load balancer has an address')
      : progressing('waiting for a load-balancer address');
  if (type === 'ExternalName') return ready();
  return str(obj, 'spec', 'clusterIP') !== undefined ? ready() : progressing('waiting for a cluster IP');
}

function pvc(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase') ?? 'Pending';
  return phase === 'Bound' ? ready('bound') : progressing(`volume ${phase}`);
}

/** A pod of ours (not a workload's): running with every container ready, or why not. */
function pod(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase') ?? 'Pending';
  if (phase === 'Succeeded' || phase === 'Failed') return failed(`pod ${phase}`);
  const waiting = list(obj, 'status', 'containerStatuses')
    .map((c) => (isObj(c) ? str(c, 'state', 'waiting', 'reason') : undefined))
    .find(Boolean);
  const unscheduled = condition(obj, 'PodScheduled');
  if (phase === 'Pending' && unscheduled?.status === 'False')
    return progressing(`pod Pending: ${unscheduled.reason ?? 'not scheduled'}`);
  if (phase !== 'Running') return progressing(`pod ${phase}${waiting ? ` (${waiting})` : ''}`);
  return condition(obj, 'Ready')?.status === 'True'
    ? ready('running')
    : progressing(`pod Running, not ready${waiting ? ` (${waiting})` : ''}`);
}

export const CORE: Family = [
  { group: '', kind: 'Service', judge: service },
  { group: '', kind: 'Pod', judge: pod },
  { group: '', kind: 'PersistentVolumeClaim', judge: pvc, holdsData: true },
  { group: '', kind: 'Secret', judge: exists, holdsData: true },
  { group: '', kind: 'ConfigMap', judge: exists },
  { group: '', kind: 'ServiceAccount', judge: exists },
];

/**
 * An observed PersistentVolumeClaim: its name and uid, its class, the storage
 * asked for and what the volume has, and where a resize stands (the
 * resizer's allocatedResourceStatuses, the Resizing and
 * FileSystemResizePending conditions).
 */
export const claimOf = accessor((obj) => ({
  ...strings(obj, ['metadata'], ['name', 'uid']),
  storageClassName: str(obj, 'spec', 'storageClassName'),
  requested: str(obj, 'spec', 'resources', 'requests', 'storage'),
  capacity: str(obj, 'status', 'capacity', 'storage'),
  resizeStatus: str(obj, 'status', 'allocatedResourceStatuses', 'storage'),
  resizing: condition(obj, 'Resizing'),
  fileSystemResizePending: condition(obj, 'FileSystemResizePending'),
}));

/** The value a Service's selector gives a label, if it selects by it. */
export function selectorOf(service: Obj | undefined, label: string): string | undefined {
  return str(service, 'spec', 'selector', label);
}

/** A Secret as the function composes it: its values as data (base64), as the API server stores them. */
export type SecretManifest = {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type: string;
  data: Record<string, unknown>;
};
