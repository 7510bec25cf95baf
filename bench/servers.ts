// The servers under test, as processes: how each is started (the Go peer built
// first if need be), and how long it takes to answer its first call.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { freePort, type Proc, spawnLogged, waitFor } from '../dev/infra/processes.js';
import { DEFAULT_TRANSPORT } from '../src/server.js';
import { say } from './format.js';
import { type Client, dial } from './load.js';

/** Every implementation, in the order they run and are reported. */
export const IMPL_IDS = [
  'ours',
  'bundle',
  'ours-tls',
  'ours-http2',
  'ours-grpc-js',
  'candidate',
  'floor',
  'http2-floor',
  'go-floor',
  'py-floor',
  'peer',
] as const;
export type ImplId = (typeof IMPL_IDS)[number];

export interface Impl {
  id: ImplId;
  label: string;
  /** The gRPC method path it serves. */
  path: string;
  /** The RunFunction service version of that path (ghz reads bench/ghz-proto/<proto>). */
  proto: 'v1' | 'v1beta1';
  command(port: number): { file: string; args: string[]; env?: NodeJS.ProcessEnv };
  /** How the load generator connects; plaintext when absent. */
  credentials?: () => grpc.ChannelCredentials;
}

/** Certificates for the mutual-TLS run: the server's directory and the client's PEM. */
export interface BenchTls {
  serverDir: string;
  ca: Buffer;
  clientKey: Buffer;
  clientCert: Buffer;
}

/**
 * How the function's image starts Node: the flags its Dockerfile ENTRYPOINT
 * puts between node and the script (dist/bundle/main.mjs), any
 * `ENV NODE_OPTIONS`, and the C library's malloc settings (`ENV MALLOC_*`).
 * The benchmark starts dist/main.js the same way, so a flag or setting added
 * there is measured here.
 */
export function imageNodeFlags(root: string): { flags: string[]; nodeOptions?: string; env: Record<string, string> } {
  let text: string;
  try {
    text = readFileSync(join(root, 'Dockerfile'), 'utf8');
  } catch {
    return { flags: [], env: {} };
  }
  let flags: string[] = [];
  let nodeOptions: string | undefined;
  let env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    // Only the final stage is the image: what an earlier stage set is not in it.
    if (/^\s*FROM\s/i.test(line)) {
      flags = [];
      nodeOptions = undefined;
      env = {};
    }
    const entry = /^\s*ENTRYPOINT\s+(\[.*\])\s*$/.exec(line);
    if (entry) {
      try {
        const argv = JSON.parse(entry[1]!) as unknown;
        // [node, ...flags, script]: the flags are what comes before the script, the first JavaScript file named
        // (a flag's value may be a word of its own: --max-old-space-size 48); else before the first word that is
        // not a flag.
        if (Array.isArray(argv) && argv.every((a) => typeof a === 'string')) {
          const named = argv.findIndex((a, i) => i > 0 && !a.startsWith('-') && /\.[cm]?js$/.test(a));
          const script = named > 0 ? named : argv.findIndex((a, i) => i > 0 && !a.startsWith('-'));
          if (script > 0) flags = argv.slice(1, script);
        }
      } catch {
        // Not the exec form: nothing to learn.
      }
    }
    const options = /^\s*ENV\s+NODE_OPTIONS[= ]\s*(?:"([^"]*)"|(\S+))/.exec(line);
    if (options) nodeOptions = options[1] ?? options[2];
    const malloc = /^\s*ENV\s+(MALLOC_[A-Z_]+)[= ]\s*(\S+)\s*$/.exec(line);
    if (malloc) env[malloc[1]!] = malloc[2]!;
  }
  return nodeOptions === undefined ? { flags, env } : { flags, nodeOptions, env };
}

const V1 = '/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction';
// function-patch-and-transform v0.5.0 (function-sdk-go v0.2.0) serves the
// v1beta1 service only; its messages are the same on the wire.
const V1BETA1 = '/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction';

export function impls(
  root: string,
  opts: {
    profileDir?: string;
    peerBinary: string;
    anchors: Anchors;
    ourNodeFlags: string[];
    ourNodeOptions?: string;
    /** The image's malloc settings (MALLOC_ARENA_MAX), given to function-platform and the candidate. */
    ourEnv?: Record<string, string>;
    candidateNodeFlags?: string[];
    /** A checkout whose dist/main.js is the candidate, in place of the preload. */
    candidateBuild?: string;
    tls?: BenchTls;
  },
): Record<ImplId, Impl> {
  const node = process.execPath;
  const { anchors } = opts;
  const prof = opts.profileDir ? ['--cpu-prof', '--cpu-prof-dir', opts.profileDir] : [];
  // function-platform started as its image starts it: Node flags (and NODE_OPTIONS), the entry, the serving flags.
  const ourCommand = (flags: string[], entry: string[], serving: string[], env: NodeJS.ProcessEnv = {}) => ({
    file: node,
    args: [...prof, ...flags, ...entry, ...serving],
    env: {
      ...process.env,
      ...opts.ourEnv,
      ...(opts.ourNodeOptions === undefined ? {} : { NODE_OPTIONS: opts.ourNodeOptions }),
      ...env,
    },
  });
  const plaintext = (port: number) => ['--insecure', '--address', `127.0.0.1:${port}`];
  return {
    ours: {
      id: 'ours',
      label: 'function-platform',
      path: V1,
      proto: 'v1',
      // Its default transport, whatever the shell says.
      command: (port) =>
        ourCommand(opts.ourNodeFlags, [join(root, 'dist', 'main.js')], plaintext(port), {
          FUNCTION_PLATFORM_TRANSPORT: DEFAULT_TRANSPORT,
        }),
    },
    // The same server from the esbuild bundle (scripts/bundle.mjs), its compile cache filled by a first start.
    bundle: {
      id: 'bundle',
      label: 'function-platform, bundled',
      path: V1,
      proto: 'v1',
      command: (port) => ourCommand(opts.ourNodeFlags, [join(root, 'dist', 'bundle', 'main.mjs')], plaintext(port)),
    },
    // The same server over mutual TLS, as Crossplane calls it: what the handshake's client check costs per call.
    'ours-tls': {
      id: 'ours-tls',
      label: 'function-platform, mutual TLS',
      path: V1,
      proto: 'v1',
      command: (port) => {
        if (!opts.tls) throw new Error('ours-tls needs certificates (BenchTls)');
        return ourCommand(
          opts.ourNodeFlags,
          [join(root, 'dist', 'main.js')],
          ['--tls-server-certs-dir', opts.tls.serverDir, '--address', `127.0.0.1:${port}`],
        );
      },
      credentials: () =>
        grpc.credentials.createSsl(opts.tls!.ca, opts.tls!.clientKey, opts.tls!.clientCert, {
          checkServerIdentity: () => undefined,
        }),
    },
    // The same server on node:http2 and on grpc-js, the transports before its own framing
    // (FUNCTION_PLATFORM_TRANSPORT): what each swap saved.
    'ours-http2': {
      id: 'ours-http2',
      label: 'function-platform on node:http2',
      path: V1,
      proto: 'v1',
      command: (port) =>
        ourCommand(opts.ourNodeFlags, [join(root, 'dist', 'main.js')], plaintext(port), {
          FUNCTION_PLATFORM_TRANSPORT: 'http2',
        }),
    },
    'ours-grpc-js': {
      id: 'ours-grpc-js',
      label: 'function-platform on grpc-js',
      path: V1,
      proto: 'v1',
      command: (port) =>
        ourCommand(opts.ourNodeFlags, [join(root, 'dist', 'main.js')], plaintext(port), {
          FUNCTION_PLATFORM_TRANSPORT: 'grpc-js',
        }),
    },
    candidate: {
      id: 'candidate',
      label: opts.candidateBuild ? `candidate (${basename(opts.candidateBuild)})` : 'candidate (+ bench/candidate.ts)',
      path: V1,
      proto: 'v1',
      command: (port) =>
        ourCommand(
          opts.candidateNodeFlags ?? opts.ourNodeFlags,
          opts.candidateBuild
            ? [join(opts.candidateBuild, 'dist', 'main.js')]
            : ['--import', join(root, 'dist', 'bench', 'candidate.js'), join(root, 'dist', 'main.js')],
          plaintext(port),
        ),
    },
    floor: {
      id: 'floor',
      label: 'SDK floor (no-op)',
      path: V1,
      proto: 'v1',
      command: (port) => ({
        file: node,
        args: [join(root, 'dist', 'bench', 'floor.js'), ...plaintext(port)],
      }),
    },
    // The same no-op on node:http2 with gRPC's framing: the floor's codec without grpc-js.
    'http2-floor': {
      id: 'http2-floor',
      label: 'transport floor (no-op on node:http2)',
      path: V1,
      proto: 'v1',
      command: (port) => ({
        file: node,
        args: [join(root, 'dist', 'bench', 'floor-http2.js'), ...plaintext(port)],
      }),
    },
    'go-floor': {
      id: 'go-floor',
      label: `Go floor (function-sdk-go ${anchors.goSdkVersion})`,
      path: V1,
      proto: 'v1',
      command: (port) => ({ file: anchors.goFloor, args: plaintext(port) }),
    },
    'py-floor': {
      id: 'py-floor',
      label: `Python floor (SDK ${anchors.pySdkVersion})`,
      path: V1,
      proto: 'v1',
      command: (port) => ({
        file: anchors.python,
        args: [join(root, 'bench', 'floor.py'), ...plaintext(port)],
      }),
    },
    peer: {
      id: 'peer',
      label: 'function-patch-and-transform (Go)',
      path: V1BETA1,
      proto: 'v1beta1',
      command: (port) => ({ file: opts.peerBinary, args: plaintext(port) }),
    },
  };
}

/** Builds the Go peer when it is missing and Go is there; undefined (and why) otherwise. */
export function ensurePeer(root: string, peerBinary: string): { version?: string; skipped?: string } {
  if (!existsSync(peerBinary)) {
    const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
    if (!hasGo)
      return { skipped: 'Go is not installed, so scripts/install-peer.sh cannot build function-patch-and-transform' };
    say('The Go peer is not built yet: running scripts/install-peer.sh (a few minutes, once).');
    const r = spawnSync(join(root, 'scripts', 'install-peer.sh'), { stdio: 'inherit' });
    if (r.status !== 0 || !existsSync(peerBinary)) return { skipped: 'scripts/install-peer.sh failed' };
  }
  const version = existsSync(`${peerBinary}.version`)
    ? readFileSync(`${peerBinary}.version`, 'utf8').trim()
    : 'unknown';
  return { version };
}

/** The no-op functions on the Go and Python SDKs, and the load generator: scripts/install-bench-anchors.sh. */
export interface Anchors {
  goFloor: string;
  goSdkVersion: string;
  python: string;
  pySdkVersion: string;
  ghz: string;
  ghzVersion: string;
  /** Why the anchors are missing, when they are. */
  skipped?: string;
}

/** Installs the anchors when one is missing (scripts/install-bench-anchors.sh), and says which versions run. */
export function ensureAnchors(root: string): Anchors {
  const cache = join(root, '.cache');
  const python = join(cache, 'python-fn-venv', 'bin', 'python');
  const a = {
    goFloor: join(cache, 'bin', 'fn-noop-go'),
    python,
    ghz: join(cache, 'bin', 'ghz'),
  };
  const present = () => existsSync(a.goFloor) && existsSync(a.python) && existsSync(a.ghz);
  let skipped: string | undefined;
  if (!present()) {
    say(
      'The anchors (Go and Python no-op functions, ghz) are not installed: running scripts/install-bench-anchors.sh.',
    );
    const r = spawnSync(join(root, 'scripts', 'install-bench-anchors.sh'), { stdio: 'inherit' });
    if (r.status !== 0 || !present()) skipped = 'scripts/install-bench-anchors.sh failed (it needs Go and python3)';
  }
  const goMod = (family: string, module: string) => {
    try {
      const text = readFileSync(join(root, 'scripts', 'go', family, 'go.mod'), 'utf8');
      return new RegExp(`^require ${module.replace(/[.]/g, '\\.')} (\\S+)`, 'm').exec(text)?.[1] ?? 'unknown';
    } catch {
      return 'unknown';
    }
  };
  const py = skipped
    ? undefined
    : spawnSync(python, ['-c', "import importlib.metadata as m; print(m.version('crossplane-function-sdk-python'))"], {
        encoding: 'utf8',
      });
  return {
    ...a,
    goSdkVersion: goMod('noop-function', 'github.com/crossplane/function-sdk-go'),
    ghzVersion: goMod('ghz', 'github.com/bojand/ghz'),
    pySdkVersion: py?.status === 0 ? py.stdout.trim() : 'unknown',
    ...(skipped ? { skipped } : {}),
  };
}

export interface Running {
  impl: Impl;
  pid: number;
  port: number;
  client: Client;
  /** Process start (spawn) to the first successful answer, ms. */
  coldStartMs: number;
  proc: Proc;
  stop(): Promise<void>;
}

/** Whether something accepts TCP connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Starts a server and measures its cold start: from spawn to the first
 * successful answer to `firstCall` (a real RunFunction call, checked).
 * The port is polled every 2 ms, then the call is tried every 2 ms; 20 s in all.
 */
export async function start(
  impl: Impl,
  logDir: string,
  firstCall: Buffer,
  check: (raw: Buffer) => string | undefined,
): Promise<Running> {
  const port = await freePort();
  const { file, args, env } = impl.command(port);
  if (!existsSync(file)) throw new Error(`${impl.label}: ${file} does not exist`);
  const target = `127.0.0.1:${port}`;
  // The cold start runs from here (spawnLogged opens the log, then spawns) to the checked answer.
  // Logs go straight to the file: no pipe for this process to drain.
  const t0 = performance.now();
  const proc = spawnLogged(impl.id, file, args, join(logDir, `${impl.id}-${port}.log`), env ? { env } : {});
  let client: Client | undefined;
  const stop = async () => {
    client?.close();
    await proc.stop(15_000);
  };
  try {
    const left = () => Math.max(0, t0 + 20_000 - performance.now());
    await waitFor(`${impl.label} on ${target}`, proc, left(), () => listening(port), 2);
    let wrong: string | undefined;
    await waitFor(
      `${impl.label} on ${target}`,
      proc,
      left(),
      async () => {
        client ??= dial(target, impl.path, impl.credentials?.());
        try {
          wrong = check(await client.call(firstCall, 5_000));
          return true;
        } catch (err) {
          // Listening but not serving yet (or the connection raced the bind): retry on a fresh channel.
          client.close();
          client = undefined;
          throw err;
        }
      },
      2,
    );
    if (wrong) throw new Error(`${impl.label}: first answer is wrong: ${wrong}`);
    const coldStartMs = performance.now() - t0;
    return { impl, pid: proc.pid, port, client: client!, coldStartMs, proc, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
