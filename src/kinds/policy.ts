// policy/v1 PodDisruptionBudgets and rbac.authorization.k8s.io roles.
import { record, type Obj } from '../kube.js';
import { exists, generationObserved } from './conditions.js';
import type { Family } from './kind.js';
import { progressing, ready, type Verdict } from './verdict.js';

function pdb(obj: Obj): Verdict {
  return record(obj, 'status') && generationObserved(obj)
    ? ready()
    : progressing('waiting for the disruption controller');
}

export const POLICY: Family = [
  { group: 'policy', kind: 'PodDisruptionBudget', judge: pdb },
  { group: 'rbac.authorization.k8s.io', kind: 'Role', judge: exists },
  { group: 'rbac.authorization.k8s.io', kind: 'RoleBinding', judge: exists },
];
