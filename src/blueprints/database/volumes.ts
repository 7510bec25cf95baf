// Disks that grow, for a Database in a StatefulSet. Its claim templates cannot
// change (Kubernetes forbids it), so the data volume's claim is grown itself:
// once the claim has been observed (a required resource), and only when its
// StorageClass allows expansion, the Database composes a provider-kubernetes
// Object with management policies Observe and Update (no Create, no Delete)
// whose manifest is the claim's identity and its storage request, nothing
// else. Composing the claim itself would make Crossplane its controlling
// owner, and deleting the Database would then take the data with it.
// The resize is watched through the claim's status: its capacity, its
// Resizing and FileSystemResizePending conditions and allocatedResourceStatuses.
import { SpecError } from '../../errors.js';
import { condition, num, str, type Obj } from '../../kube.js';
import { dnsLabel } from '../../names.js';
import { wholeGigabytes } from '../../quantity.js';
import type { Desired, Requirement } from '../blueprint.js';
import type { DatabaseInput, ResolvedSpec } from './common.js';
import { meta } from './common.js';

/** Required resources: the data volume's claim and its StorageClass; the composed resize Object's key. */
export const DATA_CLAIM = 'data-claim';
export const STORAGE_CLASS = 'storage-class';
export const VOLUME_RESIZE = 'volume-resize';
/** On the StatefulSet's pod template: set to restart the pod once, to finish a file-system resize. */
export const RESTART_ANNOTATION = 'function-platform.dev/restarted-for-size';
/** How long a file-system resize may stay pending before a restart is what finishes it. */
const RESTART_AFTER_MS = 2 * 60_000;

export interface GrowthPlan {
  requirements: Record<string, Requirement>;
  /** The resize Object, once there is one to compose. */
  resource?: Desired;
  /** The StorageResized condition, once the claim is known. */
  condition?: { ok: boolean; reason: string; message: string };
  /** What the user reads while the volume grows. */
  updating?: string;
  /** The pod template annotation that restarts the pod to finish a file-system resize, when allowed. */
  restart?: string;
  warnings: Array<{ reason: string; message: string }>;
  /** The claim as observed (its capacity is status.storage.capacityGB). */
  claim?: Obj;
  /** The capacity the volumes have, when read from several claims. */
  capacityGB?: number;
}

/** The growth of the live StatefulSet's data volume, from the claim and its StorageClass as observed. */
export function planGrowth(input: DatabaseInput, spec: ResolvedSpec, claimName: string): GrowthPlan {
  const ns = input.owner.namespace;
  const plan: GrowthPlan = {
    requirements: {
      [DATA_CLAIM]: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', matchName: claimName, namespace: ns },
    },
    warnings: [],
  };
  const claim = input.required.get(DATA_CLAIM)?.[0];
  // What the resize Object asked for last, as observed (it wraps the claim).
  const asked = wholeGigabytes(str(input.observed.get(VOLUME_RESIZE), 'spec', 'resources', 'requests', 'storage'));
  // Not read yet (the first call of a reconcile) or gone: a resize Object composed before stays as it was.
  if (!claim || str(claim, 'metadata', 'name') !== claimName) {
    if (input.observed.has(VOLUME_RESIZE))
      plan.resource = resizeObject(input, spec, claimName, asked ?? spec.storageGB);
    return plan;
  }
  plan.claim = claim;
  const requested = wholeGigabytes(str(claim, 'spec', 'resources', 'requests', 'storage'));
  const capacity = wholeGigabytes(str(claim, 'status', 'capacity', 'storage'));
  const want = spec.storageGB;
  if (requested !== undefined && want < requested)
    throw new SpecError([
      `spec.storageGB is ${want} but volume ${claimName} has ${requested}Gi; spec.storageGB may grow but never shrink`,
    ]);
  const composed = input.observed.has(VOLUME_RESIZE);
  const className = str(claim, 'spec', 'storageClassName');
  if (className)
    plan.requirements[STORAGE_CLASS] = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', matchName: className };
  const grow = requested !== undefined && want > requested;
  if (grow && !composed) {
    const answer = input.required.get(STORAGE_CLASS);
    const cls = answer?.[0];
    if (className && answer === undefined) return plan;
    if (cls?.['allowVolumeExpansion'] !== true) {
      const why = !className
        ? `volume ${claimName} has no StorageClass, so it cannot be expanded`
        : !cls
          ? `StorageClass ${className} does not exist, so it cannot expand volumes`
          : `StorageClass ${className} does not allow volume expansion`;
      const message = `${why}: volume ${claimName} stays at ${requested}Gi, spec.storageGB asks ${want}Gi; nothing was changed (move the data to a Database on a class that can grow, or set spec.storageGB back to ${requested})`;
      plan.condition = { ok: false, reason: 'ExpansionNotAllowed', message };
      plan.warnings.push({ reason: 'ExpansionNotAllowed', message });
      return plan;
    }
  }
  // Once composed, the resize Object stays (it manages nothing but the request, and deleting it orphans the claim).
  if (grow || composed) plan.resource = resizeObject(input, spec, claimName, Math.max(want, requested ?? want));
  // Not bound yet: there is no size to report.
  if (capacity === undefined) return plan;
  if (capacity >= want) {
    // Said only of a volume that was grown (a resize Object composed, or said before): a new one was not resized.
    if (grow || composed || resizedBefore(input))
      plan.condition = { ok: true, reason: 'Resized', message: `volume ${claimName} has ${capacity}Gi` };
    return plan;
  }
  const fsPending = condition(claim, 'FileSystemResizePending')?.status === 'True';
  const state =
    str(claim, 'status', 'allocatedResourceStatuses', 'storage') ??
    (fsPending
      ? 'FileSystemResizePending'
      : condition(claim, 'Resizing')?.status === 'True'
        ? 'Resizing'
        : 'requested');
  let updating = `volume ${claimName}: ${capacity ?? requested}Gi → ${want}Gi (${state})`;
  // Drivers that grow file systems online set FileSystemResizePending only for a moment: a restart is for one
  // that stays pending.
  const since = Date.parse(condition(claim, 'FileSystemResizePending')?.lastTransitionTime ?? '');
  const stuck = fsPending && !(input.now.getTime() - since < RESTART_AFTER_MS);
  if (stuck) {
    if (spec.maintenance?.allowRestart) {
      plan.restart = `${want}Gi`;
      updating += `; restarting the pod to finish the file-system resize`;
    } else
      updating += `; the file system grows when the pod restarts: set spec.maintenance.allowRestart to let the function restart it, or restart pod ${claimName.replace(/^data-/, '')} yourself`;
  }
  plan.updating = updating;
  plan.condition = { ok: false, reason: 'Resizing', message: updating };
  return plan;
}

/** Whether the Database already said how a resize went (its StorageResized condition). */
function resizedBefore(input: DatabaseInput): boolean {
  return condition(input.xr, 'StorageResized') !== undefined;
}

/** The Object that grows the claim: its identity and storage request, observed and updated, never created or deleted. */
function resizeObject(input: DatabaseInput, spec: ResolvedSpec, claimName: string, sizeGB: number): Desired {
  return {
    key: VOLUME_RESIZE,
    object: {
      apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
      kind: 'Object',
      metadata: meta(input.owner, spec, dnsLabel(claimName, 'size')),
      spec: {
        managementPolicies: ['Observe', 'Update'],
        forProvider: {
          manifest: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: claimName, namespace: input.owner.namespace },
            spec: { resources: { requests: { storage: `${sizeGB}Gi` } } },
          },
        },
      },
    },
  };
}

/** Required resource: the PersistentVolumeClaims of the live CloudNativePG Cluster, by the label the operator puts on them. */
export const CNPG_CLAIMS = 'cnpg-claims';

/**
 * A CloudNativePG Cluster's volumes as they grow: the operator resizes its
 * claims when spec.storage.size grows; this reads them back (their capacity,
 * and how many have it) for status and the StorageResized condition.
 */
export function cnpgGrowth(input: DatabaseInput, spec: ResolvedSpec, cluster: string): GrowthPlan {
  const plan: GrowthPlan = {
    requirements: {
      [CNPG_CLAIMS]: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        matchLabels: { 'cnpg.io/cluster': cluster },
        namespace: input.owner.namespace,
      },
    },
    warnings: [],
  };
  // Bound claims only: a new standby's claim has no size yet.
  const sizes = (input.required.get(CNPG_CLAIMS) ?? [])
    .map((c) => wholeGigabytes(str(c, 'status', 'capacity', 'storage')))
    .filter((gb): gb is number => gb !== undefined);
  if (sizes.length === 0) return plan;
  const capacity = Math.min(...sizes);
  plan.capacityGB = capacity;
  const want = spec.storageGB;
  if (capacity >= want) {
    // Said only once the volumes grew: since the size last reported, or a resize said before.
    const before = num(input.xr, 'status', 'storage', 'capacityGB');
    if (!resizedBefore(input) && !(before !== undefined && before < capacity)) return plan;
    plan.condition = {
      ok: true,
      reason: 'Resized',
      message: `the ${sizes.length} volumes of Cluster ${cluster} have ${capacity}Gi or more`,
    };
    return plan;
  }
  const grown = sizes.filter((gb) => gb >= want).length;
  plan.updating = `volumes of Cluster ${cluster}: ${capacity}Gi → ${want}Gi (${grown} of ${sizes.length} grown)`;
  plan.condition = { ok: false, reason: 'Resizing', message: plan.updating };
  return plan;
}
