// Alerting rules as a Database's PrometheusRule carries them
// (database/alerts.ts composes it), and what the placements need to write
// their own: each rule is scoped by label matchers to one Database's objects
// and names where its metrics come from, so that whoever is paged knows what
// must be scraped. Only metrics that exist are named: the kubelet's volume
// stats, kube-state-metrics, CloudNativePG's exporter and the function's own
// --metrics-address (src/metrics.ts).
import { appName, type DatabaseInput } from './database.js';

/** One alerting rule of a PrometheusRule group (monitoring.coreos.com/v1 spec.groups[].rules[]). */
export interface AlertRule {
  alert: string;
  expr: string;
  /** How long the expression must hold before the alert fires. */
  for: string;
  labels: { severity: 'warning' | 'critical' } & Record<string, string>;
  annotations: { summary: string; description: string; source: string };
}

/** Where the metrics of a rule come from, as its `source` annotation says. */
export const SOURCES = {
  kubelet: 'the kubelet (kubelet_volume_stats_*, scraped from each node)',
  kubeStateMetrics: 'kube-state-metrics (kube_persistentvolumeclaim_resource_requests_storage_bytes)',
  cnpg: "CloudNativePG's exporter on each instance pod (its default monitoring queries, port 9187)",
  function: "function-platform's own metrics (--metrics-address)",
} as const;

/** A PromQL string literal. */
export function promString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A PromQL regular-expression literal matching `prefix` then `pattern` (RE2, anchored by PromQL). */
export function promRegex(prefix: string, pattern: string): string {
  return promString(`${prefix.replace(/[.\\+*?()|[\]{}^$]/g, '\\$&')}${pattern}`);
}

/** Label matchers, in order: a string value matches exactly, `{ re }` by a regular expression literal. */
export function selector(matchers: Record<string, string | { re: string }>): string {
  const parts = Object.entries(matchers).map(([k, v]) =>
    typeof v === 'string' ? `${k}=${promString(v)}` : `${k}=~${v.re}`,
  );
  return `{${parts.join(', ')}}`;
}

const GIB = 1024 ** 3;

/**
 * Storage above spec.storage.growAtPercent with no room to grow: the data
 * volume(s) `claims` names (one claim, or a regular expression literal) are
 * used past the threshold (the kubelet: bytes used over the file system's
 * capacity), and the claim already asks for spec.maxStorageGB
 * (kube-state-metrics: the claim's request, which growth raises; the
 * kubelet's capacity is the file system's, a few percent under it). With no
 * maxStorageGB nothing grows the volume, so the threshold alone fires.
 */
export function volumeFullRule(
  input: Pick<DatabaseInput, 'owner' | 'spec'>,
  claims: string | { re: string },
  words: string,
): AlertRule {
  const spec = input.spec;
  const at = spec.storage?.growAtPercent ?? 80;
  const max = spec.maxStorageGB;
  const sel = selector({ namespace: input.owner.namespace, persistentvolumeclaim: claims });
  const by = 'max by (namespace, persistentvolumeclaim)';
  const used = `${by} (kubelet_volume_stats_used_bytes${sel}) / ${by} (kubelet_volume_stats_capacity_bytes${sel}) * 100 > ${at}`;
  const expr =
    max === undefined
      ? used
      : `${used} and on (namespace, persistentvolumeclaim) ${by} (kube_persistentvolumeclaim_resource_requests_storage_bytes${sel}) >= ${max * GIB}`;
  const room =
    max === undefined
      ? 'spec.maxStorageGB is not set, so nothing grows it: raise spec.storageGB, or set spec.maxStorageGB to let it grow by itself'
      : `it already asks for spec.maxStorageGB (${max}Gi), so it grows no further: raise spec.maxStorageGB, or free space`;
  return {
    alert: 'DatabaseStorageNearlyFull',
    expr,
    for: '10m',
    labels: { severity: 'warning' },
    annotations: {
      summary: `Database ${appName(input.owner)}: ${words} above ${at}% used, no room to grow`,
      description: `Volume {{ $labels.persistentvolumeclaim }} of Database ${appName(input.owner)} is {{ $value | printf "%.0f" }}% used (spec.storage.growAtPercent is ${at}) and ${room}.`,
      source: max === undefined ? SOURCES.kubelet : `${SOURCES.kubelet}; ${SOURCES.kubeStateMetrics}`,
    },
  };
}
