// cert-manager.io/v1 Certificates: judged by their Ready condition (a valid,
// unexpired certificate is in the Secret), a failed issuance said as stuck.
import { condition, num, type Obj } from '../kube.js';
import { byReadyCondition } from './conditions.js';
import type { Family } from './kind.js';
import { progressing, stuck, type Verdict } from './verdict.js';

function certificate(obj: Obj): Verdict {
  // cert-manager retries a failed issuance with a growing back-off: it has stopped moving, and says why.
  const issuing = condition(obj, 'Issuing');
  const attempts = num(obj, 'status', 'failedIssuanceAttempts') ?? 0;
  const whenFalse = (detail: string): Verdict =>
    issuing?.status === 'False' && issuing.reason === 'Failed'
      ? stuck(
          `issuance failed${attempts > 0 ? ` ${attempts} ${attempts === 1 ? 'time' : 'times'}` : ''}${issuing.message ? ` (${issuing.message})` : ''}`,
        )
      : progressing(detail);
  return byReadyCondition(obj, whenFalse) ?? progressing('waiting for cert-manager to issue it');
}

export const CERT_MANAGER: Family = [{ group: 'cert-manager.io', kind: 'Certificate', judge: certificate }];
