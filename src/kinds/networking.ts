// networking.k8s.io/v1: Ingresses by their address, NetworkPolicies once they exist.
import type { Obj } from '../kube.js';
import { exists } from './conditions.js';
import { hasLoadBalancerAddress } from './core.js';
import type { Family } from './kind.js';
import { progressing, ready, type Verdict } from './verdict.js';

function ingress(obj: Obj): Verdict {
  return hasLoadBalancerAddress(obj)
    ? ready('ingress has an address')
    : progressing('waiting for the ingress controller to assign an address');
}

export const NETWORKING: Family = [
  { group: 'networking.k8s.io', kind: 'Ingress', judge: ingress },
  { group: 'networking.k8s.io', kind: 'NetworkPolicy', judge: exists },
];
