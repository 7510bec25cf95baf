// Closed by default, under the Crossplane that users run: the test namespace
// enforces the restricted Pod Security Standard (the API server's PodSecurity
// admission judges each pod as the controllers create it), and the Widget's
// pods, the database's pod and the dump Job's pod are all created there; the
// Database's NetworkPolicy is accepted by the API server as composed; a
// Widget's host gets a cert-manager Certificate, and the url turns https only
// once it is Ready.
//
// Stand-ins, named so: kwok runs no containers (its pods are "Running" without
// an image pulled), so admission is what is real here, not the processes; no
// CNI here enforces NetworkPolicy, so what it admits is tested in
// test/unit/network-policy.test.ts; cert-manager is not installed (only its
// Certificate CRD, from ../shared/crds), so this test plays CERT-MANAGER,
// writing the Certificate's Ready condition, and plays the INGRESS
// CONTROLLER, writing the Ingress's address.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ControlPlane, controlPlaneSkipReason } from '../support/control-plane.js';
import {
  conditionOf,
  controlPlaneForSuite,
  ensureNamespace,
  eventually,
  failedCreates,
  RESTRICTED_NAMESPACE_LABELS,
  readyAndSynced,
} from '../support/e2e.js';
import { repoRoot, SHARED_CRDS } from '../../dev/infra/paths.js';
import { markIssued } from '../support/cert-manager-stand-in.js';

const skip = controlPlaneSkipReason('e2e: closed by default under real Crossplane');
const NS = 'team-a';

let cp: ControlPlane;
const ref = (apiVersion: string, kind: string, name: string) => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS },
});
const get = (apiVersion: string, kind: string, name: string) => cp.client.getObj(ref(apiVersion, kind, name));
const pods = (selector: string) => cp.client.listObjs('v1', 'Pod', NS, selector);

describe('closed by default under real Crossplane', { skip }, () => {
  before(async () => {
    cp = await controlPlaneForSuite();
    await ensureNamespace(cp, NS);
    await cp.kubectl(['apply', '-f', join(SHARED_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml')]);
    await cp.client.waitEstablished('certificates.cert-manager.io');
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: Secret
metadata: {name: backup-store, namespace: ${NS}}
stringData: {AWS_ACCESS_KEY_ID: AKIAE2ESTORE0000001, AWS_SECRET_ACCESS_KEY: e2e-store-key-0123456789}
`,
    });
  });
  after(async () => {
    await cp?.stop();
  });

  test('the namespace enforces restricted: a pod that may run as root is refused by the API server', async () => {
    const ns = await cp.client.getObj({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (const [k, v] of Object.entries(RESTRICTED_NAMESPACE_LABELS)) assert.equal(ns?.['metadata']['labels'][k], v);
    const refused = await cp.kubectl(['run', 'rooted', '-n', NS, '--image=busybox', '--restart=Never'], {
      allowFail: true,
    });
    assert.notEqual(refused.code, 0, 'the pod was admitted');
    assert.match(refused.stderr, /violates PodSecurity "restricted:latest"/);
  });

  test('a Widget with a team image: its pods are created; over HTTPS once its Certificate is Ready', async (t) => {
    await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: example.com/v1
kind: Widget
metadata: {name: shop, namespace: ${NS}}
spec:
  size: 2
  image: ghcr.io/example/shop:1.4.2
  host: shop.example.org
  tls: {clusterIssuer: letsencrypt-staging}
`,
    });
    const running = await eventually(
      'two Running pods of Widget shop',
      async () => {
        const p = await pods('app.kubernetes.io/instance=shop');
        return p.filter((x) => x['status']?.['phase'] === 'Running').length === 2 ? p : undefined;
      },
      90_000,
    );
    assert.equal(running[0]!['spec']['securityContext']['runAsNonRoot'], true);
    const cert = await eventually('Certificate shop', () => get('cert-manager.io/v1', 'Certificate', 'shop'));
    assert.deepEqual(cert['spec']['issuerRef'], {
      group: 'cert-manager.io',
      kind: 'ClusterIssuer',
      name: 'letsencrypt-staging',
    });
    const ingress = await eventually('Ingress shop', () => get('networking.k8s.io/v1', 'Ingress', 'shop'));
    assert.deepEqual(ingress['spec']['tls'], [{ hosts: ['shop.example.org'], secretName: 'shop-tls' }]);
    // INGRESS CONTROLLER STAND-IN: the address.
    await cp.client.mergeStatus(ingress, { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } });
    const waiting = await eventually(
      'Widget shop waiting for its certificate',
      async () => {
        const w = await get('example.com/v1', 'Widget', 'shop');
        return String(w?.['status']?.['message'] ?? '').startsWith('waiting for the certificate') ? w : undefined;
      },
      90_000,
    );
    t.diagnostic(String(waiting['status']['message']));
    assert.equal(waiting['status']['url'], 'http://shop.example.org');
    assert.equal(conditionOf(waiting, 'Ready')?.['status'], 'False');
    // CERT-MANAGER STAND-IN: issued.
    await markIssued(cp.client, cert);
    const served = await eventually(
      'Widget shop Ready over https',
      async () => {
        const w = await get('example.com/v1', 'Widget', 'shop');
        return readyAndSynced(w) && w?.['status']?.['url'] === 'https://shop.example.org' ? w : undefined;
      },
      90_000,
    );
    assert.equal(served['status']['ready'], true);
    assert.deepEqual(await failedCreates(cp, NS), []);
  });

  test('an in-cluster Database and its dump Job: pods created; its NetworkPolicy accepted as composed', async () => {
    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'database', 'cluster.yaml')]);
    await eventually(
      'Database orders Ready',
      async () => {
        const d = await get('example.com/v1', 'Database', 'orders');
        return readyAndSynced(d) && d?.['status']?.['phase'] === 'Ready' ? d : undefined;
      },
      120_000,
    );
    const [server] = await pods('app.kubernetes.io/name=database,app.kubernetes.io/instance=orders');
    assert.ok(server, 'the server pod exists');
    assert.deepEqual(
      {
        runAsUser: server['spec']['securityContext']['runAsUser'],
        fsGroup: server['spec']['securityContext']['fsGroup'],
      },
      { runAsUser: 999, fsGroup: 999 },
    );
    const policy = await get('networking.k8s.io/v1', 'NetworkPolicy', 'orders-db');
    assert.ok(policy, 'the NetworkPolicy is composed');
    assert.deepEqual(policy['spec']['podSelector']['matchLabels'], {
      'app.kubernetes.io/name': 'database',
      'app.kubernetes.io/instance': 'orders',
    });
    assert.deepEqual(policy['spec']['ingress'][0], {
      from: [{ podSelector: {} }],
      ports: [{ protocol: 'TCP', port: 5432 }],
    });

    await cp.kubectl(['apply', '-f', join(repoRoot, 'examples', 'databasebackup', 'before-migration.yaml')]);
    const [dump] = await eventually(
      'a pod of the dump Job',
      async () => {
        const p = await pods(
          'app.kubernetes.io/name=database-backup,app.kubernetes.io/instance=orders-before-migration',
        );
        return p.length > 0 ? p : undefined;
      },
      90_000,
    );
    assert.equal(dump!['spec']['securityContext']['runAsNonRoot'], true);
    assert.deepEqual(await failedCreates(cp, NS), []);
  });
});
