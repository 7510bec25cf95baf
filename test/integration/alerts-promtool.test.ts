// A Database's alerts, evaluated by Prometheus's own rule engine: the
// PrometheusRule the function composes is written out as the Prometheus
// Operator writes it for Prometheus (its spec.groups, as a rule file),
// `promtool check rules` reads it, and `promtool test rules` evaluates it
// minute by minute over series and says which alerts fire when, with which
// labels and annotations (the templates rendered by Prometheus itself).
//
// The series: the function's own are what its real gauges (src/metrics.ts)
// export after real answers, one scrape a minute, with the labels a scrape
// of the function's pod adds; the kubelet's, kube-state-metrics' and
// CloudNativePG's exporter's are STAND-INS for their scrapes, written by
// hand under the names and labels those exporters publish.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { DatabaseGauges } from '../../src/metrics.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { completedBackup, databaseXr } from '../support/database.js';
import { samples } from '../support/prometheus.js';
import {
  alertsRequired,
  evaluate,
  GIB,
  PROMETHEUS_RULE_CRD,
  ruleFile,
  ruleOf,
  type Series,
  withLabels,
} from '../support/promtool.js';
import { toolsSkipReason } from '../support/tools.js';

const skip = toolsSkipReason('the alerts evaluated by promtool', ['promtool'], 'scripts/install-prometheus.sh');

const required = alertsRequired([PROMETHEUS_RULE_CRD]);

/** The labels a Prometheus scraping the function's pod (a PodMonitor) puts on its samples. */
const functionPod = (pod: string, ip: string) => ({
  job: 'crossplane-system/function-platform',
  namespace: 'crossplane-system',
  pod,
  instance: `${ip}:8080`,
});

/**
 * The series a scrape a minute of the function's /metrics stores: the gauge
 * text of each minute (undefined: nothing scraped then), every sample with
 * the target's labels, `_` where a minute has none.
 */
function scraped(minutes: Array<string | undefined>, target: Record<string, string>): Series[] {
  const values = new Map<string, string[]>();
  minutes.forEach((text, i) => {
    for (const [key, v] of samples(text ?? '')) {
      const row = values.get(key) ?? Array<string>(minutes.length).fill('_');
      row[i] = String(v);
      values.set(key, row);
    }
  });
  return [...values].map(([key, row]) => ({ series: withLabels(key, target), values: row.join(' ') }));
}

/** A scheduled DatabaseBackup of slot `stamp` as observed. */
function backup(stamp: string, status: Obj, database = 'orders'): Obj {
  const b = completedBackup(`${database}-db-${stamp}`, database, status);
  (b['metadata'] as Obj)['annotations'] = { [RESOURCE_NAME_ANNOTATION]: `scheduled-backup-${stamp}` };
  return b;
}
const failedBackup = (stamp: string, completedAt: string) =>
  backup(stamp, { phase: 'Failed', completedAt, failureReason: 'the store refused the upload', location: undefined });

/**
 * Answers of the function to Database `name` once a minute from `start`, at
 * that minute by its clock, as each replica's gauges record them: `at(m)`
 * says the spec and the observed backups at minute m, and which replica
 * answers. Returns each replica's gauge text per minute.
 */
function answers(
  start: Date,
  minutes: number,
  at: (m: number) => { spec: Obj; backups: Obj[]; replica?: number },
  replicas = 1,
  name = 'orders',
): Array<Array<string | undefined>> {
  const gauges = Array.from({ length: replicas }, () => new DatabaseGauges());
  const texts = gauges.map(() => Array<string | undefined>(minutes).fill(undefined));
  for (let m = 0; m < minutes; m++) {
    const when = new Date(start.getTime() + m * 60_000);
    const restore = setClock(() => when);
    try {
      const { spec, backups, replica = 0 } = at(m);
      const req = buildRequest(databaseXr(spec, { name }), backups, [], undefined, required);
      const rsp: RunFunctionResponse = runFunction(req);
      gauges[replica]!.answered(req, rsp, when);
    } finally {
      restore();
    }
    // Every replica is scraped each minute, whether it answered or not: it exports what it last saw.
    gauges.forEach((g, i) => {
      texts[i]![m] = g.text();
    });
  }
  return texts;
}

const STATEFULSET = { engine: 'postgres', storageGB: 20, maxStorageGB: 40 };
const annotationsOf = (rule: Obj, alert: string) =>
  ((((rule['spec'] as Obj)['groups'] as Obj[])[0]!['rules'] as Obj[]).find((r) => r['alert'] === alert)![
    'annotations'
  ] ?? {}) as Record<string, string>;

describe('alerts evaluated by Prometheus (promtool test rules)', { skip }, () => {
  test('the harness can fail: an alert expected that does not fire fails promtool', () => {
    const rules = ruleFile(ruleOf(STATEFULSET, 'orders'));
    const got = evaluate(
      rules,
      new Date('2026-12-02T10:00:00Z'),
      [],
      [{ eval_time: '5m', alertname: 'DatabaseFunctionFatal', exp_alerts: [{ exp_labels: { severity: 'warning' } }] }],
    );
    assert.notEqual(got.status, 0, got.out);
    assert.match(got.out, /DatabaseFunctionFatal/);
  });

  test('a backup that failed fires after a minute, and clears when the next one succeeds', () => {
    const rule = ruleOf(STATEFULSET, 'orders');
    const rules = ruleFile(rule);
    const start = new Date('2026-12-02T10:00:00Z');
    const yesterday = backup('202612010300', { completedAt: '2026-12-01T03:02:00Z' });
    const failed = failedBackup('202612020300', '2026-12-02T10:04:30Z');
    const retried = backup('202612021015', { completedAt: '2026-12-02T10:19:00Z' });
    const [texts] = answers(start, 30, (m) => ({
      spec: STATEFULSET,
      backups: m < 5 ? [yesterday] : m < 20 ? [yesterday, failed] : [yesterday, failed, retried],
    }));
    const firing = {
      exp_labels: { severity: 'warning', database: 'orders', database_namespace: 'team-a' },
      exp_annotations: annotationsOf(rule, 'DatabaseBackupFailed'),
    };
    const got = evaluate(rules, start, scraped(texts!, functionPod('function-platform-7c9d-x2k4p', '10.244.1.7')), [
      { eval_time: '4m', alertname: 'DatabaseBackupFailed', exp_alerts: [] },
      // Pending for its minute.
      { eval_time: '5m', alertname: 'DatabaseBackupFailed', exp_alerts: [] },
      { eval_time: '6m', alertname: 'DatabaseBackupFailed', exp_alerts: [firing] },
      { eval_time: '19m', alertname: 'DatabaseBackupFailed', exp_alerts: [firing] },
      { eval_time: '20m', alertname: 'DatabaseBackupFailed', exp_alerts: [] },
      { eval_time: '29m', alertname: 'DatabaseBackupOverdue', exp_alerts: [] },
      { eval_time: '29m', alertname: 'DatabaseFunctionFatal', exp_alerts: [] },
    ]);
    assert.equal(got.status, 0, got.out);
  });

  test('no successful backup for twice the daily gap: overdue after 30 minutes more, its age humanized', () => {
    const rule = ruleOf(STATEFULSET, 'orders');
    const rules = ruleFile(rule);
    // The last success 2026-11-30 03:02; twice the daily gap later is 2026-12-02 03:02.
    const start = new Date('2026-12-02T02:00:00Z');
    const last = backup('202611300300', { completedAt: '2026-11-30T03:02:00Z' });
    const [texts] = answers(start, 130, () => ({ spec: STATEFULSET, backups: [last] }));
    const annotations = annotationsOf(rule, 'DatabaseBackupOverdue');
    // Its age at `eval_time`, as Prometheus's humanizeDuration writes it.
    const overdue = (eval_time: string, age: string) => ({
      eval_time,
      alertname: 'DatabaseBackupOverdue',
      exp_alerts: [
        {
          exp_labels: { severity: 'critical', database: 'orders', database_namespace: 'team-a' },
          exp_annotations: {
            ...annotations,
            description: `The newest successful backup of Database orders finished ${age} ago: more than twice the longest gap of spec.backup.schedule "0 3 * * *" (24h). Its status.backup and BackupHealthy condition say what happens.`,
          },
        },
      ],
    });
    const got = evaluate(rules, start, scraped(texts!, functionPod('function-platform-7c9d-x2k4p', '10.244.1.7')), [
      // Past the limit (48 h) from 1h03m, the first evaluation after 03:02; then pending for 30 minutes.
      { eval_time: '1h', alertname: 'DatabaseBackupOverdue', exp_alerts: [] },
      { eval_time: '1h32m', alertname: 'DatabaseBackupOverdue', exp_alerts: [] },
      // 2026-12-02 03:33 less 2026-11-30 03:02.
      overdue('1h33m', '2d 0h 31m 0s'),
      overdue('2h', '2d 0h 58m 0s'),
    ]);
    assert.equal(got.status, 0, got.out);
  });

  test('a Fatal answer by one of two replicas fires after ten minutes with its reason, and clears at the next good answer from either', () => {
    const rule = ruleOf(STATEFULSET, 'orders');
    const rules = ruleFile(rule);
    const start = new Date('2026-12-02T10:00:00Z');
    const bad = { ...STATEFULSET, storageGB: -1 };
    // Crossplane's calls land on either replica (round robin behind the Service).
    const [a, b] = answers(
      start,
      25,
      (m) => ({ spec: m >= 3 && m < 17 ? bad : STATEFULSET, backups: [], replica: m % 2 }),
      2,
    );
    const series = [
      ...scraped(a!, functionPod('function-platform-7c9d-x2k4p', '10.244.1.7')),
      ...scraped(b!, functionPod('function-platform-7c9d-q8m2z', '10.244.2.9')),
    ];
    const firing = {
      exp_labels: { severity: 'warning', database: 'orders', database_namespace: 'team-a', reason: 'InvalidSpec' },
      exp_annotations: {
        ...annotationsOf(rule, 'DatabaseFunctionFatal'),
        summary: 'Database orders: the function refuses it (InvalidSpec)',
        description:
          'function-platform answers Database orders with a Fatal result (InvalidSpec), so nothing of it changes: its events and `kubectl describe` say what to fix.',
      },
    };
    const got = evaluate(rules, start, series, [
      { eval_time: '2m', alertname: 'DatabaseFunctionFatal', exp_alerts: [] },
      { eval_time: '12m', alertname: 'DatabaseFunctionFatal', exp_alerts: [] },
      { eval_time: '13m', alertname: 'DatabaseFunctionFatal', exp_alerts: [firing] },
      { eval_time: '16m', alertname: 'DatabaseFunctionFatal', exp_alerts: [firing] },
      // Replica b answers well at 17m; replica a's last Fatal (16m) is older than that.
      { eval_time: '17m', alertname: 'DatabaseFunctionFatal', exp_alerts: [] },
      { eval_time: '24m', alertname: 'DatabaseFunctionFatal', exp_alerts: [] },
    ]);
    assert.equal(got.status, 0, got.out);
  });

  test('a restore drill that failed fires, and a later drill that passed clears it', () => {
    const rule = ruleOf(STATEFULSET, 'orders');
    const rules = ruleFile(rule);
    const start = new Date('2026-12-02T10:00:00Z');
    const passed = { result: 'Passed', request: 'a', verifiedAt: '2026-12-01T05:01:00Z', tables: 1, rows: 10 };
    const failedDrill = {
      result: 'Failed',
      request: 'b',
      verifiedAt: '2026-12-02T10:02:00Z',
      reason: 'damaged at rest',
    };
    const passedAgain = { ...passed, request: 'c', verifiedAt: '2026-12-02T10:11:00Z' };
    const first = backup('202612010300', { completedAt: '2026-12-01T03:02:00Z', verification: passed });
    const second = (verification: Obj) => backup('202612020300', { completedAt: '2026-12-02T03:02:00Z', verification });
    const [texts] = answers(start, 20, (m) => ({
      spec: STATEFULSET,
      backups: m < 2 ? [first] : m < 11 ? [first, second(failedDrill)] : [first, second(passedAgain)],
    }));
    const firing = {
      exp_labels: { severity: 'warning', database: 'orders', database_namespace: 'team-a' },
      exp_annotations: annotationsOf(rule, 'DatabaseBackupVerificationFailed'),
    };
    const got = evaluate(rules, start, scraped(texts!, functionPod('function-platform-7c9d-x2k4p', '10.244.1.7')), [
      { eval_time: '2m', alertname: 'DatabaseBackupVerificationFailed', exp_alerts: [] },
      { eval_time: '3m', alertname: 'DatabaseBackupVerificationFailed', exp_alerts: [firing] },
      { eval_time: '11m', alertname: 'DatabaseBackupVerificationFailed', exp_alerts: [] },
    ]);
    assert.equal(got.status, 0, got.out);
  });

  // STAND-IN series: the kubelet's volume stats and kube-state-metrics' claim requests, by hand.
  const volume = (ns: string, claim: string, usedGi: number, capacityGi: number, requestGi: number): Series[] => {
    const kubelet = { job: 'kubelet', metrics_path: '/metrics', node: 'node-1', instance: '172.18.0.3:10250' };
    const ksm = { job: 'kube-state-metrics', instance: '10.244.0.4:8080' };
    const own = `namespace="${ns}",persistentvolumeclaim="${claim}"`;
    return [
      { series: withLabels(`kubelet_volume_stats_used_bytes{${own}}`, kubelet), values: `${usedGi * GIB}x30` },
      { series: withLabels(`kubelet_volume_stats_capacity_bytes{${own}}`, kubelet), values: `${capacityGi * GIB}x30` },
      {
        // kube-state-metrics' own namespace label is the claim's (its scrape honours it).
        series: withLabels(`kube_persistentvolumeclaim_resource_requests_storage_bytes{${own}}`, ksm),
        values: `${requestGi * GIB}x30`,
      },
    ];
  };

  test('a data volume past the threshold at its ceiling fires after ten minutes; with room to grow, or another’s, it does not', () => {
    const rule = ruleOf(STATEFULSET, 'orders');
    const rules = ruleFile(rule);
    const start = new Date('2026-12-02T10:00:00Z');
    const full = evaluate(
      rules,
      start,
      [
        // Its claim asks for the ceiling, 40 Gi; the file system is a little smaller, 85 % used.
        ...volume('team-a', 'data-orders-db-0', 33.32, 39.2, 40),
        // Another Database's claim in the same namespace, and this one's name in another namespace: not its own.
        ...volume('team-a', 'data-other-db-0', 39, 39.2, 40),
        ...volume('team-b', 'data-orders-db-0', 39, 39.2, 40),
      ],
      [
        { eval_time: '9m', alertname: 'DatabaseStorageNearlyFull', exp_alerts: [] },
        {
          eval_time: '10m',
          alertname: 'DatabaseStorageNearlyFull',
          exp_alerts: [
            {
              exp_labels: {
                severity: 'warning',
                database: 'orders',
                namespace: 'team-a',
                persistentvolumeclaim: 'data-orders-db-0',
              },
              exp_annotations: {
                ...annotationsOf(rule, 'DatabaseStorageNearlyFull'),
                description:
                  'Volume data-orders-db-0 of Database orders is 85% used (spec.storage.growAtPercent is 80) and it already asks for spec.maxStorageGB (40Gi), so it grows no further: raise spec.maxStorageGB, or free space.',
              },
            },
          ],
        },
      ],
    );
    assert.equal(full.status, 0, full.out);
    // Room to grow (the claim asks for 30 of 40 Gi): the function grows it, nobody is paged.
    const growing = evaluate(rules, start, volume('team-a', 'data-orders-db-0', 25.5, 29.4, 30), [
      { eval_time: '20m', alertname: 'DatabaseStorageNearlyFull', exp_alerts: [] },
    ]);
    assert.equal(growing.status, 0, growing.out);
  });

  test('CloudNativePG: a replica behind its primary for five minutes fires for that instance alone', () => {
    const CNPG = { engine: 'postgres', storageGB: 50, highAvailability: true, replicas: 2 };
    const rule = ruleOf(CNPG, 'catalog');
    const rules = ruleFile(rule);
    const start = new Date('2026-12-02T10:00:00Z');
    // STAND-IN series: the exporter of each instance pod, scraped by a PodMonitor (namespace and pod are the target's).
    const lag = (ns: string, pod: string, values: string) => ({
      series: `cnpg_pg_replication_lag{namespace="${ns}",pod="${pod}",job="${ns}/${pod.replace(/-[0-9]+$/, '')}",instance="10.244.3.${pod.length}:9187"}`,
      values,
    });
    const got = evaluate(
      rules,
      start,
      [
        lag('team-a', 'catalog-db-1', '0x20'),
        lag('team-a', 'catalog-db-2', '90x20'),
        // Another Cluster's replica, and a former generation's: not this Database's.
        lag('team-a', 'other-db-2', '300x20'),
        lag('team-a', 'catalog-db-r1-2', '300x20'),
      ],
      [
        { eval_time: '4m', alertname: 'DatabaseReplicaLagging', exp_alerts: [] },
        {
          eval_time: '5m',
          alertname: 'DatabaseReplicaLagging',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', database: 'catalog', namespace: 'team-a', pod: 'catalog-db-2' },
              exp_annotations: {
                ...annotationsOf(rule, 'DatabaseReplicaLagging'),
                description:
                  'Instance catalog-db-2 of CloudNativePG Cluster catalog-db is 90s behind its primary (more than 60s for 5 minutes): what is read from it (the read endpoint) is that much older than the primary.',
              },
            },
          ],
        },
      ],
    );
    assert.equal(got.status, 0, got.out);
  });
});
