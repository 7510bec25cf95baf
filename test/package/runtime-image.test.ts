// The runtime image, built without a Docker daemon by scripts/build-image.sh:
// reproducible (two builds, one digest), shaped as the Dockerfile says,
// embedded into the Function package by crank, and run from that package the
// way Crossplane's Deployment runs it: its own read-only root, uid 2000, no
// writable HOME, Crossplane's certificates at /tls/server, serving RunFunction
// over mutual TLS to a Go client that dials as Crossplane does.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Severity } from '@crossplane-org/function-sdk-typescript';
import { repoRoot } from '../../dev/infra/paths.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import {
  callLikeCrossplane,
  type CrossplaneCerts,
  FUNCTION_AUTHORITY,
  makeCrossplaneCerts,
  XP_CERTS_TOOLS,
} from '../support/crossplane-tls.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import {
  buildFunctionPackage,
  buildRuntimeImage,
  type ImageConfig,
  imageConfig,
  imageDigest,
  imageLayers,
  imageRootCommand,
  layerFiles,
  imageSkipReason,
  unpackImage,
} from '../support/image-root.js';
import { CROSSPLANE_UID } from '../support/run-to-exit.js';
import { dialWire } from '../support/wire.js';

const skip = imageSkipReason('the runtime image', { run: true, tools: XP_CERTS_TOOLS });

/** The Dockerfile's final ENTRYPOINT, USER, WORKDIR and ENV: the daemonless image must match them. */
function dockerfileFinalStage(): { entrypoint: string[]; user: string; workdir: string; env: string[] } {
  const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const final = text.slice(text.lastIndexOf('\nFROM '));
  const one = (re: RegExp) => {
    const m = re.exec(final);
    assert.ok(m, `the Dockerfile's final stage has ${re}`);
    return m[1]!;
  };
  return {
    entrypoint: JSON.parse(one(/^ENTRYPOINT (\[.*\])$/m)) as string[],
    // The last USER: earlier ones only fill the compile cache.
    user: [...final.matchAll(/^USER (\S+)$/gm)].at(-1)?.[1] ?? assert.fail('the final stage has a USER'),
    workdir: one(/^WORKDIR (\S+)$/m),
    env: [...final.matchAll(/^ENV (\S+)$/gm)].map((m) => m[1]!),
  };
}

describe('the runtime image, built without a daemon', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'fp-image-'));
  const image = join(dir, 'runtime.tar');
  const xpkg = join(dir, 'function-platform.xpkg');
  const root = join(dir, 'root');
  let digest = '';
  let config: ImageConfig;

  before(() => {
    digest = buildRuntimeImage(image);
    config = imageConfig(image);
  });
  // Two images, two packages and a root: about 600 MB.
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the same inputs give the same layers: a second build matches byte for byte but for the compile cache', () => {
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(imageDigest(image), digest, 'crane reads back the digest the build printed');
    const again = join(dir, 'again.tar');
    buildRuntimeImage(again);
    const [first, second] = [imageLayers(image), imageLayers(again)];
    assert.equal(first.length, 5);
    assert.deepEqual(second.slice(0, 4), first.slice(0, 4), 'layers 1-4 (system, Node, dependencies, the function)');
    // V8's code cache is not the same from one fill to the next: the last layer holds it and nothing else.
    const cacheFiles = layerFiles(image, first[4]!);
    assert.ok(cacheFiles.length > 0);
    for (const f of cacheFiles)
      assert.match(f, /^function\/dist\/bundle\/compile-cache\/v24\.[\d.]+-x64-[0-9a-f]+-(2000|65532)\/[0-9a-f]+$/);
    for (const uid of [2000, 65532])
      assert.ok(
        cacheFiles.filter((f) => f.includes(`-${uid}/`)).length >= 3,
        `uid ${uid}'s cache holds the bundle's modules`,
      );
    console.log(`runtime image ${digest}`);
  });

  test('its config is the Dockerfile’s: entrypoint and Node flags, user, working directory, environment, labels', () => {
    const want = dockerfileFinalStage();
    assert.deepEqual(config.Entrypoint, want.entrypoint);
    assert.equal(config.User, want.user);
    assert.equal(config.WorkingDir, want.workdir);
    for (const env of want.env) assert.ok(config.Env.includes(env), `${env} in ${config.Env.join(' ')}`);
    assert.ok(config.ExposedPorts?.['9443/tcp'], 'port 9443 exposed');
    const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(config.Labels['org.opencontainers.image.version'], `v${version}`);
    assert.equal(
      config.Labels['org.opencontainers.image.revision'],
      execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
    );
    assert.equal(config.Labels['org.opencontainers.image.source'], 'function-platform');
  });

  test('crank embeds it in the Function package, reproducibly: the runtime image’s layers, then the package’s', () => {
    buildFunctionPackage(image, xpkg);
    const again = join(dir, 'again.xpkg');
    buildFunctionPackage(image, again);
    assert.equal(imageDigest(again), imageDigest(xpkg), 'the package is reproducible too');
    console.log(`function package ${imageDigest(xpkg)}`);
    const runtime = imageLayers(image);
    const pkg = imageLayers(xpkg);
    assert.deepEqual(pkg.slice(0, runtime.length), runtime);
    assert.ok(pkg.length > runtime.length, 'and the package’s own layers (package.yaml) on top');
    const pkgConfig = imageConfig(xpkg);
    assert.deepEqual(pkgConfig.Entrypoint, config.Entrypoint);
    assert.equal(pkgConfig.User, config.User);
  });

  test('its files: Node, Debian’s libraries and CA bundle, production dependencies, the function; no shell, no package manager', () => {
    unpackImage(xpkg, root);
    const files = execFileSync('find', ['.', '-type', 'f', '-printf', '%s %p\n'], { cwd: root, encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((l) => {
        const at = l.indexOf(' ');
        return { size: Number(l.slice(0, at)), path: l.slice(at + 3) }; // past ' ./'
      });
    const byTop = new Map<string, { files: number; bytes: number }>();
    for (const f of files) {
      const top = f.path.startsWith('function/node_modules/')
        ? 'function/node_modules'
        : f.path.split('/').slice(0, 2).join('/');
      const t = byTop.get(top) ?? { files: 0, bytes: 0 };
      t.files++;
      t.bytes += f.size;
      byTop.set(top, t);
    }
    const total = files.reduce((n, f) => n + f.size, 0);
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    console.log(
      `image files (${files.length}, ${mb(total)} uncompressed; goal 90 MB):\n${[...byTop]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([top, t]) => `  ${top}: ${t.files} files, ${mb(t.bytes)}`)
        .join('\n')}`,
    );
    const paths = new Set(files.map((f) => f.path));
    for (const want of [
      'nodejs/bin/node',
      'lib64/ld-linux-x86-64.so.2',
      'etc/ssl/certs/ca-certificates.crt',
      'etc/passwd',
      'function/dist/main.js',
      'function/dist/src/main.js',
      'function/dist/bundle/main.mjs',
      'function/dist/bundle/server.mjs',
      'function/package.json',
      'function/node_modules/@grpc/grpc-js/package.json',
      'package.yaml',
    ])
      assert.ok(existsSync(join(root, want)), `${want} in the image`);
    for (const banned of [
      /^(usr\/)?s?bin\/(sh|bash|dash|apt|apt-get|dpkg|npm)$/,
      /^function\/(test|bench|dev)\//,
      /^function\/dist\/(test|bench|dev)\//,
    ])
      assert.deepEqual(
        [...paths].filter((p) => banned.test(p)),
        [],
        `nothing matching ${banned}`,
      );
    const devDependencies = Object.keys(
      (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> })
        .devDependencies,
    );
    // @types/node comes in as a production dependency's dependency too (its declarations are dropped).
    for (const dev of devDependencies.filter((d) => !d.startsWith('@types/')))
      assert.ok(!paths.has(`function/node_modules/${dev}/package.json`), `${dev} is a dev dependency`);
    const bundle = readFileSync(join(root, 'etc', 'ssl', 'certs', 'ca-certificates.crt'), 'utf8');
    assert.ok((bundle.match(/BEGIN CERTIFICATE/g) ?? []).length > 100, 'the CA bundle holds Mozilla’s roots');
  });

  describe('run from the package as Crossplane runs it', () => {
    let certs: CrossplaneCerts;
    let fn: FunctionProcess;
    const marker = join(dir, 'marker');

    before(async () => {
      certs = makeCrossplaneCerts();
      const command = imageRootCommand(root, certs.server, config, CROSSPLANE_UID, CROSSPLANE_UID);
      writeFileSync(marker, '');
      // As a pod runs it, but told to listen on loopback: the network here is the host's.
      fn = await startFunction({
        command,
        address: '127.0.0.1:0',
        insecure: false,
        args: ['--tls-server-certs-dir', '/tls/server'],
        startTimeoutMs: 30_000,
      });
    });
    after(async () => {
      if (fn) assert.equal(await fn.stop(), 0, fn.logs());
    });

    test('the process is uid 2000 in a root of its own, mounted read-only', () => {
      const pid = fn.child.pid!;
      const uidMap = readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().split(/\s+/);
      assert.equal(uidMap[0], String(CROSSPLANE_UID), `uid_map ${uidMap.join(' ')}`);
      assert.equal(uidMap[2], '1', 'one user mapped: no way back to root');
      assert.equal(readlinkSync(`/proc/${pid}/root`), root);
      const mounts = readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n');
      const mountOf = (point: string) => mounts.map((l) => l.split(' ')).find((f) => f[4] === point);
      assert.match(mountOf('/')?.[5] ?? '', /^ro\b/, 'root read-only');
      assert.match(mountOf('/tls/server')?.[5] ?? '', /^ro\b/, 'certificates read-only');
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).sort();
      assert.deepEqual(env, [...config.Env].sort(), 'the image’s environment only: no HOME to write to');
    });

    test('it serves RunFunction over mutual TLS to a client that dials as Crossplane does', async () => {
      const seed = readYamlObjects(join(repoRoot, 'examples', 'widget', 'seed.yaml'))[0]!;
      const out = await callLikeCrossplane(fn.target, certs.client, buildRequest(seed), {
        authority: FUNCTION_AUTHORITY,
      });
      assert.ok(out.ok, out.ok ? '' : `${out.code}: ${out.message}\n${fn.logs()}`);
      assert.ok(out.rsp.desired?.resources['deployment-blue'], 'the seed Widget composed its Deployment');
      assert.equal(
        out.rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL),
        undefined,
      );
      const refused = await callLikeCrossplane(fn.target, certs.impostor, buildRequest(seed), {
        authority: FUNCTION_AUTHORITY,
      });
      assert.equal(refused.ok, false, 'a client the CA did not sign is refused');
    });

    test('it starts from the compile cache filled for uid 2000; cold start with it and without', async () => {
      const seed = readYamlObjects(join(repoRoot, 'examples', 'widget', 'seed.yaml'))[0]!;
      /** Process start to first answer, plaintext (the client is this process's, already loaded). */
      const coldStart = async (env: string[]): Promise<{ ms: number; logs: string }> => {
        const started = performance.now();
        const one = await startFunction({
          command: imageRootCommand(
            root,
            certs.server,
            { ...config, Env: [...config.Env, ...env] },
            CROSSPLANE_UID,
            CROSSPLANE_UID,
          ),
          address: '127.0.0.1:0',
          insecure: true,
          startTimeoutMs: 30_000,
        });
        const client = dialWire(one.target);
        const out = await client.run(buildRequest(seed));
        const ms = performance.now() - started;
        client.close();
        assert.ok(out.ok, one.logs());
        assert.equal(await one.stop(), 0, one.logs());
        return { ms, logs: one.logs() };
      };
      const traced = await coldStart(['NODE_DEBUG_NATIVE=COMPILE_CACHE']);
      assert.match(traced.logs, /V8 code cache for ESM file:\/\/\/function\/dist\/bundle\/server\.mjs was accepted/);
      assert.doesNotMatch(
        traced.logs,
        /was rejected|Cannot create cache directory|permission denied|without the compile cache/,
      );
      // Where no cache of its own can be found or made (another uid or CPU, here another folder), it says so once.
      const uncached = await coldStart(['NODE_COMPILE_CACHE=/no-cache-here']);
      assert.equal(uncached.logs.match(/starting without the compile cache/g)?.length, 1, uncached.logs);
      // Figures, not a verdict (the bench judges speed): medians of 5 starts each, taken in turns.
      const withCache: number[] = [];
      const without: number[] = [];
      for (let i = 0; i < 5; i++) {
        withCache.push((await coldStart([])).ms);
        without.push((await coldStart(['NODE_COMPILE_CACHE=/no-cache-here'])).ms);
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!.toFixed(0);
      console.log(
        `cold start in the image as uid ${CROSSPLANE_UID}, process start to first answer, median of 5: ` +
          `${median(withCache)} ms with the compile cache, ${median(without)} ms without`,
      );
    });

    test('it wrote nothing into its files', () => {
      assert.equal(execFileSync('find', [root, '-newer', marker], { encoding: 'utf8' }), '');
    });
  });
});
