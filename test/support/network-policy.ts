// What a NetworkPolicy admits, as Kubernetes defines it (the semantics a CNI
// that enforces policies implements): a reading of the composed object used
// by the tests, since no CNI here enforces NetworkPolicy. Covers label
// selectors (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist),
// peers by podSelector, namespaceSelector or both, and numeric TCP ports.
import type { Obj } from '../../src/kube.js';

export interface Pod {
  namespace: string;
  labels: Record<string, string>;
}

function selects(selector: Obj | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries((selector['matchLabels'] ?? {}) as Record<string, string>))
    if (labels[k] !== v) return false;
  for (const e of (selector['matchExpressions'] ?? []) as Obj[]) {
    const key = String(e['key']);
    const values = (e['values'] ?? []) as string[];
    const has = key in labels;
    const ok =
      e['operator'] === 'In'
        ? has && values.includes(labels[key]!)
        : e['operator'] === 'NotIn'
          ? !has || !values.includes(labels[key]!)
          : e['operator'] === 'Exists'
            ? has
            : e['operator'] === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** The namespace labels the API server sets on every namespace. */
const namespaceLabels = (ns: string) => ({ 'kubernetes.io/metadata.name': ns });

/** Whether `policy` applies to the pod `to`, and if so whether it admits `from` connecting to `port`. */
export function admits(policy: Obj, from: Pod, to: Pod, port: number): boolean | 'not-selected' {
  const meta = policy['metadata'] as Obj;
  const spec = policy['spec'] as Obj;
  if (meta['namespace'] !== to.namespace || !selects(spec['podSelector'] as Obj, to.labels)) return 'not-selected';
  for (const rule of (spec['ingress'] ?? []) as Obj[]) {
    const ports = rule['ports'] as Obj[] | undefined;
    const portOk =
      !ports || ports.length === 0 || ports.some((p) => p['port'] === port && (p['protocol'] ?? 'TCP') === 'TCP');
    if (!portOk) continue;
    const peers = rule['from'] as Obj[] | undefined;
    if (!peers || peers.length === 0) return true;
    for (const peer of peers) {
      const nsSel = peer['namespaceSelector'] as Obj | undefined;
      const podSel = peer['podSelector'] as Obj | undefined;
      const nsOk = nsSel ? selects(nsSel, namespaceLabels(from.namespace)) : from.namespace === to.namespace;
      const podOk = podSel ? selects(podSel, from.labels) : true;
      if (nsOk && podOk) return true;
    }
  }
  return false;
}
