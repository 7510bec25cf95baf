// The packages as Crossplane's package manager installs them: the control
// plane (test/support/control-plane.ts) pushes the Function (here the complete
// package, its runtime image built without a daemon and embedded), the Configuration
// and stand-in provider packages to its registry, sends the published prefixes
// there with ImageConfigs, and runs `crossplane xpkg install` for the Function
// and the Configuration. Here: what the package manager made of that (the
// dependencies it resolved, the CRDs it installed, the rewrites it applied),
// then the Configuration upgraded from v0.1.0 to v0.1.1, whose Widget XRD
// renames a printer column, with a Widget that exists and must keep working.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../../dev/infra/paths.js';
import type { Json } from '../support/apiserver.js';
import {
  buildAndPush,
  type ControlPlane,
  controlPlaneSkipReason,
  FUNCTION_NAME,
  FUNCTION_VERSION,
  PUBLISHED_PREFIX,
} from '../support/control-plane.js';
import {
  conditionOf,
  controlPlaneForSuite,
  ensureNamespace,
  eventually,
  readyAndSynced,
  table,
} from '../support/e2e.js';
import { buildFunctionPackage, buildRuntimeImage, imageLayers, imageSkipReason } from '../support/image-root.js';
import { toolPath } from '../support/tools.js';

const SUITE = 'e2e: the packages installed by Crossplane’s package manager';
const skip = controlPlaneSkipReason(SUITE) ?? imageSkipReason(SUITE);
const NS = 'team-a';

let cp: ControlPlane;

describe('the packages installed by Crossplane’s package manager', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'fp-install-'));
  const image = join(dir, 'runtime.tar');
  before(async () => {
    buildRuntimeImage(image);
    const xpkg = join(dir, 'function-platform.xpkg');
    buildFunctionPackage(image, xpkg);
    cp = await controlPlaneForSuite({ functionPackage: xpkg });
    await ensureNamespace(cp, NS);
  });
  after(async () => {
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the Function package in the registry is the complete one: the runtime image’s layers, then its own', () => {
    const manifest = JSON.parse(
      execFileSync(
        toolPath('crane'),
        ['manifest', `${cp.registry}/function-platform/${FUNCTION_NAME}:${FUNCTION_VERSION}`],
        {
          encoding: 'utf8',
        },
      ),
    ) as { layers: Array<{ digest: string }> };
    const pushed = manifest.layers.map((l) => l.digest);
    const runtime = imageLayers(image).map((file) => `sha256:${file.replace(/\.tar\.gz$/, '')}`);
    assert.deepEqual(pushed.slice(0, runtime.length), runtime);
  });

  test('the Function and the Configuration came from the local registry through the ImageConfig', async () => {
    for (const [kind, name] of [
      ['FunctionRevision', FUNCTION_NAME],
      ['ConfigurationRevision', cp.configuration],
    ] as const) {
      const revs = await cp.client.listObjs(
        'pkg.crossplane.io/v1',
        kind,
        undefined,
        `pkg.crossplane.io/package=${name}`,
      );
      assert.equal(revs.length, 1, `${kind} of ${name}`);
      const rev = revs[0]!;
      assert.match(String(rev['spec']['image']), new RegExp(`^${PUBLISHED_PREFIX.replace(/\./g, '\\.')}`));
      assert.match(String(rev['status']['resolvedImage']), new RegExp(`^${cp.registry}/function-platform/`));
      assert.deepEqual(rev['status']['appliedImageConfigRefs'], [
        { name: 'function-platform', reason: 'RewriteImage' },
      ]);
      assert.equal(conditionOf(rev, 'RevisionHealthy')?.['status'], 'True');
      // Issue 32: Crossplane read what the package says it serves (it checks composition for a Composition).
      if (kind === 'FunctionRevision') assert.deepEqual(rev['status']['capabilities'], ['composition', 'operation']);
    }
  });

  test('the Configuration’s provider dependencies resolved to the stand-ins, which installed the managed resources’ CRDs', async () => {
    const providers = await cp.client.listObjs('pkg.crossplane.io/v1', 'Provider');
    const sources = providers.map((p) => String(p['spec']['package'])).sort();
    assert.deepEqual(sources, [
      'xpkg.crossplane.io/crossplane-contrib/provider-aws-iam:v2.0.0',
      'xpkg.crossplane.io/crossplane-contrib/provider-aws-rds:v2.0.0',
      'xpkg.crossplane.io/crossplane-contrib/provider-aws-s3:v2.0.0',
      'xpkg.crossplane.io/crossplane-contrib/provider-kubernetes:v1.0.0',
    ]);
    for (const p of providers) assert.equal(conditionOf(p, 'Healthy')?.['status'], 'True', p['metadata']['name']);
    const revs = await cp.client.listObjs('pkg.crossplane.io/v1', 'ProviderRevision');
    for (const rev of revs) {
      assert.match(String(rev['metadata']['annotations']?.['meta.crossplane.io/description']), /^STAND-IN for /);
      assert.match(String(rev['status']['resolvedImage']), new RegExp(`^${cp.registry}/stand-ins/crossplane-contrib/`));
    }
    const lock = await cp.client.getObj({
      apiVersion: 'pkg.crossplane.io/v1beta1',
      kind: 'Lock',
      metadata: { name: 'lock' },
    });
    assert.equal(((lock?.['packages'] ?? []) as Json[]).length, 6, 'the Function, the Configuration, four providers');
    // The namespaced RDS instance's CRD, made by the package manager, not by this test.
    const crd = await cp.client.waitEstablished('instances.rds.aws.m.upbound.io');
    assert.ok(
      (crd['metadata']['ownerReferences'] as Json[] | undefined)?.some((o) =>
        ['ManagedResourceDefinition', 'ProviderRevision'].includes(String(o['kind'])),
      ),
      JSON.stringify(crd['metadata']['ownerReferences']),
    );
    // What a platform team sees (printed for the record).
    console.log((await cp.kubectl(['get', 'functions,configurations,providers'])).stdout);
    const get = await cp.kubectl(['get', 'widgets,databases', '-n', NS]);
    assert.match(get.stdout + get.stderr, /No resources found in team-a namespace/);
  });

  test('upgraded to v0.1.1 (a printer column renamed): the XRD rolls forward, the Widget keeps working', async () => {
    await cp.kubectl(['apply', '-n', NS, '-f', '-'], {
      input: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: kept\nspec:\n  color: blue\n  size: 2\n',
    });
    const ready = () =>
      eventually('Widget kept ready', async () => {
        const w = await cp.client.getObj({
          apiVersion: 'example.com/v1',
          kind: 'Widget',
          metadata: { name: 'kept', namespace: NS },
        });
        return readyAndSynced(w) ? w : undefined;
      });
    await ready();
    const before = table((await cp.kubectl(['get', 'widgets', '-n', NS])).stdout);
    assert.ok(before[0]!.includes('SIZE') && !before[0]!.includes('REPLICAS'), before[0]!.join(' '));

    // v0.1.1: the same Configuration, its Widget XRD's SIZE column now REPLICAS.
    const root = mkdtempSync(join(tmpdir(), 'fp-config-v011-'));
    cpSync(join(repoRoot, 'package', 'configuration'), root, { recursive: true });
    const xrdFile = join(root, 'apis', 'widget', 'definition.yaml');
    const xrd = parse(readFileSync(xrdFile, 'utf8')) as Json;
    const columns = xrd['spec']['versions'][0]['additionalPrinterColumns'] as Json[];
    const size = columns.find((c) => c['name'] === 'SIZE');
    assert.ok(size, 'v0.1.0 has a SIZE column');
    size['name'] = 'REPLICAS';
    writeFileSync(xrdFile, stringify(xrd));
    await buildAndPush(cp.dir, root, `${cp.registry}/function-platform/${cp.configuration}:v0.1.1`);
    await cp.kubectl([
      'patch',
      'configuration',
      cp.configuration,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { package: `${PUBLISHED_PREFIX}${cp.configuration}:v0.1.1` } }),
    ]);

    await eventually(
      'the v0.1.1 revision active and healthy',
      async () => {
        const revs = await cp.client.listObjs(
          'pkg.crossplane.io/v1',
          'ConfigurationRevision',
          undefined,
          `pkg.crossplane.io/package=${cp.configuration}`,
        );
        const active = revs.find((r) => r['spec']['desiredState'] === 'Active');
        return active &&
          String(active['spec']['image']).endsWith(':v0.1.1') &&
          conditionOf(active, 'RevisionHealthy')?.['status'] === 'True'
          ? active
          : undefined;
      },
      120_000,
    );
    const header = await eventually(
      'kubectl get widgets shows REPLICAS',
      async () => {
        const rows = table((await cp.kubectl(['get', 'widgets', '-n', NS])).stdout);
        return rows[0]!.includes('REPLICAS') ? rows : undefined;
      },
      60_000,
    );
    assert.ok(!header[0]!.includes('SIZE'), header[0]!.join(' '));
    const row = header.find((r) => r[0] === 'kept');
    assert.ok(row, 'the Widget is still listed');
    assert.equal(row[header[0]!.indexOf('REPLICAS')], '2');

    // It still works: a change after the upgrade is composed and rolled out.
    await cp.kubectl(['patch', 'widget', 'kept', '-n', NS, '--type=merge', '-p', '{"spec":{"size":3}}']);
    await eventually(
      'the Widget’s Deployment at 3 replicas',
      async () => {
        const deployments = await cp.client.listObjs('apps/v1', 'Deployment', NS);
        return deployments.some((d) => d['metadata']['name'].startsWith('kept') && d['spec']['replicas'] === 3)
          ? true
          : undefined;
      },
      60_000,
    );
    await ready();
  });
});
