// Readings several kinds share.
import { condition, num, str, type Obj } from '../kube.js';
import { failed, progressing, ready, type Verdict } from './verdict.js';

/** The controller has seen the newest spec: its status speaks of it. */
export function generationObserved(obj: Obj): boolean {
  const generation = num(obj, 'metadata', 'generation');
  const observed = num(obj, 'status', 'observedGeneration');
  if (generation === undefined) return true;
  return observed !== undefined && observed >= generation;
}

/** By the Ready condition, as managed resources and most operators report; undefined without one. */
export function byReadyCondition(obj: Obj, whenFalse: (detail: string) => Verdict = progressing): Verdict | undefined {
  const c = condition(obj, 'Ready');
  if (!c) return undefined;
  if (c.status === 'True') return ready();
  const why = [c.reason, c.message].filter(Boolean).join(': ');
  return whenFalse(why ? `not ready (${why})` : 'not ready');
}

/** Ready as soon as it exists. */
export const exists = (): Verdict => ready();

export { failed };

/** A managed resource whose management policies leave out Delete orphans what it manages when it is deleted. */
export function orphansOnDelete(obj: Obj): boolean {
  const policies = (obj['spec'] as Obj | undefined)?.['managementPolicies'];
  if (str(obj, 'spec', 'deletionPolicy') === 'Orphan') return true;
  return Array.isArray(policies) && policies.length > 0 && !policies.includes('*') && !policies.includes('Delete');
}
