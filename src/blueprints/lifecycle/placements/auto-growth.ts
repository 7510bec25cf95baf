// Storage that grows itself (spec.maxStorageGB) in the cluster, for every
// placement whose volumes are measured there (volume-usage.ts): when a step is
// due, how large it is, and how it is recorded on what was grown (a claim, a
// CloudNativePG Cluster), so that a grown size is the floor from then on and
// nothing flips back. Each placement asks for the size its own way.
import { str } from '../../../kube.js';
import type { ResolvedSpec } from '../database.js';
import type { Usage } from './volume-usage.js';

/** On what was grown: the last time it grew by itself (JSON of AutoGrowth). */
export const AUTO_GROWTH_ANNOTATION = 'function-platform.dev/last-auto-growth';

/** A growth the Database asked by itself: when, from and to what size, at what use. */
export interface AutoGrowth {
  at: string;
  fromGB: number;
  toGB: number;
  usedPercent: number;
}

/** The growth recorded on an object (a claim, a Cluster, or a manifest of one), if it ever grew by itself. */
export function recordedGrowth(obj: Parameters<typeof str>[0]): AutoGrowth | undefined {
  const text = str(obj, 'metadata', 'annotations', AUTO_GROWTH_ANNOTATION);
  if (!text) return undefined;
  try {
    const g = JSON.parse(text) as Partial<AutoGrowth>;
    return typeof g.toGB === 'number' && typeof g.fromGB === 'number' && typeof g.at === 'string'
      ? { at: g.at, fromGB: g.fromGB, toGB: g.toGB, usedPercent: Number(g.usedPercent ?? 0) }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The size one growth step takes the volume to: growByPercent of it, at least 1 GiB, never past the ceiling. */
export function nextSize(sizeGB: number, growByPercent: number, maxGB: number): number {
  return Math.min(maxGB, Math.max(sizeGB + 1, Math.ceil((sizeGB * (100 + growByPercent)) / 100)));
}

/** What a measurement asks: a step up (with its notice), or, at the ceiling, a warning; or nothing. */
export type Due =
  | { grow: AutoGrowth; notice: { reason: 'AutoGrown'; message: string } }
  | { full: { reason: 'StorageNearlyFull'; message: string } }
  | undefined;

/**
 * Whether `volume` grows now. Only a measurement of the file system as it is now counts: none taken before the
 * last growth, nor while a growth is on its way (`settled` false), nor of a file system much smaller than the
 * size asked. A volume may have more than it asked (a provisioner that rounds up): it grows from what it has.
 */
export function dueGrowth(
  spec: ResolvedSpec,
  now: Date,
  o: {
    volume: string;
    requestedGB: number;
    capacityGB?: number;
    settled: boolean;
    usage?: Usage;
    recorded?: AutoGrowth;
  },
): Due {
  const { usage, recorded, requestedGB } = o;
  const maxGB = spec.maxStorageGB;
  const growAt = spec.storage?.growAtPercent ?? 80;
  if (maxGB === undefined || !o.settled || usage === undefined || usage.usedPercent < growAt) return undefined;
  if (usage.sizeGB < requestedGB * 0.9) return undefined;
  if (recorded && Date.parse(usage.at) <= Date.parse(recorded.at)) return undefined;
  const has = Math.max(requestedGB, o.capacityGB ?? requestedGB);
  const used = `${o.volume} is ${usage.usedPercent}% used (${usage.usedGB} of ${usage.sizeGB} GiB`;
  if (has >= maxGB)
    return {
      full: {
        reason: 'StorageNearlyFull',
        message: `${used}) and at spec.maxStorageGB (${maxGB}Gi): it grows no further by itself; raise spec.maxStorageGB, or free space`,
      },
    };
  const toGB = nextSize(has, spec.storage?.growByPercent ?? 25, maxGB);
  return {
    grow: { at: now.toISOString(), fromGB: has, toGB, usedPercent: usage.usedPercent },
    notice: {
      reason: 'AutoGrown',
      message: `${used}, spec.storage.growAtPercent ${growAt}): growing it ${has}Gi → ${toGB}Gi by itself (spec.maxStorageGB ${maxGB})`,
    },
  };
}

/**
 * What a due growth does to a placement's growth plan: its record and notice, or the warning at the ceiling.
 * Returns the size a step asks, if one is due.
 */
export function takeDue(
  plan: {
    lastAutoGrowth?: AutoGrowth;
    notices?: Array<{ reason: string; message: string }>;
    warnings: Array<{ reason: string; message: string }>;
  },
  due: Due,
): number | undefined {
  if (due === undefined) return undefined;
  if ('full' in due) {
    plan.warnings.push(due.full);
    return undefined;
  }
  plan.lastAutoGrowth = due.grow;
  plan.notices = [due.notice];
  return due.grow.toGB;
}

/** status.storage of a volume that may grow by itself: what it asks, has and may reach, its use, its last growth. */
export function grownStorage(
  spec: ResolvedSpec,
  growth: { usage?: Usage; lastAutoGrowth?: AutoGrowth; requestedGB?: number } | undefined,
  capacityGB: number | undefined,
) {
  const { usage, lastAutoGrowth, requestedGB } = growth ?? {};
  return {
    ...(capacityGB !== undefined ? { capacityGB } : {}),
    ...(spec.maxStorageGB !== undefined ? { maxGB: spec.maxStorageGB } : {}),
    ...(requestedGB !== undefined ? { requestedGB } : {}),
    ...(usage ? { usedGB: usage.usedGB, usedPercent: usage.usedPercent, measuredAt: usage.at } : {}),
    ...(lastAutoGrowth ? { lastAutoGrowth: { ...lastAutoGrowth } } : {}),
  };
}
