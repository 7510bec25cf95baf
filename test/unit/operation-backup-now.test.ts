// backup-now, the function as a step of a Crossplane Operation
// (src/operations/): it asks for the Databases of each namespace as required
// resources, then returns a pinned DatabaseBackup of each for Crossplane to
// apply, and writes what it asked for (and skipped) to the step's output.
// Under real Crossplane: test/e2e/database-backup.test.ts.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { setClock } from '../../src/clock.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { answered, databaseXr, fatalOf } from '../support/database.js';
import { operationCall, operationInput } from '../support/operations.js';

const restore = setClock(() => new Date('2026-12-03T06:10:42Z'));
after(restore);

const input = (backupNow: Obj): Obj => operationInput({ backupNow });
const db = (name: string, namespace: string, extra: Obj = {}): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'Database',
  metadata: { name, namespace, ...extra },
  spec: { engine: 'postgres', storageGB: 10 },
});

describe('backup-now, as an Operation step', () => {
  const spec = { namespaces: ['team-b', 'team-a'], matchLabels: { tier: 'prod' } };

  test('first it asks for the Databases of each namespace, with the labels, and applies nothing yet', () => {
    const rsp = runFunction(operationCall(input(spec)));
    assert.equal(fatalOf(rsp), undefined);
    assert.deepEqual(rsp.requirements?.resources, {
      'databases-in-team-a': {
        apiVersion: 'example.com/v1',
        kind: 'Database',
        matchLabels: { labels: { tier: 'prod' } },
        namespace: 'team-a',
      },
      'databases-in-team-b': {
        apiVersion: 'example.com/v1',
        kind: 'Database',
        matchLabels: { labels: { tier: 'prod' } },
        namespace: 'team-b',
      },
      'backups-now-in-team-a': {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        matchLabels: { labels: { 'function-platform.dev/asked-by': 'backup-now' } },
        namespace: 'team-a',
      },
      'backups-now-in-team-b': {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        matchLabels: { labels: { 'function-platform.dev/asked-by': 'backup-now' } },
        namespace: 'team-b',
      },
    });
    assert.deepEqual(rsp.desired?.resources, {});
    assert.equal(rsp.output, undefined);
    assert.deepEqual(rsp.results, []);
  });

  test('answered: a pinned DatabaseBackup of each, named for the minute; one being deleted is skipped; the output says so', () => {
    const required = answered({
      'databases-in-team-a': [
        db('shop', 'team-a', { deletionTimestamp: '2026-12-03T06:00:00Z' }),
        db('orders', 'team-a'),
      ],
      'databases-in-team-b': [db('ledger', 'team-b')],
      'backups-now-in-team-a': [],
      'backups-now-in-team-b': [],
    });
    const rsp = runFunction(operationCall(input(spec), required));
    assert.equal(fatalOf(rsp), undefined);
    const desired = Object.fromEntries(
      Object.entries(rsp.desired?.resources ?? {}).map(([k, r]) => [k, r.resource as Obj]),
    );
    assert.deepEqual(Object.keys(desired).sort(), ['team-a.orders-now-202612030610', 'team-b.ledger-now-202612030610']);
    assert.deepEqual(desired['team-a.orders-now-202612030610'], {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: {
        name: 'orders-now-202612030610',
        namespace: 'team-a',
        labels: { 'function-platform.dev/backup-now': '202612030610', 'function-platform.dev/asked-by': 'backup-now' },
      },
      spec: { databaseRef: { name: 'orders' }, pinned: true },
    });
    assert.deepEqual(rsp.output, {
      operation: 'backup-now',
      requestedAt: '2026-12-03T06:10:42.000Z',
      label: 'function-platform.dev/backup-now=202612030610',
      namespaces: ['team-a', 'team-b'],
      matchLabels: { tier: 'prod' },
      backups: [
        { namespace: 'team-a', database: 'orders', backup: 'orders-now-202612030610' },
        { namespace: 'team-b', database: 'ledger', backup: 'ledger-now-202612030610' },
      ],
      skipped: [{ namespace: 'team-a', database: 'shop', reason: 'being deleted' }],
    });
    const said = rsp.results.find((r) => r.reason === 'BackupsAsked');
    assert.equal(said?.severity, Severity.SEVERITY_NORMAL);
    assert.match(
      said!.message,
      /^backup-now: 2 pinned DatabaseBackups asked for in team-a, team-b, 1 Database skipped/,
    );
    // The same requirements again: Crossplane's loop ends, and a retry within the minute asks for the same backups.
    assert.deepEqual(Object.keys(rsp.requirements?.resources ?? {}), [
      'databases-in-team-a',
      'databases-in-team-b',
      'backups-now-in-team-a',
      'backups-now-in-team-b',
    ]);
    const retry = setClock(() => new Date('2026-12-03T06:10:59Z'));
    const again = runFunction(operationCall(input(spec), required));
    retry();
    assert.deepEqual(again.desired, rsp.desired);
  });

  test('a step run again minutes later (after a failed apply) asks for no second copy; a failed one is taken again', () => {
    const earlier = (name: string, database: string, stamp: string, phase: string): Obj => ({
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: {
        name,
        namespace: 'team-a',
        labels: { 'function-platform.dev/backup-now': stamp, 'function-platform.dev/asked-by': 'backup-now' },
      },
      spec: { databaseRef: { name: database }, pinned: true },
      status: { phase },
    });
    const required = answered({
      'databases-in-team-a': [db('orders', 'team-a'), db('shop', 'team-a'), db('stock', 'team-a')],
      'backups-now-in-team-a': [
        earlier('orders-now-202612030606', 'orders', '202612030606', 'Running'),
        earlier('shop-now-202612030607', 'shop', '202612030607', 'Failed'),
        earlier('stock-now-202612030555', 'stock', '202612030555', 'Completed'),
      ],
    });
    const rsp = runFunction(operationCall(input({ namespaces: ['team-a'] }), required));
    assert.deepEqual(Object.keys(rsp.desired?.resources ?? {}).sort(), [
      'team-a.shop-now-202612030610',
      'team-a.stock-now-202612030610',
    ]);
    assert.deepEqual((rsp.output as Obj)['backups'], [
      { namespace: 'team-a', database: 'orders', backup: 'orders-now-202612030606', askedBefore: true },
      { namespace: 'team-a', database: 'shop', backup: 'shop-now-202612030610' },
      { namespace: 'team-a', database: 'stock', backup: 'stock-now-202612030610' },
    ]);
  });

  test('nothing matched: a warning, and nothing applied', () => {
    const rsp = runFunction(
      operationCall(
        input({ namespaces: ['team-c'] }),
        answered({ 'databases-in-team-c': [], 'backups-now-in-team-c': [] }),
      ),
    );
    assert.deepEqual(rsp.desired?.resources, {});
    const said = rsp.results.find((r) => r.reason === 'NothingMatched');
    assert.equal(said?.severity, Severity.SEVERITY_WARNING);
    assert.equal(said?.message, 'backup-now: no Database in team-c');
  });

  test('named in a Composition step, or with a bad field: Fatal, naming it', () => {
    const inComposition = runFunction(
      operationCall(input(spec), {}, databaseXr({ engine: 'postgres', storageGB: 10 })),
    );
    assert.match(fatalOf(inComposition)?.message ?? '', /input\.operation is for a step of an Operation/);
    for (const [backupNow, field] of [
      [{}, 'input.operation.backupNow'],
      [{ namespaces: [] }, 'input.operation.backupNow.namespaces'],
      [{ namespaces: ['Team_A'] }, 'input.operation.backupNow.namespaces'],
      [{ namespaces: ['team-a'], labels: { a: 'b' } }, 'input.operation.backupNow.labels'],
      [{ namespaces: ['team-a'], matchLabels: { 'bad key!': 'b' } }, 'input.operation.backupNow.matchLabels'],
      [
        { namespaces: ['team-a'], matchLabels: { fleet: 'not a value' } },
        'input.operation.backupNow.matchLabels.fleet',
      ],
    ] as const) {
      const fatal = fatalOf(runFunction(operationCall(input(backupNow))));
      assert.ok(fatal, `Fatal for ${JSON.stringify(backupNow)}`);
      assert.ok(fatal.message.includes(field), `${fatal.message} names ${field}`);
    }
    const none = fatalOf(runFunction(operationCall({ ...input(spec), operation: {} })));
    assert.match(none?.message ?? '', /input\.operation names no operation/);
  });
});
