// The runtime image, built as scripts/build-image.sh and build-packages.sh
// build it, then unpacked and run the way a container runtime would run it,
// without one: its filesystem exported by crane (go-containerregistry),
// its entrypoint started in its own root by unshare (a user namespace that
// maps the host user to the pod's uid, a mount namespace with the root and
// the certificates mounted read-only), with only the image's environment.
// The network namespace is the host's, so a test dials it on loopback.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../dev/infra/paths.js';
import { inCI, toolPath, toolsSkipReason } from './tools.js';

/**
 * Why `suite` cannot build (and, with `run`, run) the image: a missing tool or
 * command, or no user namespaces; an error in CI, a loud skip elsewhere.
 */
export function imageSkipReason(
  suite: string,
  opts: { run?: boolean; tools?: readonly string[] } = {},
): string | undefined {
  const tools = toolsSkipReason(
    suite,
    ['crank', 'crane', 'xp-image', ...(opts.tools ?? [])],
    'scripts/install-crossplane.sh',
  );
  if (tools) return tools;
  const missing = ['apt-get', 'dpkg-deb', 'strip', ...(opts.run ? ['unshare'] : [])].filter(
    (cmd) => execFileSync('sh', ['-c', `command -v ${cmd} || true`], { encoding: 'utf8' }).trim() === '',
  );
  const why = missing.length
    ? `${missing.join(', ')} not installed`
    : opts.run && !canIsolate()
      ? 'user namespaces are not allowed here'
      : undefined;
  if (why && inCI()) throw new Error(`${suite}: ${why} (CI must run every suite)`);
  if (why) console.warn(`\n!!! SKIPPING ${suite}: ${why} !!!\n`);
  return why;
}

/** Builds the runtime image into `out` with scripts/build-image.sh; its digest. */
export function buildRuntimeImage(out: string): string {
  return execFileSync('bash', [join(repoRoot, 'scripts', 'build-image.sh'), out], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 600_000,
  }).trim();
}

/** The Function package with `image` embedded, as build-packages.sh builds it, into `out`. */
export function buildFunctionPackage(image: string, out: string): void {
  execFileSync(
    toolPath('crank'),
    [
      'xpkg',
      'build',
      '-f',
      join(repoRoot, 'package', 'function'),
      '-e',
      mkdtempSync(join(tmpdir(), 'fp-noexamples-')),
      '--embed-runtime-image-tarball',
      image,
      '-o',
      out,
    ],
    { stdio: 'pipe' },
  );
}

/** The parts of an image config (docker save's config JSON) a runtime uses. */
export interface ImageConfig {
  Entrypoint: string[];
  Cmd?: string[] | null;
  Env: string[];
  User: string;
  WorkingDir: string;
  Labels: Record<string, string>;
  ExposedPorts?: Record<string, object>;
}

const member = (tarball: string, name: string) => execFileSync('tar', ['-xOf', tarball, name], { maxBuffer: 1 << 26 });

/** The single image of a `docker save` tarball (an xpkg is one): its config file and layer files, bottom first. */
function savedImage(tarball: string): { Config: string; Layers: string[] } {
  const manifest = JSON.parse(member(tarball, 'manifest.json').toString()) as Array<{
    Config: string;
    Layers: string[];
  }>;
  if (manifest.length !== 1) throw new Error(`${tarball}: ${manifest.length} images, want one`);
  return manifest[0]!;
}

export function imageConfig(tarball: string): ImageConfig {
  return (JSON.parse(member(tarball, savedImage(tarball).Config).toString()) as { config: ImageConfig }).config;
}

/** The layers' file names in the tarball, named by their digests, bottom first. */
export function imageLayers(tarball: string): string[] {
  return savedImage(tarball).Layers;
}

/** The files (not folders) of one layer of the image in a tarball, by its name in the manifest. */
export function layerFiles(tarball: string, layer: string): string[] {
  const listing = execFileSync('tar', ['-tzf', '-'], {
    input: member(tarball, layer),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return listing
    .split('\n')
    .filter((l) => l !== '' && !l.endsWith('/'))
    .map((l) => l.replace(/^\.\//, ''));
}

/** The digest of the image in a tarball, as crane computes it (the manifest's sha256). */
export function imageDigest(tarball: string): string {
  return execFileSync(toolPath('crane'), ['digest', '--tarball', tarball], { encoding: 'utf8' }).trim();
}

/** Unpacks the image's flattened filesystem into `root` with `crane export`. */
export function unpackImage(tarball: string, root: string): void {
  mkdirSync(root, { recursive: true });
  const fs = `${root}.tar`;
  execFileSync(toolPath('crane'), ['export', '-', fs], { input: readFileSync(tarball), maxBuffer: 1 << 20 });
  execFileSync('tar', ['-xf', fs, '-C', root, '--no-same-owner']);
}

/** Can this machine make user and mount namespaces (unprivileged, or as root)? */
export function canIsolate(): boolean {
  try {
    execFileSync('unshare', ['--user', '--map-root-user', '--mount', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Run in the outer namespace, where the caller is root of its own user
// namespace: bind the root onto itself, mount the certificates at /tls/server
// (as Crossplane's Deployment mounts its Secret), make both read-only, then
// hand over to `env -i` with the image's environment only.
const MOUNT_AND_RUN = [
  'set -e',
  'root=$1; certs=$2; shift 2',
  'mount --bind "$root" "$root"',
  'mount --bind "$certs" "$root/tls/server"',
  'mount -o remount,bind,ro "$root/tls/server"',
  'mount -o remount,bind,ro "$root"',
  'exec /usr/bin/env -i "$@"',
].join('\n');

/**
 * The command that starts `config`'s entrypoint inside `root` as `uid`:`gid`
 * (a nested user namespace maps the host user to it; chroot before exec, so the
 * process holds no capability), with `certs` at /tls/server. Append arguments
 * as a pod's `args` would be. Every process in the chain execs the next, so
 * the spawned PID is the function's own.
 */
export function imageRootCommand(root: string, certs: string, config: ImageConfig, uid: number, gid: number): string[] {
  mkdirSync(join(root, 'tls', 'server'), { recursive: true }); // a runtime creates mount points too
  const unshare = execFileSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).trim();
  return [
    unshare,
    '--user',
    '--map-root-user',
    '--mount',
    '--',
    '/bin/sh',
    '-c',
    MOUNT_AND_RUN,
    'sh',
    root,
    certs,
    ...config.Env,
    unshare,
    '--user',
    `--map-user=${uid}`,
    `--map-group=${gid}`,
    `--root=${root}`,
    `--wd=${config.WorkingDir}`,
    '--',
    ...config.Entrypoint,
    ...(config.Cmd ?? []),
  ];
}
