// The core group (v1): Services, claims, Secrets and the kinds ready once they exist.
import { condition, isObj, type KubeCondition, list, type ObjectMeta, str, type Obj } from '../kube.js';
import { exists } from './conditions.js';
import type { Family } from './kind.js';
import { progressing, ready, type Verdict } from './verdict.js';

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

export const CORE: Family = [
  { group: '', kind: 'Service', judge: service },
  { group: '', kind: 'PersistentVolumeClaim', judge: pvc, holdsData: true },
  { group: '', kind: 'Secret', judge: exists, holdsData: true },
  { group: '', kind: 'ConfigMap', judge: exists },
  { group: '', kind: 'ServiceAccount', judge: exists },
];

/** What the function reads of an observed PersistentVolumeClaim. */
export interface ClaimView {
  name?: string;
  uid?: string;
  storageClassName?: string;
  /** The storage asked for, and what the volume has. */
  requested?: string;
  capacity?: string;
  /** Where a resize stands, as the resizer records it (status.allocatedResourceStatuses.storage). */
  resizeStatus?: string;
  resizing?: KubeCondition;
  fileSystemResizePending?: KubeCondition;
}

/** An observed claim, read defensively; undefined when there is none. */
export function claimOf(obj: Obj | undefined): ClaimView | undefined {
  if (!obj) return undefined;
  return {
    name: str(obj, 'metadata', 'name'),
    uid: str(obj, 'metadata', 'uid'),
    storageClassName: str(obj, 'spec', 'storageClassName'),
    requested: str(obj, 'spec', 'resources', 'requests', 'storage'),
    capacity: str(obj, 'status', 'capacity', 'storage'),
    resizeStatus: str(obj, 'status', 'allocatedResourceStatuses', 'storage'),
    resizing: condition(obj, 'Resizing'),
    fileSystemResizePending: condition(obj, 'FileSystemResizePending'),
  };
}

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
