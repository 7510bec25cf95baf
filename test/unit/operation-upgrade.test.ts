// upgrade, the function as a step of a Crossplane Operation or CronOperation
// (src/operations/upgrade.ts): each run reads where every selected Database
// stands and takes one step of the fleet's move to a version: the canary
// alone, then waves, waiting while any is on its way, stopping at the first
// blocked upgrade and going on after the fix. The Databases here are what the
// API server would return for them, their status as the Database blueprint
// writes it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { answered, fatalOf } from '../support/database.js';
import { operationCall, operationInput } from '../support/operations.js';

interface Standing {
  engine?: string;
  /** spec.version */
  version: string;
  running?: string;
  ready?: boolean;
  blocked?: string;
  synced?: { status: 'True' | 'False'; message?: string };
}

function db(namespace: string, name: string, s: Standing): Obj {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name, namespace },
    spec: { engine: s.engine ?? 'mysql', storageGB: 10, version: s.version },
    status: {
      ready: s.ready ?? true,
      version: {
        requested: s.version,
        ...(s.running ? { running: s.running } : {}),
        ...(s.blocked ? { upgradeBlocked: s.blocked } : {}),
      },
      conditions: s.synced ? [{ type: 'Synced', reason: 'X', ...s.synced }] : [],
    },
  };
}

/** The fleet as the API server has it now: what the step reads on this run. */
class Fleet {
  readonly dbs = new Map<string, Obj>();
  constructor(list: Obj[]) {
    for (const d of list) this.dbs.set(`${(d['metadata'] as Obj)['namespace']}/${(d['metadata'] as Obj)['name']}`, d);
  }
  /** The Database's status now (what it was asked, its annotations, stay). */
  set(key: string, s: Standing) {
    const [ns, name] = key.split('/');
    const next = db(ns!, name!, s);
    const annotations = (this.dbs.get(key)?.['metadata'] as Obj | undefined)?.['annotations'];
    if (annotations) (next['metadata'] as Obj)['annotations'] = annotations;
    this.dbs.set(key, next);
  }
  /** One run of the step; what it applies is applied (spec.version set), as Crossplane does. */
  run(upgrade: Obj) {
    const byNs = (ns: string) => [...this.dbs.values()].filter((d) => (d['metadata'] as Obj)['namespace'] === ns);
    const rsp = runFunction(
      operationCall(
        operationInput({ upgrade }),
        answered({ 'databases-in-team-a': byNs('team-a'), 'databases-in-team-b': byNs('team-b') }),
      ),
    );
    assert.equal(fatalOf(rsp), undefined);
    const applied: string[] = [];
    for (const r of Object.values(rsp.desired?.resources ?? {})) {
      const o = r.resource as Obj;
      const meta = o['metadata'] as Obj;
      const key = `${meta['namespace']}/${meta['name']}`;
      applied.push(key);
      const before = this.dbs.get(key)!;
      assert.deepEqual(Object.keys(o).sort(), ['apiVersion', 'kind', 'metadata', 'spec']);
      assert.deepEqual(
        o['spec'],
        { version: (upgrade as { version: string }).version },
        'spec.version and nothing else',
      );
      assert.deepEqual(Object.keys(meta).sort(), ['annotations', 'name', 'namespace']);
      (before['spec'] as Obj)['version'] = (o['spec'] as Obj)['version'];
      (before['metadata'] as Obj)['annotations'] = meta['annotations'];
      ((before['status'] as Obj)['version'] as Obj)['requested'] = (o['spec'] as Obj)['version'];
    }
    const result = rsp.results[0]!;
    return { applied: applied.sort(), output: rsp.output as Obj, result };
  }
}

const UPGRADE = { namespaces: ['team-a', 'team-b'], engine: 'mysql', version: '8.4' };

describe('upgrade, as an Operation step run again and again', () => {
  test('canary, wait, a wave, a blocked upgrade stops the rest, the fix goes on, complete', () => {
    const fleet = new Fleet([
      db('team-a', 'a1', { version: '8.0', running: '8.0.39' }),
      db('team-a', 'a2', { version: '8.0', running: '8.0.39' }),
      db('team-a', 'pg', { engine: 'postgres', version: '16', running: '16.4' }),
      db('team-b', 'b1', { version: '8.0', running: '8.0.39' }),
      db('team-b', 'b2', { version: '8.0', running: '8.0.39' }),
      db('team-b', 'b3', { version: '8.4', running: '8.4.2' }),
    ]);
    // b3 was made on 8.4 and never upgraded: it proves nothing, so the canary goes first, alone.
    let run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, ['team-a/a1']);
    assert.equal(run.result.reason, 'UpgradeWave');
    assert.deepEqual(run.output['skipped'], [{ namespace: 'team-a', database: 'pg', reason: 'engine postgres' }]);
    assert.deepEqual(run.output['done'], [{ namespace: 'team-b', database: 'b3' }]);

    // The canary is on its way (its backup, then the new version): nothing else moves.
    run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, []);
    assert.equal(run.result.reason, 'UpgradeWaiting');
    assert.match(run.result.message, /waiting for team-a\/a1 \(runs 8\.0\)/);

    // It runs 8.4 and is Ready: the next wave, two at a time.
    fleet.set('team-a/a1', { version: '8.4', running: '8.4.2' });
    run = fleet.run({ ...UPGRADE, waveSize: 2 });
    assert.deepEqual(run.applied, ['team-a/a2', 'team-b/b1']);
    assert.deepEqual(run.output['behind'], [{ namespace: 'team-b', database: 'b2' }]);

    // a2's pre-upgrade backup failed: the operation stops there, says why, and starts nobody else.
    const why =
      'the upgrade of mysql 8.0 to 8.4 waits: its backup a2-db-pre-8-4 failed (dump exited 2); delete DatabaseBackup a2-db-pre-8-4 to take it again, or set spec.version back to 8.0';
    fleet.set('team-a/a2', { version: '8.4', running: '8.0.39', blocked: why });
    fleet.set('team-b/b1', { version: '8.4', running: '8.4.2' });
    run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, []);
    assert.equal(run.result.severity, Severity.SEVERITY_WARNING);
    assert.equal(run.result.reason, 'UpgradeStopped');
    assert.equal(run.result.message, `upgrade to mysql 8.4 stopped at Database team-a/a2: ${why}; 1 not started`);
    assert.deepEqual(run.output['stopped'], { namespace: 'team-a', database: 'a2', reason: why });

    // The backup taken again and the upgrade done: the next run goes on where it stopped.
    fleet.set('team-a/a2', { version: '8.4', running: '8.4.2' });
    run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, ['team-b/b2']);
    fleet.set('team-b/b2', { version: '8.4', running: '8.4.2', ready: false });
    assert.equal(fleet.run(UPGRADE).result.reason, 'UpgradeWaiting', 'running the version but not Ready is not done');
    fleet.set('team-b/b2', { version: '8.4', running: '8.4.2' });
    run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, []);
    assert.equal(run.result.reason, 'UpgradeComplete');
    assert.equal(run.result.message, 'upgrade to mysql 8.4 complete: 5 Databases run it');
  });

  test('a Database whose reconcile fails on the version stops it too; one asking for a newer version is left alone', () => {
    const fleet = new Fleet([
      db('team-a', 'a1', { version: '8.4', running: '8.0.39', synced: { status: 'False', message: 'refused' } }),
      db('team-a', 'a2', { version: '9.1', running: '9.1.0' }),
      db('team-b', 'b1', { version: '8.0', running: '8.0.39' }),
    ]);
    const run = fleet.run(UPGRADE);
    assert.deepEqual(run.applied, []);
    assert.deepEqual(run.output['stopped'], { namespace: 'team-a', database: 'a1', reason: 'refused' });
    assert.deepEqual(run.output['skipped'], [
      { namespace: 'team-a', database: 'a2', reason: 'asks for 9.1, newer than 8.4' },
    ]);
  });

  test('nothing of the engine: a warning; both operations in one step, or a bad version: Fatal naming it', () => {
    const fleet = new Fleet([db('team-a', 'pg', { engine: 'postgres', version: '16', running: '16.4' })]);
    const run = fleet.run(UPGRADE);
    assert.equal(run.result.reason, 'NothingMatched');
    assert.equal(run.result.message, 'upgrade to mysql 8.4: no mysql Database in team-a, team-b');
    const both = runFunction(
      operationCall(operationInput({ upgrade: UPGRADE, backupNow: { namespaces: ['team-a'] } })),
    );
    assert.match(fatalOf(both)?.message ?? '', /names two operations/);
    for (const [upgrade, field] of [
      [{ ...UPGRADE, version: 'latest' }, 'input.operation.upgrade.version'],
      [{ ...UPGRADE, engine: 'oracle' }, 'input.operation.upgrade.engine'],
      [{ ...UPGRADE, waveSize: 0 }, 'input.operation.upgrade.waveSize'],
      [{ namespaces: ['team-a'], version: '8.4' }, 'input.operation.upgrade'],
    ] as const) {
      const fatal = fatalOf(runFunction(operationCall(operationInput({ upgrade }))));
      assert.ok(fatal?.message.includes(field), `${fatal?.message} names ${field}`);
    }
  });
});
