// Nothing is lost. Crossplane deletes every observed composed resource that
// the final desired state leaves out, so a resource that holds data, once it
// exists, must stay desired on every call. One check, for every blueprint.
import type { Plan } from './blueprints/blueprint.js';
import { FatalError } from './errors.js';
import {
  describe,
  holdsData,
  isProviderKubernetesObject,
  isScratch,
  keepsDataWhenDeleted,
  wrappedManifest,
} from './kinds/index.js';
import { groupOf, kindOf, type Obj } from './kube.js';

/** A DatabaseBackup (a record of one stored backup), the only kind retention may let go. */
function isBackupRecord(obj: Obj | undefined): boolean {
  const inner = obj && isProviderKubernetesObject(obj) ? wrappedManifest(obj) : obj;
  return inner !== undefined && groupOf(inner) === 'example.com' && kindOf(inner) === 'DatabaseBackup';
}

/** Throws (so the call answers Fatal) when the plan would drop an observed data holder. */
export function guardNothingLost(plan: Plan, observed: ReadonlyMap<string, Obj>): void {
  const desired = new Set(plan.resources.map((r) => r.key));
  // The one exception: retention lets an expired backup record go, after its stored object is removed.
  for (const r of plan.retiring ?? []) if (isBackupRecord(observed.get(r.key))) desired.add(r.key);
  // And an instance a restore replaced, once deleting it is seen to keep its data.
  for (const r of plan.releasing ?? []) {
    const obj = observed.get(r.key);
    if (obj && keepsDataWhenDeleted(obj)) desired.add(r.key);
  }
  // And a drill's scratch instance, made to be thrown away, by its label.
  for (const r of plan.discarding ?? []) {
    const obj = observed.get(r.key);
    if (obj && isScratch(obj)) desired.add(r.key);
  }
  const lost = [...observed]
    .filter(([key, obj]) => !desired.has(key) && holdsData(obj))
    .map(([key, obj]) => describe(obj, key));
  if (lost.length > 0) {
    const what = lost.length === 1 ? `${lost[0]}, which holds data` : `${lost.join(', ')}, which hold data`;
    throw new FatalError(
      `refusing this change: it would delete ${what}. Nothing was changed; undo the change to the spec, or move the data out first`,
      'WouldLoseData',
    );
  }
}
