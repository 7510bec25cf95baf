// The per-Database gauges a Database's alerts read (src/metrics.ts): set from
// the status the function answers with (the newest backup, the newest failed
// one) and from whether it answered Fatal, times that never go back, bounded,
// and written in the Prometheus text format under the names the rules use.
// The served endpoint is exercised by test/integration/metrics.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parser } from '@prometheus-io/lezer-promql';
import { DATABASE_GAUGES } from '../../src/blueprints/database/alerts.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { DatabaseGauges, Metrics } from '../../src/metrics.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { answered, completedBackup, databaseXr, statusOf, storeCredentials } from '../support/database.js';

const AT = new Date('2026-12-02T10:00:00Z');
const required = answered({ 'backup-store-credentials': [storeCredentials()], 'prometheusrule-crd': [] });

/** A scheduled DatabaseBackup of slot `stamp` as observed, in `phase`. */
function scheduled(stamp: string, status: Obj): Obj {
  const b = completedBackup(`orders-db-${stamp}`, 'orders', status);
  (b['metadata'] as Obj)['annotations'] = { [RESOURCE_NAME_ANNOTATION]: `scheduled-backup-${stamp}` };
  return b;
}
const ok = (stamp: string, completedAt: string) => scheduled(stamp, { completedAt });
const failed = (stamp: string, completedAt: string) =>
  scheduled(stamp, {
    phase: 'Failed',
    completedAt,
    failureReason: 'the store refused the upload',
    location: undefined,
  });

/** One answered call of Database `name`, recorded as the server records it. */
function answer(gauges: DatabaseGauges, spec: unknown, observed: Obj[], name = 'orders', at = AT) {
  const req = buildRequest(databaseXr(spec, { name }), observed, [], undefined, required);
  const rsp = runFunction(req);
  gauges.answered(req, rsp, at);
  return rsp;
}

/** The samples of a text exposition: `name{labels}` to value; and every family's TYPE. */
function parseText(text: string) {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { samples, types };
}

const series = (metric: string, ns: string, name: string, extra = '') =>
  `${metric}{database_namespace="${ns}",database="${name}"${extra}}`;
const seconds = (iso: string) => Date.parse(iso) / 1000;

describe('per-Database gauges', () => {
  const spec = { engine: 'postgres', storageGB: 20 };

  test('the newest success and the failure after it, from the status the function answers with', () => {
    const g = new DatabaseGauges();
    const rsp = answer(g, spec, [
      ok('202612010300', '2026-12-01T03:02:00Z'),
      failed('202612020300', '2026-12-02T03:04:30Z'),
    ]);
    const backup = statusOf(rsp)['backup'] as Obj;
    assert.equal(backup['lastSuccessfulTime'], '2026-12-01T03:02:00Z');
    assert.equal(backup['lastFailedTime'], '2026-12-02T03:04:30Z');
    const { samples, types } = parseText(g.text());
    assert.equal(samples.get(series(DATABASE_GAUGES.lastBackup, 'team-a', 'orders')), seconds('2026-12-01T03:02:00Z'));
    assert.equal(
      samples.get(series(DATABASE_GAUGES.lastFailedBackup, 'team-a', 'orders')),
      seconds('2026-12-02T03:04:30Z'),
    );
    assert.equal(samples.get(series(DATABASE_GAUGES.lastAnswer, 'team-a', 'orders')), AT.getTime() / 1000);
    for (const metric of Object.values(DATABASE_GAUGES)) assert.equal(types.get(metric), 'gauge', metric);
    // Every sample line is a valid PromQL selector of the series the rules name.
    for (const key of samples.keys()) {
      let errors = 0;
      parser.parse(key).iterate({ enter: (n) => void (n.type.isError && errors++) });
      assert.equal(errors, 0, key);
    }
  });

  test('restore drills: when the newest backup proven to restore was verified, and when a drill last failed', () => {
    const g = new DatabaseGauges();
    const passed = { result: 'Passed', request: 'a', verifiedAt: '2026-12-01T05:01:00Z', tables: 1, rows: 10 };
    const failedDrill = {
      result: 'Failed',
      request: 'b',
      verifiedAt: '2026-12-02T05:01:00Z',
      reason: 'damaged at rest',
    };
    const rsp = answer(g, spec, [
      scheduled('202612010300', { completedAt: '2026-12-01T03:02:00Z', verification: passed }),
      scheduled('202612020300', { completedAt: '2026-12-02T03:02:00Z', verification: failedDrill }),
    ]);
    const backup = statusOf(rsp)['backup'] as Obj;
    assert.equal(backup['lastVerifiedTime'], '2026-12-01T05:01:00Z');
    const { samples } = parseText(g.text());
    assert.equal(
      samples.get(series(DATABASE_GAUGES.lastVerified, 'team-a', 'orders')),
      seconds('2026-12-01T05:01:00Z'),
    );
    assert.equal(
      samples.get(series(DATABASE_GAUGES.lastFailedVerification, 'team-a', 'orders')),
      seconds('2026-12-02T05:01:00Z'),
    );
  });

  test('times never go back: a later call whose status says less (a success newer, the failure gone) keeps the newest', () => {
    const g = new DatabaseGauges();
    answer(g, spec, [ok('202612010300', '2026-12-01T03:02:00Z'), failed('202612020300', '2026-12-02T03:04:30Z')]);
    // The next backup succeeded: status.backup.lastFailedTime is gone, the failure time stays older than the success.
    answer(
      g,
      spec,
      [
        ok('202612010300', '2026-12-01T03:02:00Z'),
        failed('202612020300', '2026-12-02T03:04:30Z'),
        ok('202612030300', '2026-12-03T03:01:00Z'),
      ],
      'orders',
      new Date('2026-12-03T10:00:00Z'),
    );
    // A replica that saw less (only the first backup) answers later: nothing goes back.
    answer(g, spec, [ok('202612010300', '2026-12-01T03:02:00Z')], 'orders', new Date('2026-12-03T09:00:00Z'));
    const { samples } = parseText(g.text());
    const success = samples.get(series(DATABASE_GAUGES.lastBackup, 'team-a', 'orders'))!;
    const failure = samples.get(series(DATABASE_GAUGES.lastFailedBackup, 'team-a', 'orders'))!;
    assert.equal(success, seconds('2026-12-03T03:01:00Z'));
    assert.equal(failure, seconds('2026-12-02T03:04:30Z'));
    assert.ok(failure < success, 'the backup-failed rule (failure newer than success) no longer holds');
    assert.equal(samples.get(series(DATABASE_GAUGES.lastAnswer, 'team-a', 'orders')), seconds('2026-12-03T10:00:00Z'));
  });

  test('a Fatal answer: its time and reason, the last good answer kept; one reason a Database, the newest', () => {
    const g = new DatabaseGauges();
    answer(g, spec, []);
    const bad = answer(g, { engine: 'postgres', storageGB: -1 }, [], 'orders', new Date('2026-12-02T11:00:00Z'));
    assert.equal(bad.results[0]?.reason, 'InvalidSpec');
    let { samples } = parseText(g.text());
    assert.equal(
      samples.get(series(DATABASE_GAUGES.lastFatal, 'team-a', 'orders', ',reason="InvalidSpec"')),
      seconds('2026-12-02T11:00:00Z'),
    );
    assert.equal(samples.get(series(DATABASE_GAUGES.lastAnswer, 'team-a', 'orders')), AT.getTime() / 1000);
    // Another reason later replaces the first: the series stay one a Database.
    const req = buildRequest(databaseXr(spec), [], [], undefined, required);
    g.answered(
      req,
      { ...runFunction(req), results: [{ severity: 1, reason: 'DataLoss', message: 'x' }] } as never,
      new Date('2026-12-02T12:00:00Z'),
    );
    ({ samples } = parseText(g.text()));
    const fatals = [...samples.keys()].filter((k) => k.startsWith(DATABASE_GAUGES.lastFatal));
    assert.deepEqual(fatals, [series(DATABASE_GAUGES.lastFatal, 'team-a', 'orders', ',reason="DataLoss"')]);
  });

  test('bounded: past the cap the least recently answered Database goes, and a name no DNS name is not exported', () => {
    const g = new DatabaseGauges(3);
    for (const name of ['a', 'b', 'c', 'd']) answer(g, spec, [], name);
    assert.equal(g.size, 3);
    const { samples } = parseText(g.text());
    assert.equal(samples.has(series(DATABASE_GAUGES.lastAnswer, 'team-a', 'a')), false);
    assert.equal(samples.has(series(DATABASE_GAUGES.lastAnswer, 'team-a', 'd')), true);
    const odd = buildRequest(databaseXr(spec, { name: 'Bad"Name' }), [], [], undefined, required);
    g.answered(odd, runFunction(odd), AT);
    assert.ok(!g.text().includes('Bad'));
  });

  test('Metrics writes them after its counters', () => {
    const m = new Metrics();
    answer(m.databases, spec, [ok('202612010300', '2026-12-01T03:02:00Z')]);
    const { samples, types } = parseText(m.text());
    assert.equal(types.get('function_platform_calls_total'), 'counter');
    assert.equal(samples.get(series(DATABASE_GAUGES.lastBackup, 'team-a', 'orders')), seconds('2026-12-01T03:02:00Z'));
  });
});
