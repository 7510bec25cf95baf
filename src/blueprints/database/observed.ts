// What an existing Database is, read from what was composed: its engine,
// placement, running major version and storage. Refusals and the version
// default are decided from these, never from the spec alone.
import type { DatabaseSpec } from '../../generated/schemas.js';
import { list, num, str } from '../../kube.js';
import type { Context } from '../blueprint.js';
import { AWS_KEYS } from './aws.js';
import { CLUSTER_KEYS, observedBackupVolumeGB, observedCnpgGB, observedStatefulSetGB } from './cluster.js';
import { ENGINE_LABEL, majorVersion } from './common.js';
import { hasInstance, INSTANCE_KEYS, liveInstance } from './instances.js';

/** The engine that exists, read from what was composed. */
export function observedEngine(o: Context): string | undefined {
  for (const obj of o.observed.values()) {
    const label = str(obj, 'metadata', 'labels', ENGINE_LABEL);
    if (label) return label;
  }
  return str(liveInstance(o.observed, INSTANCE_KEYS.rds), 'spec', 'forProvider', 'engine');
}

export function observedPlacement(o: Context): 'cluster' | 'aws' | undefined {
  if (hasInstance(o.observed, INSTANCE_KEYS.rds) || o.observed.has(AWS_KEYS.bucket)) return 'aws';
  if (
    hasInstance(o.observed, INSTANCE_KEYS.statefulset) ||
    hasInstance(o.observed, INSTANCE_KEYS.cnpg) ||
    o.observed.has(CLUSTER_KEYS.credentials)
  )
    return 'cluster';
  return undefined;
}

/** The tag of an image reference: "postgres:17" → "17". */
export function tagOf(image: string | undefined): string | undefined {
  return image?.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : undefined;
}

/** The major version the database runs, read from what was composed. */
export function runningVersion(engine: DatabaseSpec['engine'], o: Context): string | undefined {
  // The live instance's: a restored one runs the version of the one it replaced.
  const sts = liveInstance(o.observed, INSTANCE_KEYS.statefulset);
  const container = list(sts, 'spec', 'template', 'spec', 'containers').find((c) => str(c, 'name') === 'db');
  const candidates = [
    tagOf(str(container, 'image')),
    tagOf(str(liveInstance(o.observed, INSTANCE_KEYS.cnpg), 'spec', 'imageName')),
    str(liveInstance(o.observed, INSTANCE_KEYS.rds), 'spec', 'forProvider', 'engineVersion'),
  ];
  for (const c of candidates) {
    const major = majorVersion(engine, c);
    if (major) return major;
  }
  return undefined;
}

export function observedStorageGB(o: Context): number | undefined {
  const rds = liveInstance(o.observed, INSTANCE_KEYS.rds);
  // With storage autoscaling RDS grows the instance past what was asked: only what was asked is the floor.
  const autoscaled = num(rds, 'spec', 'forProvider', 'maxAllocatedStorage') !== undefined;
  const sizes = [
    observedStatefulSetGB(o),
    observedCnpgGB(o),
    observedBackupVolumeGB(o),
    num(rds, 'spec', 'forProvider', 'allocatedStorage'),
    autoscaled ? undefined : num(rds, 'status', 'atProvider', 'allocatedStorage'),
  ].filter((n): n is number => n !== undefined);
  return sizes.length > 0 ? Math.max(...sizes) : undefined;
}
