// The Prometheus endpoint (--metrics-address), scraped while the server
// answers a mixed load: Widgets, invalid Widgets, a kind no blueprint serves,
// and Databases on AWS whose calls go to an endpoint that refuses them and
// quotes the caller's credentials back. The counts must be exactly what was
// sent, the histogram well formed, and no credential in any label.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { type FakeAws, startFakeAws } from '../support/fake-aws.js';
import { samples, sum } from '../support/prometheus.js';
import { type FunctionProcess, metricsUrlOf, startFunction } from '../support/function-process.js';
import { runToExit } from '../support/run-to-exit.js';
import { dialWire, type WireClient } from '../support/wire.js';

const KEY_ID = 'AKIAMETRICSEXAMPLE7Q';
const SECRET = 'mEtRiCs/Secret+Key0123456789abcdefGHIJKL';

const widget = (name: string, spec: Obj): RunFunctionRequest =>
  buildRequest({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}` },
    spec,
  });

function awsDatabase(endpoint: string): RunFunctionRequest {
  const xr = {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name: 'ledger', namespace: 'team-a', uid: 'uid-ledger' },
    spec: { placement: 'aws', engine: 'postgres', version: '17', aws: { region: 'eu-west-1' } },
  };
  const credentials = [
    { metadata: { name: 'aws' }, stringData: { aws_access_key_id: KEY_ID, aws_secret_access_key: SECRET, endpoint } },
  ];
  return buildRequest(xr, [], credentials as Obj[]);
}

describe('metrics at --metrics-address', () => {
  let fn: FunctionProcess;
  let aws: FakeAws;
  let client: WireClient;
  let url = '';
  const scrape = async () => {
    const r = await fetch(url);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return r.text();
  };

  before(async () => {
    aws = await startFakeAws({
      message: (q) => `denied for ${q.headers['authorization'] ?? ''} ${q.body}`,
    });
    fn = await startFunction({ args: ['--metrics-address', '127.0.0.1:0'] });
    url = await metricsUrlOf(fn);
    client = dialWire(fn.target);
  });
  after(async () => {
    client?.close();
    if (fn) assert.equal(await fn.stop(), 0);
    await aws?.close();
  });

  test('before any call: the families are declared, nothing counted', async () => {
    const text = await scrape();
    for (const family of [
      'function_platform_calls_total counter',
      'function_platform_call_duration_seconds histogram',
      'function_platform_fatal_results_total counter',
      'function_platform_aws_calls_total counter',
      'function_platform_aws_facts_cache_total counter',
      'function_platform_aws_facts_failures_total counter',
      'function_platform_database_last_backup_timestamp_seconds gauge',
      'function_platform_database_last_failed_backup_timestamp_seconds gauge',
      'function_platform_database_last_answer_timestamp_seconds gauge',
      'function_platform_database_last_fatal_timestamp_seconds gauge',
    ])
      assert.ok(text.includes(`# TYPE ${family}\n`), family);
    assert.equal(sum(samples(text), 'function_platform_calls_total'), 0);
  });

  test('under load, scraped as it runs: every call counted by blueprint and result, Fatal ones by reason', async () => {
    const requests: RunFunctionRequest[] = [];
    for (let i = 0; i < 120; i++) requests.push(widget(`w${i}`, { color: 'blue', size: 2 }));
    for (let i = 0; i < 40; i++) requests.push(widget(`bad${i}`, { color: 'Blue', size: 2 }));
    for (let i = 0; i < 20; i++)
      requests.push(buildRequest({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: `g${i}` } }));
    for (let i = 0; i < 20; i++) requests.push(awsDatabase(aws.endpoint));
    const scrapes: string[] = [];
    let running = true;
    const scraping = (async () => {
      while (running) scrapes.push(await scrape());
    })();
    const outcomes = await Promise.all(requests.map((r) => client.run(r, 20_000)));
    running = false;
    await scraping;
    assert.ok(
      outcomes.every((o) => o.ok),
      'every call answered',
    );
    assert.ok(scrapes.length >= 2, `scraped during the load (${scrapes.length} times)`);

    const s = samples(await scrape());
    assert.equal(sum(s, 'function_platform_calls_total'), 200);
    assert.equal(sum(s, 'function_platform_calls_total', { blueprint: 'widget' }), 160);
    assert.equal(sum(s, 'function_platform_calls_total', { blueprint: 'widget', result: 'fatal' }), 40);
    assert.equal(sum(s, 'function_platform_calls_total', { blueprint: 'none', result: 'fatal' }), 20);
    assert.equal(sum(s, 'function_platform_calls_total', { blueprint: 'database' }), 20);
    assert.equal(
      sum(s, 'function_platform_calls_total', { blueprint: 'database', result: 'warning' }),
      20,
      'AWS trouble is a warning',
    );
    assert.equal(sum(s, 'function_platform_fatal_results_total', { reason: 'InvalidSpec' }), 40);
    assert.equal(sum(s, 'function_platform_fatal_results_total', { reason: 'UnknownKind' }), 20);
    // The histogram: one count per call, cumulative buckets that end at the count.
    assert.equal(sum(s, 'function_platform_call_duration_seconds_count'), 200);
    const buckets = [...s].filter(([k]) =>
      k.startsWith('function_platform_call_duration_seconds_bucket{blueprint="widget"'),
    );
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]![1] >= buckets[i - 1]![1], 'cumulative');
    assert.equal(buckets.at(-1)![0], 'function_platform_call_duration_seconds_bucket{blueprint="widget",le="+Inf"}');
    assert.equal(buckets.at(-1)![1], 160);
    assert.ok(sum(s, 'function_platform_call_duration_seconds_sum') > 0);
    // AWS: every call the endpoint received, counted as an error; the cache asked once per Database call.
    assert.ok(aws.calls > 0);
    assert.equal(sum(s, 'function_platform_aws_calls_total'), aws.calls);
    assert.equal(
      sum(s, 'function_platform_aws_calls_total', {
        operation: 'DescribeOrderableDBInstanceOptions',
        outcome: 'error',
      }),
      aws.calls,
    );
    assert.equal(sum(s, 'function_platform_aws_facts_cache_total'), 20);
    assert.ok(sum(s, 'function_platform_aws_facts_failures_total') >= 1, 'failed reads counted');
    for (const text of [...scrapes, await scrape()]) {
      for (const secret of [KEY_ID, SECRET, SECRET.slice(0, 12), encodeURIComponent(SECRET)])
        assert.ok(!text.includes(secret), 'no credential in any scrape');
    }
  });

  test("a Database's gauges, after a call: its newest backup and failure from its status, the answer's time, a Fatal one by reason", async () => {
    const backup = (stamp: string, status: Obj): Obj => ({
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: {
        name: `stock-db-${stamp}`,
        namespace: 'team-m',
        annotations: { 'crossplane.io/composition-resource-name': `scheduled-backup-${stamp}` },
      },
      spec: { databaseRef: { name: 'stock' } },
      status: { method: 'dump', engine: 'postgres', version: '17', ...status },
    });
    const xr = (spec: Obj) => ({
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: { name: 'stock', namespace: 'team-m', uid: 'uid-stock' },
      spec,
    });
    const spec = { engine: 'postgres', storageGB: 20, backup: { enabled: false } };
    const observed = [
      backup('202612010300', {
        phase: 'Completed',
        completedAt: '2026-12-01T03:02:00Z',
        location: 's3://b/stock.dump',
      }),
      backup('202612020300', { phase: 'Failed', completedAt: '2026-12-02T03:04:30Z', failureReason: 'refused' }),
    ];
    const before = Date.now() / 1000;
    assert.ok((await client.run(buildRequest(xr(spec), observed), 20_000)).ok);
    let s = samples(await scrape());
    const of = (metric: string, extra = '') =>
      s.get(`function_platform_database_${metric}{database_namespace="team-m",database="stock"${extra}}`);
    assert.equal(of('last_backup_timestamp_seconds'), Date.parse('2026-12-01T03:02:00Z') / 1000);
    assert.equal(of('last_failed_backup_timestamp_seconds'), Date.parse('2026-12-02T03:04:30Z') / 1000);
    const answeredAt = of('last_answer_timestamp_seconds')!;
    assert.ok(answeredAt >= before - 1 && answeredAt <= Date.now() / 1000 + 1, `answered at ${answeredAt}`);
    assert.equal(of('last_fatal_timestamp_seconds', ',reason="InvalidSpec"'), undefined);
    // The same Database refused: its Fatal answer by reason; the times its status gave stay.
    assert.ok((await client.run(buildRequest(xr({ ...spec, storageGB: -1 }), observed), 20_000)).ok);
    s = samples(await scrape());
    assert.ok(of('last_fatal_timestamp_seconds', ',reason="InvalidSpec"')! >= answeredAt);
    assert.equal(of('last_backup_timestamp_seconds'), Date.parse('2026-12-01T03:02:00Z') / 1000);
  });

  test('only GET /metrics is served', async () => {
    assert.equal((await fetch(url.replace('/metrics', '/'))).status, 404);
    assert.equal((await fetch(url, { method: 'POST' })).status, 404);
  });
});

describe('the --metrics-address flag', () => {
  test('without a value: refused at start, naming the flag', async () => {
    const out = await runToExit(['--insecure', '--metrics-address']);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /--metrics-address needs host:port/);
  });

  test('not host:port: the function stops, naming it', async () => {
    const out = await runToExit(['--insecure', '--address', '127.0.0.1:0', '--metrics-address=nowhere']);
    assert.equal(out.code, 1);
    assert.match(out.output, /--metrics-address nowhere is not host:port/);
  });
});
