// Claims mode under the Crossplane that users run: Crossplane v2 with the
// legacy XRDs of package/configuration-claims, provider-kubernetes v0.17.1
// running out of cluster. A claim makes a cluster-scoped composite, the
// function wraps the workloads in provider-kubernetes Objects that target the
// claim's namespace, the real controllers roll them out, and the status comes
// back to the claim.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, controlPlaneSkipReason, secretData } from '../support/control-plane.js';
import {
  conditionOf,
  controlPlaneForSuite,
  ensureNamespace,
  eventually,
  readyAndSynced,
  table,
} from '../support/e2e.js';
import { repoRoot } from '../../dev/infra/paths.js';

const skip = controlPlaneSkipReason('e2e: claims under real Crossplane', { claims: true });
const NS = 'team-a';

let cp: ControlPlane;
const claim = (kind: string, name: string) =>
  cp.client.getObj({ apiVersion: 'example.com/v1', kind, metadata: { name, namespace: NS } });

async function readyClaim(kind: string, name: string, timeoutMs = 120_000): Promise<Json> {
  return eventually(
    `${kind} claim ${name} Ready`,
    async () => {
      const c = await claim(kind, name);
      return readyAndSynced(c) && c?.['status']?.['ready'] === true ? c : undefined;
    },
    timeoutMs,
  );
}

describe('claims under real Crossplane, with provider-kubernetes', { skip }, () => {
  before(async () => {
    cp = await controlPlaneForSuite({ claims: true });
    await ensureNamespace(cp, NS);
  });
  after(async () => {
    await cp?.stop();
  });

  test('a Widget claim: claim → composite → Objects → a Deployment in the claim’s namespace; status back on the claim', async (t) => {
    const started = Date.now();
    await cp.kubectl(['apply', '-n', NS, '-f', join(repoRoot, 'examples', 'widget', 'seed.yaml')]);
    const c = await readyClaim('Widget', 'my-widget');
    t.diagnostic(`apply to Ready: ${Date.now() - started} ms`);
    const xrName = String(c['spec']['resourceRef']['name']);
    const xr = await cp.client.getObj({ apiVersion: 'example.com/v1', kind: 'XWidget', metadata: { name: xrName } });
    assert.equal(xr?.['metadata']?.['labels']?.['crossplane.io/claim-namespace'], NS);
    const objects = await cp.client.listObjs('kubernetes.crossplane.io/v1alpha2', 'Object');
    const ours = objects.filter((o) => o['metadata']['labels']?.['crossplane.io/composite'] === xrName);
    assert.deepEqual(ours.map((o) => o['spec']['forProvider']['manifest']['kind']).sort(), [
      'Deployment',
      'PodDisruptionBudget',
      'Service',
    ]);
    for (const o of ours)
      assert.equal(conditionOf(o, 'Ready')?.['status'], 'True', `Object ${o['metadata']['name']} Ready`);
    const dep = await cp.client.getObj({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'my-widget-blue', namespace: NS },
    });
    assert.equal(dep?.['status']?.['availableReplicas'], 42);
    assert.equal(c['status']['activeColor'], 'blue');
    assert.equal(c['status']['url'], 'http://my-widget.team-a.svc.cluster.local:8080');
    assert.equal(conditionOf(c, 'WidgetReady')?.['status'], 'True', 'the custom condition reaches the claim');
    const rows = table((await cp.kubectl(['get', 'widgets', '-n', NS])).stdout);
    assert.deepEqual(rows[1]!.slice(0, 7), [
      'my-widget',
      'blue',
      '42',
      '42',
      'http://my-widget.team-a.svc.cluster.local:8080',
      'True',
      'True',
    ]);
  });

  test('a Database claim in the cluster: StatefulSet and Secrets in the claim’s namespace, Ready on the claim', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'database', 'cluster.yaml')]);
    const c = await readyClaim('Database', 'orders');
    assert.equal(c['status']['phase'], 'Ready');
    assert.equal(c['status']['connectionSecret'], 'orders-db-connection');
    const sts = await cp.client.getObj({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'orders-db', namespace: NS },
    });
    assert.equal(sts?.['status']?.['readyReplicas'], 1);
    const connection = await secretData(cp.client, NS, 'orders-db-connection');
    const credentials = await secretData(cp.client, NS, 'orders-db-credentials');
    assert.equal(connection?.['password']?.toString(), credentials?.['password']?.toString());
  });
});
