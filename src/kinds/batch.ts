// batch/v1: Jobs by their conditions, CronJobs by whether they are scheduled.
import { condition, field, num, strings, type Obj } from '../kube.js';
import { accessor, type Family } from './kind.js';
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

/** An observed Job: how it ended, if it has (only a True condition counts), and when it started and completed. */
export const jobOf = accessor((obj) => {
  const complete = condition(obj, 'Complete');
  const failed = condition(obj, 'Failed');
  return {
    ...(complete?.status === 'True' ? { complete } : {}),
    ...(failed?.status === 'True' ? { failed } : {}),
    ...strings(obj, ['status'], ['startTime', 'completionTime']),
  };
});
