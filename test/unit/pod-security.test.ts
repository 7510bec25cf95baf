// Every pod the product composes is admitted in a namespace that enforces the
// restricted Pod Security Standard (pod-security.kubernetes.io/enforce:
// restricted): the Widget's Deployments, the database StatefulSet, the dump,
// restore and removal Jobs, and any pod template in any example scenario's
// render. The server images run as their official user (999) with the data
// volume given to that group; the checks are the admission's
// (test/support/pod-security.ts). Under real Crossplane the API server itself
// judges them (test/e2e/pod-security.test.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { runFunction } from '../../src/function.js';
import { inner as unwrapped } from '../support/database.js';
import { removeJob } from '../../src/blueprints/lifecycle/jobs.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects, runWithRequirements } from '../../src/render.js';
import {
  answered,
  asObserved,
  call,
  completedBackup,
  databaseXr,
  desiredOf,
  fatalOf,
  NAMESPACE,
} from '../support/database.js';
import { repoRoot } from '../support/function-process.js';
import { Loop } from '../support/loop.js';
import { healthyStatus } from '../support/observed-state.js';
import { restrictedViolations } from '../support/pod-security.js';

const podSpecOf = (workload: Obj): Obj => ((workload['spec'] as Obj)['template'] as Obj)['spec'] as Obj;

/** Every pod spec an object carries: a Pod's, a workload's template, a CronJob's Job template. */
function podSpecsIn(object: Obj): Obj[] {
  const o = unwrapped(object) ?? object;
  const spec = o['spec'] as Obj | undefined;
  if (!spec) return [];
  if (o['kind'] === 'Pod') return [spec];
  const out: Obj[] = [];
  const template = spec['template'] as Obj | undefined;
  if (template?.['spec'] && typeof template['spec'] === 'object' && 'containers' in (template['spec'] as Obj))
    out.push(template['spec'] as Obj);
  const jobTemplate = (spec['jobTemplate'] as Obj | undefined)?.['spec'] as Obj | undefined;
  if (jobTemplate) out.push(...podSpecsIn({ kind: 'Job', spec: jobTemplate }));
  return out;
}

function assertRestricted(what: string, pod: Obj): void {
  assert.deepEqual(restrictedViolations(pod), [], `${what} would be refused by enforce=restricted`);
}

describe('every composed pod is admitted under the restricted Pod Security Standard', () => {
  test('the check itself refuses what the admission refuses', () => {
    const ok = {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        { name: 'c', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } },
      ],
    };
    assert.deepEqual(restrictedViolations(ok), []);
    const c = ok.containers[0]!;
    for (const [bad, named] of [
      [{ ...ok, securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, /runAsNonRoot/],
      [{ ...ok, securityContext: { runAsNonRoot: true } }, /seccompProfile/],
      [
        { ...ok, containers: [{ ...c, securityContext: { capabilities: { drop: ['ALL'] } } }] },
        /allowPrivilegeEscalation/,
      ],
      [{ ...ok, containers: [{ ...c, securityContext: { allowPrivilegeEscalation: false } }] }, /drop lacks ALL/],
      [{ ...ok, volumes: [{ name: 'h', hostPath: { path: '/' } }] }, /hostPath/],
      [{ ...ok, hostNetwork: true }, /hostNetwork/],
      [{ ...ok, securityContext: { ...ok.securityContext, runAsUser: 0 } }, /runAsUser=0/],
    ] as const)
      assert.match(restrictedViolations(bad as Obj).join('; '), named);
  });

  test("the Widget's Deployment, with the default image and with a team's own", () => {
    for (const image of [undefined, 'ghcr.io/example/shop:1.4.2']) {
      const loop = new Loop({
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'shop', namespace: NAMESPACE },
        spec: { size: 2, ...(image ? { image } : {}) },
      });
      loop.call();
      const pod = podSpecOf(loop.desired('deployment-blue')!);
      assertRestricted(`Widget (${image ?? 'default image'})`, pod);
      const sc = pod['securityContext'] as Obj;
      assert.equal(sc['runAsNonRoot'], true);
      // The default image is ours to pin; a team's runs as its own numeric USER, which the kubelet verifies.
      assert.equal(sc['runAsUser'], image ? undefined : 65532);
    }
  });

  test('the database StatefulSet runs as the official image’s user, and its data volume is given to that group', () => {
    for (const engine of ['postgres', 'mysql']) {
      const rsp = call(databaseXr({ engine, storageGB: 20 }));
      assert.equal(fatalOf(rsp), undefined);
      const pod = podSpecOf(desiredOf(rsp, 'statefulset')!);
      assertRestricted(`${engine} StatefulSet`, pod);
      // postgres (Debian) and mysql (Oracle Linux) official images both name their user with uid and gid 999.
      assert.deepEqual(
        {
          ...(pod['securityContext'] as Obj),
        },
        {
          runAsNonRoot: true,
          runAsUser: 999,
          runAsGroup: 999,
          fsGroup: 999,
          fsGroupChangePolicy: 'OnRootMismatch',
          seccompProfile: { type: 'RuntimeDefault' },
        },
      );
      assert.deepEqual(
        (pod['volumes'] as Obj[] | undefined) ?? [],
        [],
        'the data volume comes from the claim template, no hostPath',
      );
    }
  });

  test('the dump Job, the restore Job and the removal Job', () => {
    const backup = call(
      {
        apiVersion: 'example.com/v1',
        kind: 'DatabaseBackup',
        metadata: { name: 'orders-before-migration', namespace: NAMESPACE, uid: 'uid-b' },
        spec: { databaseRef: { name: 'orders' } },
      },
      [],
      answered({ database: [databaseXr({ engine: 'postgres', storageGB: 20 })] }),
    );
    const dump = desiredOf(backup, 'dump-1');
    assert.ok(dump, 'the dump Job is composed');
    assertRestricted('dump Job', podSpecOf(dump));

    const copy = databaseXr(
      { engine: 'postgres', storageGB: 20, restore: { fromBackup: { name: 'orders-db-202612020300' } } },
      { name: 'orders-copy' },
    );
    const found = answered({ 'restore-backup': [completedBackup('orders-db-202612020300', 'orders')] });
    const waiting = call(copy, [], found);
    const observed = asObserved(waiting, (_key, obj) => healthyStatus(obj));
    for (const o of observed) if (o['kind'] === 'Service') (o['spec'] as Obj)['clusterIP'] ??= '10.96.0.10';
    const restore = desiredOf(call({ ...copy, status: { phase: 'Restoring' } }, observed, found), 'restore');
    assert.ok(restore, 'the restore Job is composed');
    assertRestricted('restore Job', podSpecOf(restore));

    const removal = removeJob(
      'orders-db-202611010300-remove',
      NAMESPACE,
      'orders',
      { bucket: 'b', region: 'eu-west-1', credentialsSecretRef: { name: 'backup-store' } },
      's3://b/orders/orders-db-202611010300.dump',
    );
    assertRestricted('removal Job', podSpecOf(removal));
    for (const job of [dump, restore, removal])
      assert.deepEqual(
        (podSpecOf(job)['volumes'] as Obj[]).map((v) => Object.keys(v).sort()),
        [['emptyDir', 'name']],
        'scratch space only',
      );
  });

  test('every pod template in every example scenario’s render', () => {
    const examples = join(repoRoot, 'examples');
    const scenarios = parse(readFileSync(join(examples, 'scenarios.yaml'), 'utf8')) as Array<{
      xr: string;
      required?: string;
      observed: string[];
    }>;
    let pods = 0;
    for (const s of scenarios) {
      const [xr] = readYamlObjects(join(examples, s.xr));
      for (const file of s.observed) {
        const required = s.required ? readYamlObjects(join(examples, s.required)) : [];
        const observed = readYamlObjects(join(examples, file));
        const rsp = runWithRequirements((req) => runFunction(req), buildRequest(xr!, observed), required);
        // A workload kept exactly as observed (the old color during a cutover) is not composed anew: the fixtures
        // write it without the fields this check reads.
        const seen = new Set(observed.map((o) => JSON.stringify(podSpecsIn(o))));
        for (const [key, res] of Object.entries(rsp.desired?.resources ?? {}))
          for (const pod of podSpecsIn(res.resource as Obj)) {
            if (seen.has(JSON.stringify([pod]))) continue;
            pods++;
            assertRestricted(`${s.xr} with ${file}: ${key}`, pod);
          }
      }
    }
    assert.ok(pods >= 10, `pod templates seen: ${pods}`);
  });
});
