// The placements a Database can have, and which one a spec asks for: the one
// place that decides. Adding a placement is a module beside these and one line
// here (CONTRIBUTING.md walks through it).
import type { DatabaseSpec } from '../../../generated/schemas.js';
import type { Obj } from '../../../kube.js';
import { cnpgPlacement } from './cnpg.js';
import type { Placement } from './placement.js';
import { rdsPlacement } from './rds.js';
import { statefulSetPlacement } from './statefulset.js';

type Asked = Pick<DatabaseSpec, 'placement' | 'highAvailability' | 'engine'>;

/** Every placement with the specs it serves, the first that serves a spec taking it. */
const REGISTRY: ReadonlyArray<{ placement: Placement; serves(spec: Asked): boolean }> = [
  { placement: rdsPlacement, serves: (spec) => spec.placement === 'aws' },
  {
    placement: cnpgPlacement,
    serves: (spec) => spec.placement === 'cluster' && spec.highAvailability && spec.engine === 'postgres',
  },
  { placement: statefulSetPlacement, serves: (spec) => spec.placement === 'cluster' },
];

/** Every placement, in the registry's order. */
export const PLACEMENTS: readonly Placement[] = REGISTRY.map((r) => r.placement);

/** The placement a spec asks for. */
export function placementOf(spec: Asked): Placement {
  return REGISTRY.find((r) => r.serves(spec))!.placement;
}

/** The placement observed state holds a Database of, if any. */
export function observedPlacement(observed: ReadonlyMap<string, Obj>): Placement | undefined {
  return PLACEMENTS.find((p) => p.existsIn(observed));
}
