// batch/v1: Jobs by their conditions, CronJobs by whether they are scheduled.
import { condition, field, type KubeCondition, num, str, type Obj } from '../kube.js';
import type { Family } from './kind.js';
import { failed, progressing, ready, type Verdict } from './verdict.js';

function job(obj: Obj): Verdict {
  if (condition(obj, 'Complete')?.status === 'True') return ready('completed');
  const f = condition(obj, 'Failed');
  if (f?.status === 'True') return failed(`failed: ${f.message ?? f.reason ?? 'unknown reason'}`);
  return progressing(`running (${num(obj, 'status', 'succeeded') ?? 0} succeeded)`);
}

/** A CronJob is doing its job once it exists and is not suspended. */
function cronJob(obj: Obj): Verdict {
  return field(obj, 'spec', 'suspend') === true ? progressing('suspended') : ready('scheduled');
}

export const BATCH: Family = [
  { group: 'batch', kind: 'Job', judge: job },
  { group: 'batch', kind: 'CronJob', judge: cronJob },
];

/** What the function reads of an observed Job: how it ended, if it has, and when. */
export interface JobView {
  complete?: KubeCondition;
  failed?: KubeCondition;
  startTime?: string;
  completionTime?: string;
}

/** An observed Job, read defensively; undefined when there is none. Only a True condition counts as ended. */
export function jobOf(obj: Obj | undefined): JobView | undefined {
  if (!obj) return undefined;
  const complete = condition(obj, 'Complete');
  const failed = condition(obj, 'Failed');
  return {
    ...(complete?.status === 'True' ? { complete } : {}),
    ...(failed?.status === 'True' ? { failed } : {}),
    startTime: str(obj, 'status', 'startTime'),
    completionTime: str(obj, 'status', 'completionTime'),
  };
}
