// Nothing is lost. Crossplane deletes every observed composed resource that
// the final desired state leaves out, so a resource that holds data, once it
// exists, must stay desired on every call. One check, for every blueprint.
import type { Plan } from './blueprints/blueprint.js';
import { FatalError } from './errors.js';
import { describe, groupOf, kindOf, record, type Obj } from './kube.js';

/** group/kind of everything that holds data someone would miss. */
const DATA_HOLDERS = new Set([
  'apps/StatefulSet',
  '/PersistentVolumeClaim',
  '/Secret',
  'postgresql.cnpg.io/Cluster',
  'rds.aws.upbound.io/Instance',
  'rds.aws.m.upbound.io/Instance',
  's3.aws.upbound.io/Bucket',
  's3.aws.m.upbound.io/Bucket',
]);

/** Does this observed object hold data? provider-kubernetes Objects are judged by what they wrap. */
export function holdsData(obj: Obj): boolean {
  const group = groupOf(obj);
  if (kindOf(obj) === 'Object' && (group === 'kubernetes.crossplane.io' || group === 'kubernetes.m.crossplane.io')) {
    const wrapped = record(obj, 'spec', 'forProvider', 'manifest');
    return wrapped !== undefined && holdsData(wrapped);
  }
  return DATA_HOLDERS.has(`${group}/${kindOf(obj)}`);
}

/** Throws (so the call answers Fatal) when the plan would drop an observed data holder. */
export function guardNothingLost(plan: Plan, observed: ReadonlyMap<string, Obj>): void {
  const desired = new Set(plan.resources.map((r) => r.key));
  const lost = [...observed].filter(([key, obj]) => !desired.has(key) && holdsData(obj)).map(([key, obj]) => describe(obj, key));
  if (lost.length > 0) {
    const what = lost.length === 1 ? `${lost[0]}, which holds data` : `${lost.join(', ')}, which hold data`;
    throw new FatalError(`refusing this change: it would delete ${what}. Nothing was changed; undo the change to the spec, or move the data out first`, 'WouldLoseData');
  }
}
