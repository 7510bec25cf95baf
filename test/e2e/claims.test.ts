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
    // Crossplane's webhooks on, as its Helm chart runs them: Usages order deletions of claims too.
    cp = await controlPlaneForSuite({ claims: true, webhooks: true });
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
    // COLOR (asked for) and LIVE (served) since issue 26; a claim has no Responsive condition, its column is blank.
    assert.deepEqual(rows[1]!.slice(0, 7), [
      'my-widget',
      'blue',
      'blue',
      '42',
      '42',
      'http://my-widget.team-a.svc.cluster.local:8080',
      'True',
    ]);
    assert.equal(rows[1]![7], 'True');
  });

  test('a field the installed Object CRD lacks: Fatal naming the field and the package that installed it, nothing applied; composed once the CRD has it', async (t) => {
    // An older provider-kubernetes, played by taking spec.managementPolicies out of the schema its package
    // installed. Crossplane v2 installs a managed resource's CRD from a ManagedResourceDefinition and puts any
    // change to the CRD back, so the definition is what changes. Crossplane answers required schemas from what
    // the API server serves, which is then this. Crossplane caches the served schemas and forgets them on every
    // CRD event; the API server republishes a changed CRD's schema a moment after the change, so a fetch in
    // between keeps the old one until the next CRD event: wait for the server's, then make that event (an
    // annotation), as the next CRD change would.
    const ref = {
      apiVersion: 'apiextensions.crossplane.io/v1alpha1',
      kind: 'ManagedResourceDefinition',
      metadata: { name: 'objects.kubernetes.crossplane.io' },
    };
    const served = (withField: boolean) =>
      eventually(`the served Object schema ${withField ? 'with' : 'without'} spec.managementPolicies`, async () => {
        const raw = await cp.kubectl(['get', '--raw', '/openapi/v3/apis/kubernetes.crossplane.io/v1alpha2']);
        const doc = JSON.parse(raw.stdout) as Json;
        const object = Object.values(doc['components']['schemas'] as Record<string, Json>).find(
          (c) => c['x-kubernetes-group-version-kind']?.[0]?.['kind'] === 'Object',
        );
        const has = object?.['properties']?.['spec']?.['properties']?.['managementPolicies'] !== undefined;
        if (has !== withField) return undefined;
        await cp.kubectl([
          'annotate',
          'crd',
          ref.metadata.name,
          `test.function-platform.dev/touched=${Date.now()}`,
          '--overwrite',
        ]);
        return true;
      });
    const crd = (await cp.client.getObj(ref))!;
    const older = structuredClone(crd);
    const v1alpha2 = (older['spec']['versions'] as Json[]).find((v) => v['name'] === 'v1alpha2')!;
    delete v1alpha2['schema']['openAPIV3Schema']['properties']['spec']['properties']['managementPolicies'];
    await cp.client.updateObj(older);
    await served(false);
    try {
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: held, namespace: ${NS}}\nspec: {color: blue, size: 1}\n`,
      });
      const xrName = String(
        (
          await eventually(
            'the claim held bound',
            async () => (await claim('Widget', 'held'))?.['spec']?.['resourceRef'],
          )
        )['name'],
      );
      const refused = await eventually(
        'XWidget of held refused',
        async () => {
          const xr = await cp.client.getObj({
            apiVersion: 'example.com/v1',
            kind: 'XWidget',
            metadata: { name: xrName },
          });
          const synced = conditionOf(xr, 'Synced');
          return synced?.['status'] === 'False' &&
            /has no field spec\.managementPolicies/.test(String(synced['message']))
            ? synced
            : undefined;
        },
        90_000,
      );
      t.diagnostic(String(refused['message']));
      assert.match(
        String(refused['message']),
        /^cannot compose resources: .*Object kubernetes\.crossplane\.io\/v1alpha2 in this cluster has no field spec\.managementPolicies \(resources deployment-blue, service\); its CRD was installed by crossplane-contrib-provider-kubernetes v1\.0\.0, older than this function composes for: upgrade it\. Nothing was applied\.$/,
      );
      // The API server answers 429 for a moment while it re-initializes the storage of a changed CRD.
      const objects = await eventually('the Objects listed', () =>
        cp.client.listObjs('kubernetes.crossplane.io/v1alpha2', 'Object'),
      );
      assert.deepEqual(
        objects
          .filter((o) => o['metadata']['labels']?.['crossplane.io/composite'] === xrName)
          .map((o) => o['metadata']['name']),
        [],
        'nothing composed while refused',
      );
    } finally {
      const now = (await cp.client.getObj(ref))!;
      await cp.client.updateObj({ ...now, spec: crd['spec'] });
    }
    await served(true);
    const restored = Date.now();
    await readyClaim('Widget', 'held');
    t.diagnostic(`CRD restored to the claim Ready: ${Date.now() - restored} ms`);
    await cp.kubectl(['delete', 'widget', 'held', '-n', NS, '--wait=false']);
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

  test('a DatabaseBackup claim holds its Database claim while it is taken: the deletion is refused, naming it; deleted, it holds nothing', async (t) => {
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: orders-hold, namespace: ${NS}}\nspec: {databaseRef: {name: orders}}\n`,
    });
    const inUse = async () => (await claim('Database', 'orders'))?.['metadata']?.['labels']?.['crossplane.io/in-use'];
    // The Usage travels in an Object to the claim's namespace, where provider-kubernetes makes it.
    await eventually(
      'Database claim orders marked in use',
      async () => ((await inUse()) === 'true' ? true : undefined),
      90_000,
    );
    const refused = await cp.kubectl(['delete', 'database', 'orders', '-n', NS, '--wait=false'], { allowFail: true });
    t.diagnostic(`kubectl delete database orders, while it is backed up: ${refused.stderr.trim().slice(0, 400)}`);
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.match(refused.stderr, /with reason: "DatabaseBackup orders-hold is taking a backup of it/);
    assert.ok(await claim('Database', 'orders'), 'the claim stays');
    // kwok runs no dump: the backup never ends here. Deleted, it lets go.
    await cp.kubectl(['delete', 'databasebackup', 'orders-hold', '-n', NS, '--wait=false']);
    await eventually(
      'Database claim orders no longer in use',
      async () => ((await inUse()) ? undefined : true),
      90_000,
    );
  });

  // Stand-in, named so: no CSI driver runs here, so this test plays the CSI RESIZER, growing the volume and
  // writing the claim's status as the external resizer and the kubelet would once the claim asks for more.
  async function csiResizerStandIn(claimName: string, to: string): Promise<void> {
    const pvc = await eventually(`claim ${claimName} asking for ${to}`, async () => {
      const c = await cp.client.getObj({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claimName, namespace: NS },
      });
      return c?.['spec']?.['resources']?.['requests']?.['storage'] === to ? c : undefined;
    });
    const pv = await cp.client.getObj({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: String(pvc['spec']['volumeName']) },
    });
    await cp.client.updateObj({ ...pv!, spec: { ...pv!['spec'], capacity: { storage: to } } });
    await cp.client.mergeStatus(pvc, { capacity: { storage: to }, conditions: [], allocatedResourceStatuses: null });
  }

  test('the Database grows from 20 to 40 GB: its claim grows through provider-kubernetes, the StatefulSet is untouched; deleting it under Retain keeps the claim', async (t) => {
    const started = Date.now();
    const sts = () =>
      cp.client.getObj({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'orders-db', namespace: NS } });
    const before = await sts();
    await cp.kubectl(['patch', 'database', 'orders', '-n', NS, '--type', 'merge', '-p', '{"spec":{"storageGB":40}}']);
    // The function composes an Object that may only observe and update the claim; provider-kubernetes asks for 40Gi.
    const object = await eventually('the resize Object', async () => {
      const objects = await cp.client.listObjs('kubernetes.crossplane.io/v1alpha2', 'Object');
      return objects.find((o) => o['spec']['forProvider']['manifest']['kind'] === 'PersistentVolumeClaim');
    });
    assert.deepEqual(object['spec']['managementPolicies'], ['Observe', 'Update']);
    const updating = await eventually(
      'the claim says the volume grows',
      async () => {
        const c = await claim('Database', 'orders');
        return c?.['status']?.['phase'] === 'Updating' ? c : undefined;
      },
      90_000,
    );
    assert.match(String(updating['status']['message']), /^volume data-orders-db-0: 20Gi → 40Gi \(/);
    await csiResizerStandIn('data-orders-db-0', '40Gi');
    t.diagnostic(`patch to the claim asking 40Gi and the resizer done: ${Date.now() - started} ms`);
    const grown = await eventually(
      'the Database Ready at 40 GB',
      async () => {
        const c = await claim('Database', 'orders');
        return c?.['status']?.['phase'] === 'Ready' && c['status']['storage']?.['capacityGB'] === 40 ? c : undefined;
      },
      90_000,
    );
    t.diagnostic(`patch to Ready at 40 GB: ${Date.now() - started} ms`);
    // The claim syncer copies status fields and conditions as Crossplane writes them, in two writes.
    const resized = await eventually('StorageResized on the claim', async () => {
      const c = await claim('Database', 'orders');
      return conditionOf(c, 'StorageResized')?.['status'] === 'True' ? c : undefined;
    });
    assert.equal(conditionOf(resized, 'StorageResized')?.['status'], 'True');
    assert.equal(grown['status']['storage']['capacityGB'], 40);
    const after = await sts();
    assert.deepEqual(
      after?.['spec']['volumeClaimTemplates'],
      before?.['spec']['volumeClaimTemplates'],
      'the StatefulSet is untouched',
    );
    assert.equal(after?.['metadata']['generation'], before?.['metadata']['generation']);

    await cp.kubectl(['delete', 'database', 'orders', '-n', NS, '--wait=false']);
    await eventually('the StatefulSet gone', async () => ((await sts()) ? undefined : true), 120_000);
    const kept = await cp.client.getObj({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-orders-db-0', namespace: NS },
    });
    assert.equal(kept?.['spec']?.['resources']?.['requests']?.['storage'], '40Gi', 'the grown claim is kept (Retain)');
    assert.equal(kept?.['metadata']?.['deletionTimestamp'], undefined);
  });

  test('on a StorageClass that cannot grow volumes, nothing changes and the Database says which class and sizes', async () => {
    // New claims get the class `fixed` while this Database is made.
    const setDefault = (name: string, value: string) =>
      cp.kubectl([
        'annotate',
        'storageclass',
        name,
        `storageclass.kubernetes.io/is-default-class=${value}`,
        '--overwrite',
      ]);
    await setDefault('standard', 'false');
    await setDefault('fixed', 'true');
    try {
      await cp.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: example.com/v1\nkind: Database\nmetadata: {name: ledger, namespace: ${NS}}\nspec: {engine: postgres, storageGB: 20, backup: {enabled: false}}\n`,
      });
      await readyClaim('Database', 'ledger');
    } finally {
      await setDefault('fixed', 'false');
      await setDefault('standard', 'true');
    }
    await cp.kubectl(['patch', 'database', 'ledger', '-n', NS, '--type', 'merge', '-p', '{"spec":{"storageGB":40}}']);
    const refused = await eventually(
      'the Database says the class cannot grow',
      async () => {
        const c = await claim('Database', 'ledger');
        return conditionOf(c, 'StorageResized')?.['reason'] === 'ExpansionNotAllowed' ? c : undefined;
      },
      90_000,
    );
    assert.match(
      String(conditionOf(refused, 'StorageResized')?.['message']),
      /^StorageClass fixed does not allow volume expansion: volume data-ledger-db-0 stays at 20Gi, spec\.storageGB asks 40Gi/,
    );
    const pvc = await cp.client.getObj({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-ledger-db-0', namespace: NS },
    });
    assert.equal(pvc?.['spec']?.['resources']?.['requests']?.['storage'], '20Gi');
  });
});
