// The last dump of a Database in a StatefulSet deleted under Delete (issue 28):
// a waiting pod that dumps on its stop signal, and Usages of the server's StatefulSet and
// Service by that pod, composed only where they can work; status.deletion
// names where the dump goes before anything is deleted. The scripts run for
// real in test/backup/dump-upload.test.ts; the whole deletion under real
// Crossplane, on a real node, in test/e2e-real/database.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { USAGES } from '../../src/blueprints/lifecycle/deletion-order.js';
import { lastDumpGraceSeconds } from '../../src/blueprints/lifecycle/placements/statefulset-last-dump.js';
import type { Obj } from '../../src/kube.js';
import {
  answered,
  asObserved,
  call,
  claimXr,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
  statusOf,
  USAGE_CRD_OBJECT,
} from '../support/database.js';
import { restrictedViolations } from '../support/pod-security.js';
import { assertValidObject } from '../support/schemas.js';

const SERVED = answered({ [USAGES]: [USAGE_CRD_OBJECT] });
const deletion = (rsp: RunFunctionResponse) => statusOf(rsp)['deletion'] as Obj;
const keysOf = (rsp: RunFunctionResponse) => Object.keys(rsp.desired?.resources ?? {});
const lastDumpKeys = (rsp: RunFunctionResponse) => keysOf(rsp).filter((k) => k.startsWith('last-dump-'));
const podOf = (rsp: RunFunctionResponse) => {
  const key = lastDumpKeys(rsp).find((k) => !k.includes('-holds-'));
  return key ? { key, pod: desiredOf(rsp, key)! } : undefined;
};
const again = (xr: Obj, rsp: RunFunctionResponse): Obj => ({ ...xr, status: statusOf(rsp) });
const events = (rsp: RunFunctionResponse, reason: string) =>
  rsp.results.filter((r) => r.severity === Severity.SEVERITY_NORMAL && r.reason === reason);

/**
 * The observed resources of `rsp`: the last-dump pod in `phase` (Running: both containers ready), and the
 * server's StatefulSet and Service marked in use by Crossplane's Usage controller unless `held` is false.
 */
function withPodRunning(rsp: RunFunctionResponse, opts: { phase?: string; held?: boolean } = {}): Obj[] {
  const { phase = 'Running', held = true } = opts;
  const name = (podOf(rsp)!.pod['metadata'] as Obj)['name'];
  return asObserved(rsp).map((o) => {
    const meta = o['metadata'] as Obj;
    if (meta['name'] === name && o['kind'] === 'Pod')
      return {
        ...o,
        status: {
          phase,
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Ready', status: phase === 'Running' ? 'True' : 'False' },
          ],
        },
      };
    if (held && ['StatefulSet', 'Service'].includes(String(o['kind'])) && meta['name'] === 'orders-db')
      return { ...o, metadata: { ...meta, labels: { ...(meta['labels'] as Obj), 'crossplane.io/in-use': 'true' } } };
    return o;
  });
}

describe('the last dump of a Database in a StatefulSet under Delete', () => {
  const xr = databaseXr({ deletionPolicy: 'Delete', storageGB: 20 });

  test('a waiting pod that dumps on its stop signal, restricted, with a grace period to dump and upload in', () => {
    const rsp = call(xr, [], SERVED);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    const { pod } = podOf(rsp)!;
    const meta = pod['metadata'] as Obj;
    assert.match(String(meta['name']), /^orders-db-last-dump-[0-9a-f]{8}$/);
    assert.equal(meta['namespace'], NAMESPACE);
    const spec = pod['spec'] as Obj;
    assert.equal(spec['terminationGracePeriodSeconds'], lastDumpGraceSeconds(20));
    assert.equal(spec['automountServiceAccountToken'], false);
    assert.deepEqual(restrictedViolations(spec), [], 'admitted where the restricted standard is enforced');
    const containers = spec['containers'] as Obj[];
    assert.deepEqual(
      containers.map((c) => c['name']),
      ['dump', 'upload'],
    );
    const [dump, upload] = containers.map((c) => (c['command'] as string[])[2]!);
    assert.match(dump!, /trap 'term=1' TERM INT/, 'the stop signal (INT in the postgres image) starts the dump');
    assert.match(dump!, /pg_dump /);
    assert.match(upload!, /trap 'sig=1' TERM INT/, 'the upload is not stopped by it: it only notes it');
    assert.match(upload!, /aws \$ep s3 cp/);
    const env = (c: Obj) =>
      Object.fromEntries((c['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));
    assert.equal(env(containers[1]!)['KEY'], 'orders/last-dump-uid-orde.dump');
    assert.equal(env(containers[1]!)['BUCKET'], 'team-a-backups');
    assert.equal(env(containers[0]!)['OUT'], env(containers[1]!)['IN'], 'the upload reads what the dump writes');
    // Waiting asks for little; the dump may use what a backup's last attempt has.
    assert.deepEqual((containers[0]!['resources'] as Obj)['requests'], { cpu: '10m', memory: '32Mi' });
    assert.deepEqual((containers[0]!['resources'] as Obj)['limits'], { memory: '1024Mi' });
  });

  test('Usages of the StatefulSet and the client Service, by the pod: the server stays until the dump is up', () => {
    const rsp = call(xr, [], SERVED);
    const { key, pod } = podOf(rsp)!;
    const podName = (pod['metadata'] as Obj)['name'];
    const server = desiredOf(rsp, `${key}-holds-server`)!;
    const service = desiredOf(rsp, `${key}-holds-service`)!;
    for (const [u, kind, name] of [
      [server, 'StatefulSet', 'orders-db'],
      [service, 'Service', 'orders-db'],
    ] as const) {
      assert.equal(u['kind'], 'Usage');
      const spec = u['spec'] as Obj;
      assert.deepEqual(spec['of'], {
        apiVersion: kind === 'Service' ? 'v1' : 'apps/v1',
        kind,
        resourceRef: { name },
      });
      assert.deepEqual(spec['by'], { apiVersion: 'v1', kind: 'Pod', resourceRef: { name: podName } });
      assert.equal(spec['replayDeletion'], false);
      assert.match(String(spec['reason']), new RegExp(`pod ${podName} takes the last dump of Database orders`));
      assertValidObject(u);
    }
    // The StatefulSet is the live one, and the Service the one applications reach (the dump's host).
    assert.equal((desiredOf(rsp, 'statefulset')!['metadata'] as Obj)['name'], 'orders-db');
    assert.equal((desiredOf(rsp, 'service')!['metadata'] as Obj)['name'], 'orders-db');
  });

  test('status.deletion names the dump beforehand; it says the pod stands only once it runs, and the event says it once', () => {
    const first = call(xr, [], SERVED);
    const said = deletion(first);
    const pod = String((podOf(first)!.pod['metadata'] as Obj)['name']);
    assert.deepEqual(said['lastDump'], {
      location: 's3://team-a-backups/orders/last-dump-uid-orde.dump',
      pod,
      standing: false,
    });
    assert.match(
      String(said['keeps']),
      new RegExp(
        `pod ${pod} takes a last dump when it is deleted, but the pod is not running yet: deleting now takes none`,
      ),
    );
    // Running, but nothing marks the server in use (Crossplane's webhooks off): not standing, and said so.
    const unheld = call(again(xr, first), withPodRunning(first, { held: false }), SERVED);
    assert.equal((deletion(unheld)['lastDump'] as Obj)['standing'], false);
    assert.match(
      String(deletion(unheld)['keeps']),
      /but Crossplane has not marked the server in use for it yet \(its Usage controller runs only with its webhooks on\): deleting now takes none/,
    );

    const running = call(again(xr, first), withPodRunning(first), SERVED);
    const now = deletion(running);
    assert.equal((now['lastDump'] as Obj)['standing'], true);
    assert.match(
      String(now['keeps']),
      new RegExp(
        `^Delete: deleting this Database deletes StatefulSet orders-db and its data volume; pod ${pod} first takes a last dump to s3://team-a-backups/orders/last-dump-uid-orde.dump \\(status.deletion.lastDump\\), and Crossplane's Usages keep the server up until it is uploaded\\. Its dumps in bucket team-a-backups stay too`,
      ),
    );
    assert.equal(events(running, 'DeletionKeeps').length, 1, 'the change is said');
    const next = call(again(xr, running), withPodRunning(running), SERVED);
    assert.equal(events(next, 'DeletionKeeps').length, 0, 'and said once');
  });

  test('what the pod runs changes (another store): a new pod under a new key replaces it', () => {
    const first = call(xr, [], SERVED);
    const moved = databaseXr({
      deletionPolicy: 'Delete',
      storageGB: 20,
      backup: { objectStore: { bucket: 'elsewhere', region: 'eu-west-1', credentialsSecretRef: { name: 'other' } } },
    });
    const rsp = call(again(moved, first), withPodRunning(first), SERVED);
    assert.notEqual(podOf(rsp)!.key, podOf(first)!.key);
    const name = (podOf(rsp)!.pod['metadata'] as Obj)['name'];
    for (const what of ['server', 'service']) {
      const spec = desiredOf(rsp, `${podOf(rsp)!.key}-holds-${what}`)!['spec'] as Obj;
      assert.equal(((spec['by'] as Obj)['resourceRef'] as Obj)['name'], name, `the ${what} is held by the new pod`);
    }
    const upload = ((podOf(rsp)!.pod['spec'] as Obj)['containers'] as Obj[])[1]!;
    assert.equal(
      (upload['env'] as Obj[]).find((e) => e['name'] === 'PARTIAL')?.['value'],
      `orders/last-dump-uid-orde.dump.${name}.partial`,
      'a temporary key of its own: the old pod may upload at the same time',
    );
    assert.equal(
      lastDumpKeys(rsp).filter((k) => lastDumpKeys(first).includes(k)).length,
      0,
      'the old pod and Usages go',
    );
    assert.equal((deletion(rsp)['lastDump'] as Obj)['location'], 's3://elsewhere/orders/last-dump-uid-orde.dump');
  });

  test('none where it cannot work or is not asked for; the old sentence stays true there', () => {
    const cases: [string, RunFunctionResponse][] = [
      ['Retain', call(databaseXr({ deletionPolicy: 'Retain' }), [], SERVED)],
      [
        'finalSnapshot false',
        call(databaseXr({ deletionPolicy: 'Delete', backup: { finalSnapshot: false } }), [], SERVED),
      ],
      ['backups off', call(databaseXr({ deletionPolicy: 'Delete', backup: { enabled: false } }), [], SERVED)],
      ['Usages not served', call(xr, [], answered({ [USAGES]: [] }))],
      ['the answer not in, nothing composed before', call(xr)],
      ['a claim', call(claimXr({ engine: 'postgres', storageGB: 20, deletionPolicy: 'Delete' }), [], SERVED)],
    ];
    for (const [why, rsp] of cases) {
      assert.equal(fatalOf(rsp), undefined, `${why}: ${fatalOf(rsp)?.message}`);
      assert.deepEqual(lastDumpKeys(rsp), [], `${why}: no last-dump pod or Usage`);
      assert.equal(deletion(rsp)?.['lastDump'], undefined, why);
    }
    assert.match(
      String(deletion(cases[3]![1])['keeps']),
      /no backup is taken at that moment \(this cluster serves no Crossplane Usages, which would hold the server up for a last dump\)/,
    );
    assert.match(
      String(deletion(cases[5]![1])['keeps']),
      /no backup is taken at that moment \(a claim's composite cannot hold its server for a last dump/,
    );
  });

  test('a pod that ended (evicted) is left out for a call and made anew; the Usages stay', () => {
    const first = call(xr, [], SERVED);
    const { key } = podOf(first)!;
    const evicted = call(again(xr, first), withPodRunning(first, { phase: 'Failed' }), SERVED);
    assert.equal(desiredOf(evicted, key), undefined, 'Crossplane deletes the ended pod');
    assert.ok(desiredOf(evicted, `${key}-holds-server`) && desiredOf(evicted, `${key}-holds-service`));
    assert.equal((deletion(evicted)['lastDump'] as Obj)['standing'], false);
    const next = call(again(xr, evicted), asObserved(evicted), SERVED);
    assert.ok(desiredOf(next, key), 'and makes it anew');
  });

  test('a store made for the Database: none, since the store goes with it; said why', () => {
    const made = databaseXr(
      { deletionPolicy: 'Delete', storageGB: 20, backup: { provision: { aws: { region: 'eu-west-1' } } } },
      { bare: true },
    );
    const rsp = call(made, [], SERVED);
    assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
    assert.deepEqual(lastDumpKeys(rsp), []);
    assert.equal(deletion(rsp)?.['lastDump'], undefined);
  });

  test('composed before and the answer not in: kept as it is, never flapping', () => {
    const first = call(xr, [], SERVED);
    const rsp = call(again(xr, first), asObserved(first));
    assert.deepEqual(lastDumpKeys(rsp).sort(), lastDumpKeys(first).sort());
  });
});
