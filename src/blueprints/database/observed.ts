// What an existing Database is, read from what was composed: its engine,
// placement, the major version it is set to run and its storage. Refusals and
// the version default are decided from these, never from the spec alone.
// Each placement reads its own instance (lifecycle/placements/); this asks
// all of them, since what exists need not be what the spec asks for now.
import type { DatabaseSpec } from '../../generated/schemas.js';
import { str } from '../../kube.js';
import type { Context } from '../blueprint.js';
import { ENGINE_LABEL, majorVersion } from '../lifecycle/database.js';
import { PLACEMENTS } from '../lifecycle/placements/index.js';

/** The engine that exists, read from what was composed. */
export function observedEngine(o: Context): string | undefined {
  for (const obj of o.observed.values()) {
    const label = str(obj, 'metadata', 'labels', ENGINE_LABEL);
    if (label) return label;
  }
  for (const p of PLACEMENTS) {
    const engine = p.composedEngine(o.observed);
    if (engine) return engine;
  }
  return undefined;
}

/** The major version the database runs, read from what was composed (the live instance's). */
export function runningVersion(engine: DatabaseSpec['engine'], o: Context): string | undefined {
  for (const p of PLACEMENTS) {
    const major = majorVersion(engine, p.composedVersion(o.observed));
    if (major) return major;
  }
  return undefined;
}

/** The storage the database has, GiB: the largest any of its instances is set to. */
export function observedStorageGB(o: Context): number | undefined {
  const sizes = PLACEMENTS.flatMap((p) => p.composedStorageGB(o.observed));
  return sizes.length > 0 ? Math.max(...sizes) : undefined;
}
