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
import { SpecError } from '../../../errors.js';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { claimOf } from '../../../kinds/core.js';
import type { KubernetesObject } from '../../../kinds/provider-kubernetes.js';
import { type Obj, record } from '../../../kube.js';
import { dnsLabel } from '../../../names.js';
import { wholeGigabytes } from '../../../quantity.js';
import type { Desired } from '../../blueprint.js';
import { type DatabaseInput, meta, type ResolvedSpec } from '../database.js';
import { resizedBefore } from './in-cluster.js';
import type { GrowthPlan } from './placement.js';
import { type AutoGrowth, AUTO_GROWTH_ANNOTATION, dueGrowth, takeDue, recordedGrowth } from './auto-growth.js';
import { measuredUsage, USAGE_PODS, usageRequirement } from './volume-usage.js';

/** Required resources: the data volume's claim and its StorageClass; the composed resize Object's key. */
export const DATA_CLAIM = 'data-claim';
export const STORAGE_CLASS = 'storage-class';
export const VOLUME_RESIZE = 'volume-resize';
/** On the StatefulSet's pod template: set to restart the pod once, to finish a file-system resize. */
export const RESTART_ANNOTATION = 'function-platform.dev/restarted-for-size';
/** How long a file-system resize may stay pending before a restart is what finishes it. */
const RESTART_AFTER_MS = 2 * 60_000;

/**
 * The data volume's growth, and the claim as observed (its capacity is
 * status.storage.capacityGB); with spec.maxStorageGB, the use last measured
 * and the growth it asked (this call's, else the last one recorded).
 */
export type VolumeGrowth = GrowthPlan & { claim?: Obj };

/** The growth of the live StatefulSet's data volume, from the claim and its StorageClass as observed. */
export function planGrowth(input: DatabaseInput, spec: ResolvedSpec, claimName: string): VolumeGrowth {
  const ns = input.owner.namespace;
  const plan: VolumeGrowth = {
    requirements: {
      [DATA_CLAIM]: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', matchName: claimName, namespace: ns },
    },
    warnings: [],
  };
  // With a ceiling, the volume's use is read too (the measuring CronJob's pods), to grow it by itself.
  const maxGB = spec.maxStorageGB;
  if (maxGB !== undefined) plan.requirements[USAGE_PODS] = usageRequirement(input, claimName);
  const claim = input.required.get(DATA_CLAIM)?.[0];
  const resize = input.observed.get(VOLUME_RESIZE);
  // What the resize Object asks now (its manifest as composed: the claim shows it only once the provider applied
  // it), else what the claim carries (the Object writes it there, so it outlives the Database under Retain).
  const asking = record(input.composed.get(VOLUME_RESIZE), 'spec', 'forProvider', 'manifest');
  const recorded = recordedGrowth(asking) ?? recordedGrowth(claim);
  if (recorded) plan.lastAutoGrowth = recorded;
  // What the resize Object asked for last, as observed (it wraps the claim).
  const asked = wholeGigabytes(claimOf(resize)?.requested);
  // Not read yet (the first call of a reconcile) or gone: a resize Object composed before stays as it was.
  const observed = claimOf(claim);
  if (!claim || observed?.name !== claimName) {
    if (resize) plan.resource = resizeObject(input, spec, claimName, asked ?? spec.storageGB, recorded);
    return plan;
  }
  plan.claim = claim;
  const requested = wholeGigabytes(observed?.requested);
  const capacity = wholeGigabytes(observed?.capacity);
  // A size the volume grew to by itself is the floor from then on; under a ceiling, so is any size up to it
  // (a Database made again on the volume a grown one kept).
  const grownFloor = requested !== undefined && requested <= Math.max(maxGB ?? 0, recorded?.toGB ?? 0) ? requested : 0;
  // A growth asked stands, though the claim may not show it yet.
  let want = Math.max(spec.storageGB, grownFloor, recorded?.toGB ?? 0);
  if (requested !== undefined && want < requested)
    throw new SpecError([
      `spec.storageGB is ${want} but volume ${claimName} has ${requested}Gi; spec.storageGB may grow but never shrink`,
    ]);
  if (maxGB !== undefined && requested !== undefined) {
    const usage = measuredUsage(input);
    if (usage) plan.usage = usage;
    const due = dueGrowth(spec, input.now, {
      volume: `volume ${claimName}`,
      requestedGB: requested,
      ...(capacity !== undefined ? { capacityGB: capacity } : {}),
      settled: capacity !== undefined && capacity >= requested && want === requested,
      ...(usage ? { usage } : {}),
      ...(recorded ? { recorded } : {}),
    });
    want = takeDue(plan, due) ?? want;
  }
  plan.requestedGB = want;
  const composed = input.observed.has(VOLUME_RESIZE);
  const className = observed?.storageClassName;
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
      const message =
        want > spec.storageGB
          ? `${why}: volume ${claimName} stays at ${requested}Gi, though it is past spec.storage.growAtPercent and would grow by itself to ${want}Gi; nothing was changed (move the data to a Database on a class that can grow, or free space)`
          : `${why}: volume ${claimName} stays at ${requested}Gi, spec.storageGB asks ${want}Gi; nothing was changed (move the data to a Database on a class that can grow, or set spec.storageGB back to ${requested})`;
      plan.condition = { ok: false, reason: 'ExpansionNotAllowed', message };
      plan.warnings.push({ reason: 'ExpansionNotAllowed', message });
      // Nothing grows: no growth to tell of, and the size asked stays what the volume has.
      delete plan.notices;
      if (recorded) plan.lastAutoGrowth = recorded;
      else delete plan.lastAutoGrowth;
      plan.requestedGB = requested;
      return plan;
    }
  }
  // Once composed, the resize Object stays (it manages nothing but the request, and deleting it orphans the claim).
  if (grow || composed)
    plan.resource = resizeObject(input, spec, claimName, Math.max(want, requested ?? want), plan.lastAutoGrowth);
  // Not bound yet: there is no size to report.
  if (capacity === undefined) return plan;
  if (capacity >= want) {
    // Said only of a volume that was grown (a resize Object composed, or said before): a new one was not resized.
    if (grow || composed || resizedBefore(input))
      plan.condition = { ok: true, reason: 'Resized', message: `volume ${claimName} has ${capacity}Gi` };
    return plan;
  }
  const fsPending = observed?.fileSystemResizePending?.status === 'True';
  const state =
    observed?.resizeStatus ??
    (fsPending ? 'FileSystemResizePending' : observed?.resizing?.status === 'True' ? 'Resizing' : 'requested');
  let updating = `volume ${claimName}: ${capacity ?? requested}Gi → ${want}Gi (${state})`;
  // Drivers that grow file systems online set FileSystemResizePending only for a moment: a restart is for one
  // that stays pending.
  const since = Date.parse(observed?.fileSystemResizePending?.lastTransitionTime ?? '');
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

/** The Object that grows the claim: its identity and storage request, observed and updated, never created or deleted. */
function resizeObject(
  input: DatabaseInput,
  spec: ResolvedSpec,
  claimName: string,
  sizeGB: number,
  grown: AutoGrowth | undefined,
): Desired {
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
            metadata: {
              name: claimName,
              namespace: input.owner.namespace,
              ...(grown ? { annotations: { [AUTO_GROWTH_ANNOTATION]: JSON.stringify(grown) } } : {}),
            },
            spec: { resources: { requests: { storage: `${sizeGB}Gi` } } },
          },
        },
      },
    } satisfies KubernetesObject<V1PersistentVolumeClaim>,
  };
}
