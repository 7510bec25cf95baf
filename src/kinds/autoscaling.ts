// autoscaling/v2: a HorizontalPodAutoscaler is ready once it says it can scale.
import { condition, num, type Obj } from '../kube.js';
import type { Family } from './kind.js';
import { failed, progressing, ready, type Verdict } from './verdict.js';

function hpa(obj: Obj): Verdict {
  const able = condition(obj, 'AbleToScale');
  if (able?.status === 'False') return failed(`cannot scale: ${able.message ?? able.reason ?? ''}`.trim());
  if (!able) return progressing('waiting for the autoscaler to report');
  return ready(`${num(obj, 'status', 'currentReplicas') ?? 0} replicas`);
}

export const AUTOSCALING: Family = [{ group: 'autoscaling', kind: 'HorizontalPodAutoscaler', judge: hpa }];
