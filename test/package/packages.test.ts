// The packages users install: their metadata validates against Crossplane's
// own schemas, the real crossplane CLI builds them and validates examples
// against the XRDs (CEL included), and the runtime image is what it claims.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import type { Obj } from '../../src/kube.js';
import { readYamlObjects, render } from '../../src/render.js';
import { findCrank } from '../support/crank.js';
import { imageLayers } from '../support/image-root.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { validateObject } from '../support/schemas.js';
import { CROSSPLANE_CRDS } from '../support/control-plane.js';
import { MANIFEST } from '../../src/blueprints/manifest.js';

/** Every blueprint's API, from the manifest: a new blueprint is checked here without editing this file. */
const BLUEPRINT_NAMES = MANIFEST.map((b) => b.name);

const pkg = (...p: string[]) => join(repoRoot, 'package', ...p);
const yamlOf = (path: string) => parse(readFileSync(path, 'utf8')) as Obj;
const XRDS = BLUEPRINT_NAMES.map((api) => pkg('configuration', 'apis', api, 'definition.yaml'));

function problems(obj: Obj): string {
  return validateObject(obj)
    .map((p) => `${p.path}: ${p.message}`)
    .join('\n');
}

describe('package metadata and APIs', () => {
  test('crossplane.yaml of the Function and the Configuration validate against the meta.pkg schemas', () => {
    for (const file of [
      pkg('function', 'crossplane.yaml'),
      pkg('configuration', 'crossplane.yaml'),
      pkg('configuration-claims', 'crossplane.yaml'),
    ]) {
      assert.equal(problems(yamlOf(file)), '', file);
    }
    const fn = yamlOf(pkg('function', 'crossplane.yaml'));
    assert.match(String((fn['metadata'] as Obj)['name']), /^function-/);
    // What it serves, as Crossplane reads it: composition only, until an operation mode exists.
    assert.deepEqual((fn['spec'] as Obj)['capabilities'], ['composition', 'operation']);
  });

  test('the Configuration depends on the function and the providers, fully qualified, with versions', () => {
    const deps = ((yamlOf(pkg('configuration', 'crossplane.yaml'))['spec'] as Obj)['dependsOn'] as Obj[]).map(
      (d) => `${d['kind']} ${d['package']} ${d['version']}`,
    );
    for (const want of [
      /^Function [a-z0-9.-]+\.[a-z]+\/.+\/function-platform >=/,
      /^Provider [a-z0-9.-]+\.[a-z]+\/.+\/provider-aws-rds >=v2/,
      /^Provider .+\/provider-aws-s3 >=v2/,
      /^Provider .+\/provider-aws-iam >=v2/,
      /^Provider .+\/provider-kubernetes >=/,
    ]) {
      assert.ok(
        deps.some((d) => want.test(d)),
        `no dependency like ${want}: ${deps.join('; ')}`,
      );
    }
  });

  test('XRDs and Compositions of both Configurations validate against Crossplane CRDs', () => {
    for (const config of ['configuration', 'configuration-claims']) {
      for (const dir of BLUEPRINT_NAMES) {
        for (const file of ['definition.yaml', 'composition.yaml']) {
          const obj = yamlOf(pkg(config, 'apis', dir, file));
          assert.equal(problems(obj), '', `${config}/${dir}/${file}`);
        }
      }
    }
  });

  test('the claims XRDs are v1 with claim names and the very schema of the namespaced ones', () => {
    for (const api of BLUEPRINT_NAMES) {
      const modern = yamlOf(pkg('configuration', 'apis', api, 'definition.yaml'));
      const legacy = yamlOf(pkg('configuration-claims', 'apis', api, 'definition.yaml'));
      assert.equal(legacy['apiVersion'], 'apiextensions.crossplane.io/v1');
      const m = modern['spec'] as Obj;
      const l = legacy['spec'] as Obj;
      assert.equal(l['scope'], undefined, 'LegacyCluster, the v1 default');
      assert.equal((l['names'] as Obj)['kind'], `X${String((m['names'] as Obj)['kind'])}`);
      assert.equal((l['claimNames'] as Obj)['kind'], (m['names'] as Obj)['kind']);
      assert.deepEqual(
        (l['claimNames'] as Obj)['shortNames'],
        (m['names'] as Obj)['shortNames'],
        'the same short names',
      );
      assert.deepEqual(l['versions'], m['versions'], 'same schema, printer columns and CEL rules');
    }
  });

  test('the claims Configuration depends on provider-kubernetes', () => {
    const deps = ((yamlOf(pkg('configuration-claims', 'crossplane.yaml'))['spec'] as Obj)['dependsOn'] as Obj[]).map(
      (d) => String(d['package']),
    );
    assert.ok(deps.some((d) => d.endsWith('/provider-kubernetes')));
    assert.ok(deps.some((d) => d.endsWith('/function-platform')));
  });

  test('XRDs are namespaced v2 with printer columns, short names, the composite category and a description on every field', () => {
    const columns: Record<string, string[]> = {
      // Issue 26: COLOR is the color asked for (shown from the apply on), LIVE the one served; RESPONSIVE is
      // Crossplane's watch circuit breaker; a DatabaseRestore's MESSAGE says why it waits or is refused.
      Widget: ['COLOR', 'LIVE', 'SIZE', 'AVAILABLE', 'URL', 'RESPONSIVE'],
      Database: ['ENGINE', 'PLACEMENT', 'PHASE', 'ENDPOINT', 'RESPONSIVE'],
      DatabaseBackup: ['DATABASE', 'PHASE', 'METHOD', 'COMPLETED', 'SIZE'],
      DatabaseRestore: ['DATABASE', 'PHASE', 'INSTANCE', 'RESTORE-POINT', 'MESSAGE'],
    };
    // Issue 28: the seed names the Widget's short name wg; wdg, served before, stays.
    const shortNames: Record<string, string[]> = {
      Widget: ['wg', 'wdg'],
      Database: ['db'],
      DatabaseBackup: ['dbbackup'],
      DatabaseRestore: ['dbrestore'],
    };
    for (const file of XRDS) {
      const xrd = yamlOf(file);
      const spec = xrd['spec'] as Obj;
      assert.equal(xrd['apiVersion'], 'apiextensions.crossplane.io/v2');
      assert.equal(spec['scope'], 'Namespaced');
      const names = spec['names'] as Obj;
      assert.ok((names['categories'] as string[]).includes('composite'));
      assert.deepEqual(names['shortNames'], shortNames[String(names['kind'])]);
      const version = (spec['versions'] as Obj[])[0]!;
      assert.deepEqual(
        (version['additionalPrinterColumns'] as Obj[]).map((c) => c['name']),
        columns[String(names['kind'])],
      );
      const missing: string[] = [];
      const walk = (node: Obj, path: string) => {
        for (const [key, child] of Object.entries((node['properties'] as Record<string, Obj>) ?? {})) {
          if (!child['description']) missing.push(`${path}.${key}`);
          walk(child, `${path}.${key}`);
          if (child['items']) walk(child['items'] as Obj, `${path}.${key}[]`);
        }
      };
      walk((version['schema'] as Obj)['openAPIV3Schema'] as Obj, String(names['kind']));
      assert.deepEqual(missing, [], 'every field is described');
    }
  });

  test('the compositions in examples/ are the packaged ones', () => {
    for (const api of BLUEPRINT_NAMES) {
      assert.equal(
        readFileSync(join(repoRoot, 'examples', api, 'composition.yaml'), 'utf8'),
        readFileSync(pkg('configuration', 'apis', api, 'composition.yaml'), 'utf8'),
      );
    }
  });

  test('the aggregated ClusterRole covers every kind the function composes beyond what Crossplane may touch', () => {
    const role = yamlOf(pkg('rbac', 'aggregate-to-crossplane.yaml'));
    assert.equal(((role['metadata'] as Obj)['labels'] as Obj)['rbac.crossplane.io/aggregate-to-crossplane'], 'true');
    const rules = role['rules'] as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    const scenarios = parse(readFileSync(join(repoRoot, 'examples', 'scenarios.yaml'), 'utf8')) as Array<{
      xr: string;
      observed: string[];
      required?: string;
    }>;
    const kinds = new Set<string>();
    for (const s of scenarios) {
      const xr = readYamlObjects(join(repoRoot, 'examples', s.xr))[0]!;
      const required = s.required ? readYamlObjects(join(repoRoot, 'examples', s.required)) : [];
      for (const o of s.observed) {
        for (const r of render(xr, readYamlObjects(join(repoRoot, 'examples', o)), [], undefined, required).resources) {
          const api = String(r['apiVersion']);
          const kind = String(r['kind']).toLowerCase();
          const plural = kind.endsWith('s') ? `${kind}es` : kind.endsWith('y') ? `${kind.slice(0, -1)}ies` : `${kind}s`;
          kinds.add(`${api.includes('/') ? api.split('/')[0] : ''}/${plural}`);
        }
      }
    }
    // Crossplane's own role covers these, and every provider's managed resources come with their provider.
    const covered = (gk: string) =>
      ['apps/deployments', '/services', '/secrets', '/configmaps', '/serviceaccounts'].includes(gk) ||
      /\.(upbound\.io|crossplane\.io)\//.test(gk) ||
      rules.some(
        (r) =>
          r.apiGroups.includes(gk.split('/')[0]!) &&
          r.resources.includes(gk.split('/')[1]!) &&
          ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'].every((v) => r.verbs.includes(v)),
      );
    const uncovered = [...kinds].filter((k) => !covered(k));
    assert.deepEqual(uncovered, []);
    assert.ok(
      kinds.has('apps/statefulsets') &&
        kinds.has('barmancloud.cnpg.io/objectstores') &&
        kinds.has('policy/poddisruptionbudgets'),
    );
  });
});

/** PATH without any folder that holds a docker command: the build must not need one. */
function withoutDocker(): string {
  return (process.env['PATH'] ?? '')
    .split(':')
    .filter((d) => d && !existsSync(join(d, 'docker')))
    .join(':');
}

describe('the real crossplane CLI on the packages', () => {
  const crank = findCrank();
  const skip = crank ? false : 'crossplane CLI not built (scripts/install-crossplane.sh)';

  test('xpkg build makes the Configuration packages and the Function package with its runtime image, without Docker', {
    skip,
  }, () => {
    const out = execFileSync('bash', ['scripts/build-packages.sh'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, PATH: withoutDocker() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    assert.match(out, /built \.cache\/xpkg\/platform\.xpkg/);
    assert.match(out, /built \.cache\/xpkg\/platform-claims\.xpkg/);
    const digest = /built \.cache\/xpkg\/runtime\.tar \(runtime image (sha256:[0-9a-f]{64})\)/.exec(out)?.[1];
    assert.ok(digest, out);
    assert.match(out, /built \.cache\/xpkg\/function-platform\.xpkg/);
    const xpkg = join(repoRoot, '.cache', 'xpkg', 'function-platform.xpkg');
    const runtime = imageLayers(join(repoRoot, '.cache', 'xpkg', 'runtime.tar'));
    assert.deepEqual(imageLayers(xpkg).slice(0, runtime.length), runtime, 'the runtime image is embedded');
  });

  // beta validate wants Crossplane's own CRDs in its cache; seed it from ../shared/crds.
  function validate(resources: string[], xrds = XRDS): { code: number | null; out: string } {
    const cache = mkdtempSync(join(tmpdir(), 'fp-validate-'));
    const seeded = join(cache, 'xpkg.crossplane.io', 'crossplane', 'crossplane@v2.2.1');
    mkdirSync(seeded, { recursive: true });
    cpSync(join(repoRoot, '..', 'shared', 'crds', 'crossplane'), seeded, {
      recursive: true,
      filter: (p) => !p.endsWith('.proto'),
    });
    const r = spawnSync(
      crank!,
      [
        'beta',
        'validate',
        xrds.join(','),
        resources.join(','),
        `--cache-dir=${cache}`,
        '--crossplane-image=xpkg.crossplane.io/crossplane/crossplane:v2.2.1',
      ],
      { encoding: 'utf8' },
    );
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  }

  test('every example Widget and Database validates against the XRDs, CEL rules included', { skip }, () => {
    const examples = BLUEPRINT_NAMES.flatMap((api) =>
      readdirSync(join(repoRoot, 'examples', api))
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => join(repoRoot, 'examples', api, f))
        // Compositions and Secrets sit beside the examples; only composites are validated here.
        .filter((f) => ['Widget', 'Database', 'DatabaseBackup', 'DatabaseRestore'].includes(String(yamlOf(f)['kind']))),
    );
    // The same YAML is a namespaced composite with one Configuration and a claim with the other.
    const claimXrds = XRDS.map((f) => f.replace('/package/configuration/', '/package/configuration-claims/'));
    assert.notDeepEqual(claimXrds, XRDS);
    for (const xrds of [XRDS, claimXrds]) {
      const { code, out } = validate(examples, xrds);
      assert.equal(code, 0, out);
      assert.match(
        out,
        new RegExp(
          `Total ${examples.length} resources: 0 missing schemas, ${examples.length} success cases, 0 failure cases`,
        ),
      );
    }
  });

  test('every rendered output validates against the XRDs and the provider, provider-kubernetes, CloudNativePG, cert-manager and Prometheus Operator CRDs', {
    skip,
  }, () => {
    const scenarios = parse(readFileSync(join(repoRoot, 'examples', 'scenarios.yaml'), 'utf8')) as Array<{
      xr: string;
      observed: string[];
      required?: string;
    }>;
    const docs: Obj[] = [];
    for (const s of scenarios) {
      const xr = readYamlObjects(join(repoRoot, 'examples', s.xr))[0]!;
      const required = s.required ? readYamlObjects(join(repoRoot, 'examples', s.required)) : [];
      for (const o of s.observed) {
        const out = render(xr, readYamlObjects(join(repoRoot, 'examples', o)), [], undefined, required);
        // The whole XR, as `crossplane render -x` prints it, and everything composed.
        docs.push({ ...out.xr, spec: xr['spec'] }, ...out.resources);
        for (const r of out.resources) {
          const manifest = ((r['spec'] as Obj | undefined)?.['forProvider'] as Obj | undefined)?.['manifest'];
          if (r['kind'] === 'Object' && manifest) docs.push(manifest as Obj);
        }
      }
    }
    const dir = mkdtempSync(join(tmpdir(), 'fp-rendered-'));
    const file = join(dir, 'rendered.yaml');
    writeFileSync(file, docs.map((d) => `---\n${stringify(d)}`).join(''));
    const crds = [
      'provider-upjet-aws',
      'provider-kubernetes',
      'cloudnative-pg',
      'plugin-barman-cloud',
      'cert-manager',
      'prometheus-operator',
    ].map((d) => join(repoRoot, '..', 'shared', 'crds', d));
    // Crossplane's own Usage CRDs, from the module scripts/install-crossplane.sh built Crossplane from.
    for (const f of ['protection.crossplane.io_usages.yaml', 'protection.crossplane.io_clusterusages.yaml'])
      crds.push(join(CROSSPLANE_CRDS, f));
    const { code, out } = validate([file], [...XRDS, ...crds]);
    assert.match(
      out,
      new RegExp(`Total ${docs.length} resources: \\d+ missing schemas, \\d+ success cases, 0 failure cases`),
      out,
    );
    // Only Kubernetes' own kinds have no CRD; for every other kind a missing schema is an error.
    const missing = [...out.matchAll(/could not find CRD\/XRD for: (\S*), Kind=(\w+)/g)].map((m) => `${m[1]} ${m[2]}`);
    const core = /^(\/v1|apps\/v1|batch\/v1|policy\/v1|autoscaling\/v2|networking\.k8s\.io\/v1) /;
    assert.deepEqual(
      missing.filter((m) => !core.test(m)),
      [],
      'schemas missing for kinds that have CRDs',
    );
    assert.equal(code, 0, out);
  });

  test('invalid objects are rejected by the XRD schema and its CEL rules', { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'fp-bad-'));
    const bad: Array<[string, string, RegExp]> = [
      ['bad-color.yaml', 'kind: Widget\nmetadata: {name: a}\nspec: {color: Blue}', /spec\.color.*should match/],
      ['big.yaml', 'kind: Widget\nmetadata: {name: b}\nspec: {size: 101}', /spec\.size.*less than or equal to 100/],
      [
        'autoscale.yaml',
        'kind: Widget\nmetadata: {name: c}\nspec: {size: 5, autoscale: {maxSize: 2}}',
        /maxSize must be at least spec\.size/,
      ],
      [
        'small-rds.yaml',
        'kind: Database\nmetadata: {name: d}\nspec: {placement: aws, storageGB: 10}',
        /spec\.storageGB must be at least 20 with placement aws/,
      ],
      [
        'mysql-ha.yaml',
        'kind: Database\nmetadata: {name: e}\nspec: {engine: mysql, highAvailability: true}',
        /needs engine postgres/,
      ],
      [
        'version.yaml',
        'kind: Database\nmetadata: {name: f}\nspec: {engine: mysql, version: "17"}',
        /spec\.version must be one the engine supports/,
      ],
    ];
    for (const [file, body] of bad) writeFileSync(join(dir, file), `apiVersion: example.com/v1\n${body}\n`);
    const { code, out } = validate(bad.map(([f]) => join(dir, f)));
    assert.notEqual(code, 0);
    for (const [file, , message] of bad) assert.match(out, message, `${file}: ${out}`);
    assert.match(out, /0 success cases, 6 failure cases/);
  });
});

describe('the runtime image', () => {
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const stages = dockerfile.split('\n').filter((l) => /^FROM /.test(l));

  test('multi-stage, Node 24, a distroless final stage, non-root, entrypoint the bundle', () => {
    assert.ok(stages.length >= 2, 'multi-stage');
    assert.ok(
      stages.every((s) => /node(js)?[-:]?24/.test(s)),
      `every stage on Node 24: ${stages.join(' | ')}`,
    );
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(final, /^\nFROM gcr\.io\/distroless\/nodejs24/);
    // Every USER non-root: the compile cache is filled as uid 2000 and as the image's USER, which is last.
    const users = [...final.matchAll(/^USER (\S+)/gm)].map((m) => m[1]!);
    assert.ok(users.length > 0 && users.every((u) => !/^(0|root)(:|$)/.test(u)), `non-root USERs, got ${users}`);
    assert.equal(users.at(-1), '65532:65532', "distroless's nonroot runs it");
    assert.match(final, /ENTRYPOINT \["\/nodejs\/bin\/node", ("--[a-z-]+(=\S+)?", )*"dist\/bundle\/main\.mjs"\]/);
    assert.doesNotMatch(final, /npm (install|ci)(?![^\n]*--omit=dev)/, 'no dev dependencies reach the final stage');
    // distroless has no shell: what the final stage runs (the compile cache's fill) is in exec form, Node itself.
    const runs = [...final.matchAll(/^RUN (.*)$/gm)].map((m) => m[1]!);
    assert.equal(runs.length, 2, 'one fill per uid');
    for (const r of runs) assert.match(r, /^\["\/nodejs\/bin\/node", /, 'exec form, no shell');
  });
});
