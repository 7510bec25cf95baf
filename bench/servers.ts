// The servers under test, as processes: how each is started, and how long it
// takes to answer its first call.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { type Client, dial } from './load.js';

export type ImplId = 'ours' | 'ours-tls' | 'candidate' | 'floor' | 'peer';

export interface Impl {
  id: ImplId;
  label: string;
  /** The gRPC method path it serves. */
  path: string;
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
 * puts between node and dist/main.js, and any `ENV NODE_OPTIONS`. The
 * benchmark starts dist/main.js the same way, so a flag added there is
 * measured here.
 */
export function imageNodeFlags(root: string): { flags: string[]; nodeOptions?: string } {
  let text: string;
  try {
    text = readFileSync(join(root, 'Dockerfile'), 'utf8');
  } catch {
    return { flags: [] };
  }
  let flags: string[] = [];
  let nodeOptions: string | undefined;
  for (const line of text.split('\n')) {
    const entry = /^\s*ENTRYPOINT\s+(\[.*\])\s*$/.exec(line);
    if (entry) {
      try {
        const argv = JSON.parse(entry[1]!) as unknown;
        if (Array.isArray(argv)) {
          const main = argv.findIndex((a) => typeof a === 'string' && a.endsWith('dist/main.js'));
          if (main > 0) flags = argv.slice(1, main).filter((a): a is string => typeof a === 'string' && a.startsWith('-'));
        }
      } catch {
        // Not the exec form: nothing to learn.
      }
    }
    const env = /^\s*ENV\s+NODE_OPTIONS[= ]\s*(?:"([^"]*)"|(\S+))/.exec(line);
    if (env) nodeOptions = env[1] ?? env[2];
  }
  return nodeOptions === undefined ? { flags } : { flags, nodeOptions };
}

const V1 = '/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction';
// function-patch-and-transform v0.5.0 (function-sdk-go v0.2.0) serves the
// v1beta1 service only; its messages are the same on the wire.
const V1BETA1 = '/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction';

export function impls(
  root: string,
  opts: { profileDir?: string; peerBinary: string; ourNodeFlags: string[]; ourNodeOptions?: string; candidateNodeFlags?: string[]; tls?: BenchTls },
): Record<ImplId, Impl> {
  const node = process.execPath;
  const prof = opts.profileDir ? ['--cpu-prof', '--cpu-prof-dir', opts.profileDir] : [];
  return {
    ours: {
      id: 'ours',
      label: 'function-platform',
      path: V1,
      command: (port) => ({
        file: node,
        args: [...prof, ...opts.ourNodeFlags, join(root, 'dist', 'main.js'), '--insecure', '--address', `127.0.0.1:${port}`],
        ...(opts.ourNodeOptions === undefined ? {} : { env: { ...process.env, NODE_OPTIONS: opts.ourNodeOptions } }),
      }),
    },
    // The same server over mutual TLS, as Crossplane calls it: what the handshake's client check costs per call.
    'ours-tls': {
      id: 'ours-tls',
      label: 'function-platform, mutual TLS',
      path: V1,
      command: (port) => {
        if (!opts.tls) throw new Error('ours-tls needs certificates (BenchTls)');
        return {
          file: node,
          args: [...prof, ...opts.ourNodeFlags, join(root, 'dist', 'main.js'), '--tls-server-certs-dir', opts.tls.serverDir, '--address', `127.0.0.1:${port}`],
          ...(opts.ourNodeOptions === undefined ? {} : { env: { ...process.env, NODE_OPTIONS: opts.ourNodeOptions } }),
        };
      },
      credentials: () => grpc.credentials.createSsl(opts.tls!.ca, opts.tls!.clientKey, opts.tls!.clientCert, { checkServerIdentity: () => undefined }),
    },
    candidate: {
      id: 'candidate',
      label: 'candidate (+ bench/candidate.ts)',
      path: V1,
      command: (port) => ({
        file: node,
        args: [...prof, ...(opts.candidateNodeFlags ?? opts.ourNodeFlags), '--import', join(root, 'dist', 'bench', 'candidate.js'), join(root, 'dist', 'main.js'), '--insecure', '--address', `127.0.0.1:${port}`],
        ...(opts.ourNodeOptions === undefined ? {} : { env: { ...process.env, NODE_OPTIONS: opts.ourNodeOptions } }),
      }),
    },
    floor: {
      id: 'floor',
      label: 'SDK floor (no-op)',
      path: V1,
      command: (port) => ({ file: node, args: [join(root, 'dist', 'bench', 'floor.js'), '--insecure', '--address', `127.0.0.1:${port}`] }),
    },
    peer: {
      id: 'peer',
      label: 'function-patch-and-transform (Go)',
      path: V1BETA1,
      command: (port) => ({ file: opts.peerBinary, args: ['--insecure', '--address', `127.0.0.1:${port}`] }),
    },
  };
}

/** A free loopback port: bind port 0, read it, let it go. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface Running {
  impl: Impl;
  pid: number;
  port: number;
  client: Client;
  /** Process start (spawn) to the first successful answer, ms. */
  coldStartMs: number;
  child: ChildProcess;
  logFile: string;
  stop(): Promise<void>;
}

/** Resolves once something accepts TCP connections on the port. */
async function waitForPort(port: number, child: ChildProcess, deadline: number, logFile: string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited (${child.exitCode ?? child.signalCode}) before listening; see ${logFile}`);
    }
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (performance.now() > deadline) throw new Error(`not listening on 127.0.0.1:${port} after 20s; see ${logFile}`);
    await sleep(2);
  }
}

/**
 * Starts a server and measures its cold start: from spawn to the first
 * successful answer to `firstCall` (a real RunFunction call, checked).
 */
export async function start(impl: Impl, logDir: string, firstCall: Buffer, check: (raw: Buffer) => string | undefined): Promise<Running> {
  const port = await freePort();
  const { file, args, env } = impl.command(port);
  if (!existsSync(file)) throw new Error(`${impl.label}: ${file} does not exist`);
  const logFile = join(logDir, `${impl.id}-${port}.log`);
  const fd = openSync(logFile, 'w');
  // Logs go straight to a file: no pipe for this process to drain.
  const t0 = performance.now();
  const child = spawn(file, args, { stdio: ['ignore', fd, fd], ...(env ? { env } : {}) });
  closeSync(fd);
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', reap);
  };
  try {
    const deadline = t0 + 20_000;
    await waitForPort(port, child, deadline, logFile);
    let client = dial(`127.0.0.1:${port}`, impl.path, impl.credentials?.());
    for (;;) {
      try {
        const raw = await client.call(firstCall, 5_000);
        const problem = check(raw);
        if (problem) throw new Error(`${impl.label}: first answer is wrong: ${problem}`);
        break;
      } catch (err) {
        // Listening but not serving yet (or the connection raced the bind): retry on a fresh channel.
        if (err instanceof Error && err.message.includes('first answer is wrong')) throw err;
        if (performance.now() > deadline) throw new Error(`${impl.label}: no answer within 20s: ${String(err)}; see ${logFile}`);
        client.close();
        await sleep(2);
        client = dial(`127.0.0.1:${port}`, impl.path, impl.credentials?.());
      }
    }
    const coldStartMs = performance.now() - t0;
    const running: Running = {
      impl,
      pid: child.pid!,
      port,
      client,
      coldStartMs,
      child,
      logFile,
      stop: async () => {
        client.close();
        await stop();
      },
    };
    return running;
  } catch (err) {
    await stop();
    throw err;
  }
}
