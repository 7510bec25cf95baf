// A Database's alerts: where the PrometheusRule CRD is there (a required
// resource), one PrometheusRule per Database, valid against the real CRD
// (../shared/crds/prometheus-operator), every expression parsed by the
// Prometheus project's own PromQL grammar without an error node, and every
// selector scoped by its label matchers to this Database's namespace and
// objects. Where the CRD is absent nothing is composed; before it is read, a
// PrometheusRule already composed stays.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parser } from '@prometheus-io/lezer-promql';
import { Ready, type RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  CNPG_CRD_OBJECT,
  call,
  claimXr,
  databaseXr,
  desiredOf,
  fatalOf,
  inner,
  type Required,
  statusOf,
  storeCredentials,
} from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';
import { hasSchema, validateObject } from '../support/schemas.js';

const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'prometheusrules.monitoring.coreos.com' },
};
const STATEFULSET = { engine: 'postgres', storageGB: 20 } as const;
const CNPG = { engine: 'postgres', storageGB: 50, highAvailability: true, replicas: 2 } as const;
const AWS = { engine: 'postgres', storageGB: 20, placement: 'aws', aws: { region: 'eu-west-1' } } as const;

/** The answers every call of these tests gets, with the PrometheusRule CRD `present` or absent (undefined: not asked yet). */
function required(present: boolean | undefined, extra: Record<string, Obj[]> = {}): Required {
  return answered({
    'backup-store-credentials': [storeCredentials()],
    'cnpg-crd': [CNPG_CRD_OBJECT],
    ...(present === undefined ? {} : { 'prometheusrule-crd': present ? [CRD] : [] }),
    ...extra,
  });
}

/** A Database of `spec` that runs: its first answer, observed ready. */
function running(spec: Obj, name = 'orders'): Obj[] {
  return asObserved(call(databaseXr(spec, { name }), [], required(false)), (_k, obj) => healthyStatus(obj));
}

type Rule = { alert: string; expr: string; for: string; labels: Obj; annotations: Record<string, string> };
const rulesOf = (rsp: RunFunctionResponse): Rule[] =>
  ((((desiredOf(rsp, 'alerts') ?? {})['spec'] as Obj)['groups'] as Obj[])[0]!['rules'] as Rule[]) ?? [];
const ruleOf = (rsp: RunFunctionResponse, alert: string) => rulesOf(rsp).find((r) => r.alert === alert);

interface Selector {
  metric: string;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** The error nodes of `expr` as the PromQL grammar parses it, and each vector selector with its matchers. */
function parsePromQL(expr: string): { errors: string[]; selectors: Selector[] } {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const selectors: Selector[] = [];
  const text = (from: number, to: number) => expr.slice(from, to);
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`error at ${node.from}: ${JSON.stringify(text(node.from, node.to + 10))}`);
      if (node.name !== 'VectorSelector') return;
      const sel: Selector = { metric: '', matchers: [] };
      const c = node.node.cursor();
      if (c.firstChild()) {
        do {
          if (c.name === 'Identifier') sel.metric = text(c.from, c.to);
          if (c.name === 'LabelMatchers') {
            const m = c.node.cursor();
            if (m.firstChild())
              do {
                if (m.name !== 'UnquotedLabelMatcher') continue;
                const parts = m.node.cursor();
                const got: string[] = [];
                if (parts.firstChild())
                  do got.push(text(parts.from, parts.to));
                  while (parts.nextSibling());
                const [label, op, value] = got;
                // A PromQL string literal is a JSON string for what these rules write.
                sel.matchers.push({ label: label!, op: op!, value: JSON.parse(value!) as string });
              } while (m.nextSibling());
          }
        } while (c.nextSibling());
      }
      selectors.push(sel);
    },
  });
  return { errors, selectors };
}

/** The value `label` is matched to in `sel`, and how. */
const matcher = (sel: Selector, label: string) => sel.matchers.find((m) => m.label === label);

/** Whether a regex matcher's value matches `name` as Prometheus does (anchored at both ends). */
const matches = (re: string, name: string) => new RegExp(`^(?:${re})$`).test(name);

/** The checks every composed PrometheusRule passes, whatever the Database. */
function assertWellFormed(rsp: RunFunctionResponse, namespace: string, database: string): void {
  const rule = desiredOf(rsp, 'alerts')!;
  assert.ok(hasSchema('monitoring.coreos.com/v1', 'PrometheusRule'), 'the real CRD is among the schemas');
  assert.deepEqual(validateObject(rule), [], 'valid against the real PrometheusRule CRD');
  for (const r of rulesOf(rsp)) {
    const { errors, selectors } = parsePromQL(r.expr);
    assert.deepEqual(errors, [], `${r.alert} parses: ${r.expr}`);
    assert.ok(selectors.length > 0, `${r.alert} reads a metric`);
    for (const sel of selectors) {
      // Every selector is scoped to this Database's namespace and to an object of its own.
      const ns = matcher(sel, 'namespace') ?? matcher(sel, 'database_namespace');
      assert.deepEqual(ns && { op: ns.op, value: ns.value }, { op: '=', value: namespace }, `${r.alert} ${sel.metric}`);
      assert.equal(sel.matchers.length, 2, `${r.alert} ${sel.metric}: the namespace and one object`);
    }
    assert.equal(r.labels['database'], database);
    assert.ok(r.annotations['source'] && r.annotations['summary'] && r.annotations['description'], r.alert);
  }
}

describe('alerts where the Prometheus Operator is installed', () => {
  test('a Database asks whether the PrometheusRule CRD is there, and composes nothing before the answer', () => {
    const rsp = call(databaseXr(STATEFULSET), [], required(undefined));
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(rsp.requirements?.resources?.['prometheusrule-crd'], {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      matchName: 'prometheusrules.monitoring.coreos.com',
    });
    assert.equal(desiredOf(rsp, 'alerts'), undefined);
  });

  test('the CRD absent: nothing composed, nothing said of it', () => {
    const rsp = call(databaseXr(STATEFULSET), running(STATEFULSET), required(false));
    assert.equal(desiredOf(rsp, 'alerts'), undefined);
    assert.ok(!rsp.results.some((r) => /alert|PrometheusRule|prometheus/i.test(`${r.reason} ${r.message}`)));
    assert.ok(rsp.requirements?.resources?.['prometheusrule-crd'], 'asked again on every call');
  });

  test('in a StatefulSet: backups, its data volume and Fatal answers, scoped to it, valid and parsed', () => {
    const rsp = call(databaseXr(STATEFULSET), running(STATEFULSET), required(true));
    assert.equal(fatalOf(rsp), undefined);
    const obj = desiredOf(rsp, 'alerts')!;
    assert.equal(obj['apiVersion'], 'monitoring.coreos.com/v1');
    assert.equal(obj['kind'], 'PrometheusRule');
    const meta = obj['metadata'] as Obj;
    assert.equal(meta['name'], 'orders-db');
    assert.equal(meta['namespace'], 'team-a');
    // Labelled like the Database's other objects.
    assert.deepEqual(meta['labels'], (desiredOf(rsp, 'statefulset')!['metadata'] as Obj)['labels']);
    assert.deepEqual(
      rulesOf(rsp).map((r) => r.alert),
      [
        'DatabaseBackupFailed',
        'DatabaseBackupOverdue',
        'DatabaseBackupVerificationFailed',
        'DatabaseStorageNearlyFull',
        'DatabaseFunctionFatal',
      ],
    );
    assertWellFormed(rsp, 'team-a', 'orders');
    // The data volume is the live StatefulSet's claim, by its exact name.
    const volume = parsePromQL(ruleOf(rsp, 'DatabaseStorageNearlyFull')!.expr).selectors;
    assert.deepEqual(
      [...new Set(volume.map((s) => s.metric))],
      ['kubelet_volume_stats_used_bytes', 'kubelet_volume_stats_capacity_bytes'],
    );
    for (const s of volume)
      assert.deepEqual(matcher(s, 'persistentvolumeclaim'), {
        label: 'persistentvolumeclaim',
        op: '=',
        value: 'data-orders-db-0',
      });
    // The function's own series, by the name the user knows the Database by.
    for (const alert of [
      'DatabaseBackupFailed',
      'DatabaseBackupOverdue',
      'DatabaseBackupVerificationFailed',
      'DatabaseFunctionFatal',
    ])
      for (const s of parsePromQL(ruleOf(rsp, alert)!.expr).selectors) {
        assert.match(s.metric, /^function_platform_database_/);
        assert.deepEqual(matcher(s, 'database'), { label: 'database', op: '=', value: 'orders' });
      }
    // Not there yet, it holds nothing back: the Database is as ready as it is without the CRD.
    const without = call(databaseXr(STATEFULSET), running(STATEFULSET), required(false));
    assert.equal(statusOf(rsp)['ready'], statusOf(without)['ready']);
    assert.equal(statusOf(rsp)['message'], statusOf(without)['message']);
    // Not observed yet: not said ready (it does not exist), and the Database's readiness is the function's own.
    assert.equal(rsp.desired?.resources['alerts']?.ready, Ready.READY_FALSE);
    assert.equal(rsp.desired?.composite?.ready, without.desired?.composite?.ready);
  });

  test('the threshold, the ceiling and the overdue limit follow the spec', () => {
    const spec = {
      ...STATEFULSET,
      maxStorageGB: 40,
      storage: { growAtPercent: 90, growByPercent: 25 },
      backup: { schedule: '0 3 * * 1-5' },
    };
    const rsp = call(databaseXr(spec), running(spec), required(true));
    assertWellFormed(rsp, 'team-a', 'orders');
    const volume = ruleOf(rsp, 'DatabaseStorageNearlyFull')!;
    assert.match(volume.expr, / \* 100 > 90 and on \(namespace, persistentvolumeclaim\) /);
    // At the ceiling: the claim already asks for spec.maxStorageGB (kube-state-metrics), 40 GiB in bytes.
    assert.match(volume.expr, /kube_persistentvolumeclaim_resource_requests_storage_bytes\{[^}]*\}\) >= 42949672960$/);
    assert.match(volume.annotations['source'] ?? '', /kube-state-metrics/);
    // Weekdays only: the longest gap is the weekend (Friday 03:00 to Monday 03:00), twice that is six days.
    assert.match(ruleOf(rsp, 'DatabaseBackupOverdue')!.expr, / > 518400$/);
    const daily = call(databaseXr(STATEFULSET), running(STATEFULSET), required(true));
    assert.match(ruleOf(daily, 'DatabaseBackupOverdue')!.expr, / > 172800$/);
    assert.doesNotMatch(ruleOf(daily, 'DatabaseStorageNearlyFull')!.expr, /kube_persistentvolumeclaim/);
  });

  test('backups off: no backup rules', () => {
    const spec = { ...STATEFULSET, backup: { enabled: false } };
    const rsp = call(databaseXr(spec), running(spec), required(true));
    assert.deepEqual(
      rulesOf(rsp).map((r) => r.alert),
      ['DatabaseStorageNearlyFull', 'DatabaseFunctionFatal'],
    );
  });

  test('CloudNativePG: its instances’ volumes and replica lag, matched by the Cluster’s pod and claim names', () => {
    const rsp = call(databaseXr(CNPG, { name: 'catalog' }), running(CNPG, 'catalog'), required(true));
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(
      rulesOf(rsp).map((r) => r.alert),
      [
        'DatabaseBackupFailed',
        'DatabaseBackupOverdue',
        'DatabaseBackupVerificationFailed',
        'DatabaseStorageNearlyFull',
        'DatabaseReplicaLagging',
        'DatabaseFunctionFatal',
      ],
    );
    assertWellFormed(rsp, 'team-a', 'catalog');
    const lag = parsePromQL(ruleOf(rsp, 'DatabaseReplicaLagging')!.expr).selectors;
    assert.deepEqual(
      lag.map((s) => s.metric),
      ['cnpg_pg_replication_lag'],
    );
    const pods = matcher(lag[0]!, 'pod')!;
    assert.equal(pods.op, '=~');
    for (const pod of ['catalog-db-1', 'catalog-db-2', 'catalog-db-13']) assert.ok(matches(pods.value, pod), pod);
    // Not another Database's, not a later generation's, not a WAL volume, not a Job's pod.
    for (const other of [
      'catalog-db-r1-1',
      'other-db-1',
      'catalog-db-1-wal',
      'catalog-dbx1',
      'catalog-db-1-full-abcde',
    ])
      assert.ok(!matches(pods.value, other), other);
    for (const s of parsePromQL(ruleOf(rsp, 'DatabaseStorageNearlyFull')!.expr).selectors) {
      const claims = matcher(s, 'persistentvolumeclaim')!;
      assert.equal(claims.op, '=~');
      assert.ok(matches(claims.value, 'catalog-db-1') && !matches(claims.value, 'catalog-db-1-wal'));
    }
  });

  test('on AWS: only the function’s own rule (RDS keeps its backups and grows its storage itself)', () => {
    const rds = answered({ 'prometheusrule-crd': [CRD] });
    const rsp = call(databaseXr(AWS), [], rds);
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(
      rulesOf(rsp).map((r) => r.alert),
      ['DatabaseFunctionFatal'],
    );
    assertWellFormed(rsp, 'team-a', 'orders');
  });

  test('before the CRD is read (a reconcile’s first call), a PrometheusRule already composed stays; once read absent, it goes', () => {
    const observed = asObserved(call(databaseXr(STATEFULSET), running(STATEFULSET), required(true)), (_k, obj) =>
      healthyStatus(obj),
    );
    assert.ok(observed.some((o) => o['kind'] === 'PrometheusRule'));
    const first = call(
      databaseXr(STATEFULSET),
      observed,
      answered({ 'backup-store-credentials': [storeCredentials()] }),
    );
    assert.equal(fatalOf(first), undefined);
    assert.equal(desiredOf(first, 'alerts')?.['kind'], 'PrometheusRule', 'kept while the answer is not there');
    assertWellFormed(first, 'team-a', 'orders');
    const gone = call(databaseXr(STATEFULSET), observed, required(false));
    assert.equal(desiredOf(gone, 'alerts'), undefined, 'the CRD is gone, and the rules with it');
  });

  test('a Database of a claim: the rules name the claim, in its namespace', () => {
    const xr = claimXr(STATEFULSET, { namespace: 'team-b' });
    const store = storeCredentials();
    (store['metadata'] as Obj)['namespace'] = 'team-b';
    const rsp = call(xr, [], answered({ 'backup-store-credentials': [store], 'prometheusrule-crd': [CRD] }));
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const manifest = inner(desiredOf(rsp, 'alerts'))!;
    assert.equal(manifest['kind'], 'PrometheusRule');
    assert.equal((manifest['metadata'] as Obj)['namespace'], 'team-b');
    for (const r of ((manifest['spec'] as Obj)['groups'] as Obj[])[0]!['rules'] as Rule[])
      for (const s of parsePromQL(r.expr).selectors) {
        assert.equal((matcher(s, 'namespace') ?? matcher(s, 'database_namespace'))?.value, 'team-b');
        const own = matcher(s, 'database') ?? matcher(s, 'persistentvolumeclaim');
        assert.ok(own && /orders/.test(own.value), `${r.alert}: ${JSON.stringify(own)}`);
      }
  });

  test('the real CRD judges: its case-insensitive pattern (Go RE2) is enforced as the API server does', () => {
    const rule = (strategy: string) => ({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: 'r', namespace: 'team-a' },
      spec: { groups: [{ name: 'g', partial_response_strategy: strategy, rules: [{ alert: 'A', expr: 'up == 0' }] }] },
    });
    for (const ok of ['abort', 'WARN', 'Abort', '']) assert.deepEqual(validateObject(rule(ok)), [], ok);
    for (const bad of ['sometimes', 'abortx']) assert.notDeepEqual(validateObject(rule(bad)), [], bad);
    // A rule without its expression is refused, as the API server would.
    const noExpr = rule('warn');
    (noExpr.spec.groups[0]!.rules[0] as Obj)['expr'] = undefined;
    assert.notDeepEqual(validateObject(JSON.parse(JSON.stringify(noExpr)) as Obj), []);
  });
});
