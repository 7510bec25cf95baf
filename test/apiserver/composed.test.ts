// Every composed object of every rendered example scenario, applied to a real
// kube-apiserver the way Crossplane applies it: server-side apply with the
// XR's composed field owner, forced, on top of the metadata Crossplane renders
// (name, namespace, labels, annotation, controller reference). Kinds whose
// controller a cluster runs (Deployments, Services, ...) are applied for real;
// managed resources, provider-kubernetes Objects and CloudNativePG Clusters
// with dryRun=All. Successive observed states of a scenario are applied in
// turn, so updates (immutable fields, transitions) are judged too. The
// server's defaulting Warn mode reports unknown fields it drops: none allowed.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { render, readYamlObjects } from '../../src/render.js';
import { type ApiServer, ApiError, apiServerSkipReason, type Json, startApiServer } from '../support/apiserver.js';
import { ensureNamespace, prepareCluster } from '../support/cluster.js';
import { repoRoot } from '../support/function-process.js';
import { composedFieldOwner, LABEL_COMPOSITE, renderComposedMetadata } from '../support/composed-metadata.js';

const skip = apiServerSkipReason('API server: composed resources');

interface Scenario {
  xr: string;
  observed?: string[];
  required?: string;
}

const EXAMPLES = join(repoRoot, 'examples');
const scenarios = parse(readFileSync(join(EXAMPLES, 'scenarios.yaml'), 'utf8')) as Scenario[];

/** Kinds a cluster runs the controller of: applied for real. Everything else: dry run. */
const BUILTIN_GROUPS = new Set([
  '',
  'apps',
  'batch',
  'policy',
  'autoscaling',
  'networking.k8s.io',
  'rbac.authorization.k8s.io',
]);
const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

describe('a real API server accepts everything the function composes', { skip }, () => {
  let api: ApiServer;
  before(async () => {
    api = await startApiServer();
    console.log(`# kube-apiserver ready at ${api.url} in ${api.startupMs} ms`);
    await prepareCluster(api, 'namespaced');
  });
  after(async () => {
    await api?.stop();
  });

  scenarios.forEach((sc, i) => {
    it(`scenario ${i + 1}: ${sc.xr} through ${(sc.observed ?? ['(nothing)']).map((o) => o.split('/').pop()).join(', ')}`, async () => {
      const example = readYamlObjects(join(EXAMPLES, sc.xr))[0] as Json;
      // Each scenario in a namespace of its own: scenarios reuse names.
      const namespace = `sc${i + 1}-${String(example['metadata']['namespace'] ?? 'team-a')}`;
      await ensureNamespace(api.client, namespace);
      const { status, ...user } = example;
      let xr = await api.client.createObj(
        {
          ...user,
          metadata: { ...user['metadata'], namespace, labels: { [LABEL_COMPOSITE]: user['metadata']['name'] } },
        },
        { fieldValidation: 'Strict' },
      );
      if (status) xr = await api.client.mergeStatus(xr, status as Json);
      const required = sc.required ? readYamlObjects(join(EXAMPLES, sc.required)) : [];
      const fieldManager = composedFieldOwner(xr);
      const problems: string[] = [];
      let applied = 0;
      for (const observedFile of sc.observed ?? [undefined]) {
        const observed = observedFile
          ? readYamlObjects(join(EXAMPLES, observedFile)).map((o) => ({
              ...o,
              metadata: { ...(o['metadata'] as Json), namespace },
            }))
          : [];
        const seen = new Map(
          observed.map((o) => [
            String((o['metadata'] as Json)['annotations']?.['crossplane.io/composition-resource-name']),
            o as Json,
          ]),
        );
        const out = render(xr, observed, [], undefined, required);
        assert.equal(out.fatal, undefined, `${observedFile}: ${out.fatal}`);
        for (const res of out.resources) {
          const key = String((res['metadata'] as Json)['annotations']['crossplane.io/composition-resource-name']);
          const cd = renderComposedMetadata(xr, key, res as Json, seen.get(key));
          const dryRun = !BUILTIN_GROUPS.has(groupOf(String(cd['apiVersion'])));
          const before = api.client.warnings.length;
          try {
            await api.client.applyObj(cd, { fieldManager, force: true, dryRun });
            applied++;
          } catch (e) {
            if (!(e instanceof ApiError)) throw e;
            problems.push(
              `${observedFile ?? '(nothing)'}: ${key} ${cd['kind']} ${cd['metadata']['name']}${dryRun ? ' (dry run)' : ''}: ${e.code} ${e.serverMessage}`,
            );
          }
          for (const w of api.client.warnings.slice(before))
            problems.push(
              `${observedFile ?? '(nothing)'}: ${key} ${cd['kind']} ${cd['metadata']['name']}: WARNING ${w.warning}`,
            );
        }
      }
      assert.deepEqual(problems, [], `the server refused or pruned composed objects of ${sc.xr}`);
      assert.ok(applied > 0);
    });
  });

  /** Creates the XR, renders it, applies what it composes (and what Objects wrap); the server's refusals. */
  async function composeAndApply(
    kind: 'Widget' | 'Database',
    name: string,
    spec: Json,
    namespace: string,
  ): Promise<string[]> {
    await ensureNamespace(api.client, namespace);
    const xr = await api.client.createObj(
      { apiVersion: 'example.com/v1', kind, metadata: { name, namespace, labels: { [LABEL_COMPOSITE]: name } }, spec },
      { fieldValidation: 'Strict' },
    );
    const required = spec['highAvailability']
      ? readYamlObjects(join(EXAMPLES, 'database/required/cnpg-installed.yaml'))
      : [];
    const out = render(xr, [], [], undefined, required);
    if (out.fatal) return [`Fatal: ${out.fatal}`];
    const problems: string[] = [];
    const before = api.client.warnings.length;
    for (const res of out.resources) {
      const key = String((res['metadata'] as Json)['annotations']['crossplane.io/composition-resource-name']);
      const cd = renderComposedMetadata(xr, key, res as Json);
      const dryRun = !BUILTIN_GROUPS.has(groupOf(String(cd['apiVersion'])));
      try {
        await api.client.applyObj(cd, { fieldManager: composedFieldOwner(xr), force: true, dryRun });
        if (cd['kind'] === 'Object')
          await api.client.applyObj(cd['spec']['forProvider']['manifest'], {
            fieldManager: 'kubernetes.crossplane.io',
            force: true,
            dryRun: true,
          });
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        problems.push(`${key} ${cd['kind']} ${cd['metadata']['name']}: ${e.serverMessage}`);
      }
    }
    for (const w of api.client.warnings.slice(before)) problems.push(`WARNING ${w.warning}`);
    return problems;
  }

  // Specs both the server and the function accept, at the edges of the schema:
  // what they compose must be accepted too.
  const edges: Array<{ name: string; kind: 'Widget' | 'Database'; xr: string; spec: Json }> = [
    {
      name: 'a Widget named with 63 characters, every feature on',
      kind: 'Widget',
      xr: 'w'.repeat(63),
      spec: { size: 3, color: 'c'.repeat(30), host: 'shop.example.org', autoscale: { maxSize: 5 }, env: { A: 'x' } },
    },
    {
      name: 'a Widget whose name starts with a digit',
      kind: 'Widget',
      xr: '9lives',
      spec: { size: 2, host: 'x.example.org' },
    },
    { name: 'a Widget whose name has dots', kind: 'Widget', xr: 'my.widget', spec: { size: 2, host: 'x.example.org' } },
    {
      name: 'a Widget with size 100 and autoscale 100',
      kind: 'Widget',
      xr: 'big',
      spec: { size: 100, autoscale: { maxSize: 100, targetCPUPercent: 100 } },
    },
    {
      name: 'a Widget with zero resources',
      kind: 'Widget',
      xr: 'tiny',
      spec: { resources: { cpu: '0', memory: '0' } },
    },
    { name: 'a Database named with 42 characters in the cluster', kind: 'Database', xr: 'd'.repeat(42), spec: {} },
    {
      name: 'a Database named with 43 characters in the cluster (CronJob names stop at 52)',
      kind: 'Database',
      xr: 'd'.repeat(43),
      spec: {},
    },
    { name: 'a Database named with 63 characters in the cluster', kind: 'Database', xr: 'd'.repeat(63), spec: {} },
    {
      name: 'a Database named with 63 characters on AWS',
      kind: 'Database',
      xr: 'd'.repeat(63),
      spec: { placement: 'aws', aws: { region: 'us-gov-west-1' } },
    },
    {
      name: 'a Database whose name has dots, in the cluster and HA',
      kind: 'Database',
      xr: 'my.db',
      spec: { highAvailability: true, deletionPolicy: 'Delete' },
    },
    {
      name: 'a Database of 65536 GB on AWS, mysql, HA, own subnets',
      kind: 'Database',
      xr: 'huge',
      spec: {
        engine: 'mysql',
        placement: 'aws',
        highAvailability: true,
        storageGB: 65536,
        aws: { region: 'eu-west-1', subnetIds: ['subnet-0a'], securityGroupIds: ['sg-1'] },
      },
    },
    {
      name: 'a Database with a cron schedule of steps',
      kind: 'Database',
      xr: 'steps',
      spec: { backup: { schedule: '*/15 1-5 * * 1,3' } },
    },
    {
      name: 'a Database with named months and days',
      kind: 'Database',
      xr: 'names',
      spec: { backup: { schedule: '0 3 * JAN-JUN mon-fri' } },
    },
  ];
  edges.forEach((e, i) => {
    it(`edge: ${e.name}: everything composed is accepted`, async () => {
      assert.deepEqual(await composeAndApply(e.kind, e.xr, e.spec, `edge${i + 1}`), []);
    });
  });

  // Five fields pass the XRD's pattern; what the server refuses in a CronJob the function refuses first.
  for (const schedule of ['a b c d e', '99 99 * * *', '0 3 * * 7-1', '0\u00a03 * * * *']) {
    it(`a backup schedule "${schedule}": the server refuses it in a CronJob, and the function refuses it before composing`, async () => {
      await ensureNamespace(api.client, 'cron');
      const cron = {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'probe', namespace: 'cron' },
        spec: {
          schedule,
          jobTemplate: {
            spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'i' }] } } },
          },
        },
      };
      await assert.rejects(
        api.client.applyObj(cron, { fieldManager: 'test', force: true, dryRun: true }),
        (err: ApiError) => /spec\.schedule: Invalid value/.test(err.serverMessage),
      );
      const out = render({
        apiVersion: 'example.com/v1',
        kind: 'Database',
        metadata: { name: 'cron', namespace: 'cron' },
        spec: { backup: { schedule } },
      });
      assert.match(out.fatal ?? '(composed)', /spec\.backup\.schedule is/);
    });
  }

  it('the path is not vacuous: the server refuses a broken composed object the same way', async () => {
    await ensureNamespace(api.client, 'broken');
    const xr = await api.client.createObj(
      {
        apiVersion: 'example.com/v1',
        kind: 'Database',
        metadata: { name: 'b', namespace: 'broken', labels: { [LABEL_COMPOSITE]: 'b' } },
        spec: { placement: 'aws', aws: { region: 'eu-west-1' } },
      },
      { fieldValidation: 'Strict' },
    );
    const out = render(xr);
    const rds = renderComposedMetadata(xr, 'rds-instance', out.resources.find((r) => r['kind'] === 'Instance') as Json);
    delete rds['spec']['forProvider']['instanceClass'];
    await assert.rejects(
      api.client.applyObj(rds, { fieldManager: composedFieldOwner(xr), force: true, dryRun: true }),
      (err: ApiError) => /instanceClass is a required parameter/.test(err.serverMessage),
    );
    const deployment = renderComposedMetadata(xr, 'x', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'b-typo' },
      spec: {
        replica: 1,
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
      },
    });
    // Server-side apply fails on an unknown field (500, whatever the field validation): Crossplane's apply would fail.
    await assert.rejects(
      api.client.applyObj(deployment, { fieldManager: composedFieldOwner(xr), force: true, dryRun: true }),
      (err: ApiError) => /\.spec\.replica: field not declared in schema/.test(err.serverMessage),
    );
    // So does it on a CRD's kind: an apply is typed by the schema, unknown fields are not pruned.
    const instance = renderComposedMetadata(
      xr,
      'rds-instance',
      out.resources.find((r) => r['kind'] === 'Instance') as Json,
    );
    instance['spec']['forProvider']['colour'] = 'blue';
    await assert.rejects(
      api.client.applyObj(instance, { fieldManager: composedFieldOwner(xr), force: true, dryRun: true }),
      (err: ApiError) => /\.spec\.forProvider\.colour: field not declared in schema/.test(err.serverMessage),
    );
  });

  it("what the server stored carries Crossplane's metadata and the composed field owner", async () => {
    const deployments = await api.client.listObjs('apps/v1', 'Deployment', 'sc1-team-a');
    assert.ok(deployments.length > 0);
    for (const d of deployments) {
      assert.ok(d['metadata']['annotations']['crossplane.io/composition-resource-name']);
      assert.equal(d['metadata']['ownerReferences'][0]['controller'], true);
      const managers = (d['metadata']['managedFields'] as Json[]).map((m) => m['manager']);
      assert.ok(
        managers.some((m) => m.startsWith('apiextensions.crossplane.io/composed/')),
        managers.join(', '),
      );
    }
  });
});
