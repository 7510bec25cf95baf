// Prometheus's own rule engine for tests: a Database's PrometheusRule written
// out as the Prometheus Operator writes it for Prometheus (its spec.groups,
// as a rule file), checked by `promtool check rules`, and evaluated minute by
// minute over series by `promtool test rules`. Shared by the alerts' suite
// and the real-node suite that feeds it a real kubelet's figures.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { stringify } from 'yaml';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  CNPG_CRD_OBJECT,
  call,
  databaseXr,
  desiredOf,
  fatalOf,
  storeCredentials,
} from './database.js';
import { healthyStatus } from './observed-state.js';
import { toolPath } from './tools.js';

export const GIB = 1024 ** 3;

/** The Prometheus Operator's PrometheusRule CRD, as Crossplane answers the function's question for it. */
export const PROMETHEUS_RULE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'prometheusrules.monitoring.coreos.com' },
};

/** What a Database asks for, answered: `crd` for the PrometheusRule CRD (empty: not installed). */
export const alertsRequired = (crd: Obj[]) =>
  answered({
    'backup-store-credentials': [storeCredentials()],
    'cnpg-crd': [CNPG_CRD_OBJECT],
    'prometheusrule-crd': crd,
  });

/** The PrometheusRule a running Database of `spec` composes. */
export function ruleOf(spec: Obj, name: string, namespace?: string): Obj {
  const xr = () => databaseXr(spec, { name, ...(namespace ? { namespace } : {}) });
  const first = call(xr(), [], alertsRequired([]));
  const running = asObserved(first, (_k, obj) => healthyStatus(obj));
  const rsp = call(xr(), running, alertsRequired([PROMETHEUS_RULE_CRD]));
  assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
  const rule = desiredOf(rsp, 'alerts');
  assert.equal(rule?.['kind'], 'PrometheusRule');
  return rule!;
}

// Made when a suite imports this, and removed when its file's tests are done.
const dir = mkdtempSync(join(tmpdir(), 'fp-promtool-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const workDir = () => dir;

/** promtool with `args`, in the work folder: its exit code and what it printed. */
export function promtool(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(toolPath('promtool'), args, { cwd: workDir(), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

let files = 0;
/** Writes the rule file of `rule` (spec.groups, as the Prometheus Operator writes it), checked by promtool. */
export function ruleFile(rule: Obj): string {
  const name = `rules-${++files}.yaml`;
  writeFileSync(join(workDir(), name), stringify({ groups: (rule['spec'] as Obj)['groups'] }));
  const checked = promtool(['check', 'rules', name]);
  assert.equal(checked.status, 0, checked.out);
  return name;
}

export interface Series {
  series: string;
  values: string;
}
export interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts: Array<{ exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }>;
}

/** Runs one promtool test group over `rules`, from `start`, a sample a minute. */
export function evaluate(rules: string, start: Date, input_series: Series[], alert_rule_test: AlertTest[]) {
  const name = `test-${++files}.yaml`;
  writeFileSync(
    join(workDir(), name),
    stringify({
      rule_files: [rules],
      evaluation_interval: '1m',
      tests: [{ interval: '1m', start_timestamp: start.toISOString(), input_series, alert_rule_test }],
    }),
  );
  return promtool(['test', 'rules', name]);
}

/** `metric{labels}` with `extra` labels added, as a scrape adds its target's. */
export function withLabels(key: string, extra: Record<string, string>): string {
  const add = Object.entries(extra)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  const brace = key.indexOf('{');
  return brace < 0 ? `${key}{${add}}` : `${key.slice(0, -1)},${add}}`;
}
