// Starts the built function (dist/main.js) as a real child process, the way
// Crossplane's Development runtime or an image would, for tests that talk to
// it over gRPC (crank render, integration tests with or without TLS).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../dev/infra/paths.js';

export { repoRoot };

export interface StartOptions {
  /** Listen address; port 0 lets the OS pick a free one (reported back as `port`). */
  address?: string;
  /** Pass --insecure (plaintext gRPC). Default true; set false and pass TLS flags in `args`. */
  insecure?: boolean;
  /** More flags, appended after --address/--insecure, e.g. ['--tls-server-certs-dir', dir, '--debug']. */
  args?: string[];
  /** Extra environment for the child, merged over process.env. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the "listening" log line. */
  startTimeoutMs?: number;
  /** Entry point; defaults to dist/main.js, the file Crossplane-style images run. */
  entry?: string;
  /** The program and its first arguments instead of `node ENTRY` (e.g. an image's entrypoint in its own root). */
  command?: readonly string[];
}

export interface FunctionProcess {
  /** The port actually bound, taken from the function's own log line. */
  port: number;
  /** host:port to dial. */
  target: string;
  /** SIGTERM (then SIGKILL after `killAfterMs`); resolves with the exit code, null if killed by a signal. */
  stop(killAfterMs?: number): Promise<number | null>;
  /** Everything the process wrote so far, stdout and stderr interleaved. */
  logs(): string;
  readonly child: ChildProcess;
}

/** The port from a log line such as {"port":43719,...,"msg":"listening on port 43719"}. */
function listeningPort(line: string): number | undefined {
  if (!line.includes('listening')) return undefined;
  try {
    const rec = JSON.parse(line) as { port?: unknown };
    if (typeof rec.port === 'number') return rec.port;
  } catch {
    // Not JSON (e.g. pretty-printed logs): fall back to the text.
  }
  const m = /"port"\s*:\s*(\d+)/.exec(line) ?? /listening on port (\d+)/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/**
 * Starts the function and resolves once it logs that it is listening.
 * Rejects, with the logs so far, if it exits or stays silent too long first,
 * so a test that expects startup to fail (e.g. missing TLS certs) can assert on it.
 */
export function startFunction(opts: StartOptions = {}): Promise<FunctionProcess> {
  const entry = opts.entry ?? join(repoRoot, 'dist', 'main.js');
  if (!opts.command && !existsSync(entry)) {
    return Promise.reject(
      new Error(`${entry} does not exist: build first (npx tsc -p . && node scripts/link-main.mjs)`),
    );
  }
  const address = opts.address ?? '127.0.0.1:0';
  // process.execPath: the Node the tests run under (24), not whatever `node` is on PATH.
  const [program, ...first] = opts.command ?? [process.execPath, entry];
  const args = [
    ...first,
    '--address',
    address,
    ...((opts.insecure ?? true) ? ['--insecure'] : []),
    ...(opts.args ?? []),
  ];
  const child = spawn(program!, args, {
    cwd: repoRoot,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  let output = '';
  let exitCode: number | null | undefined; // undefined while running
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code;
      resolve(code);
    });
  });
  // A test that crashes must not leave a server running behind it.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  void exited.then(() => process.removeListener('exit', reap));

  const stop = async (killAfterMs = 15_000): Promise<number | null> => {
    if (exitCode !== undefined) return exitCode;
    child.kill('SIGTERM');
    // The function drains calls in flight for up to 10s; never wait forever.
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  return new Promise((resolve, reject) => {
    let pending = '';
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop(1_000).then(() => reject(new Error(`function did not start: ${why}\n--- logs ---\n${output}`)));
    };
    const timeoutMs = opts.startTimeoutMs ?? 15_000;
    const timer = setTimeout(() => fail(`no "listening" log line within ${timeoutMs}ms`), timeoutMs);

    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (settled) return;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? ''; // keep a partial last line for the next chunk
      for (const line of lines) {
        const port = listeningPort(line);
        if (port === undefined) continue;
        settled = true;
        clearTimeout(timer);
        const host = address.slice(0, address.lastIndexOf(':')) || '127.0.0.1';
        resolve({ port, target: `${host}:${port}`, stop, logs: () => output, child });
        return;
      }
    });
    child.once('error', (err) => fail(`spawn failed: ${err.message}`));
    void exited.then((code) => fail(`exited with code ${code} before listening`));
  });
}

/**
 * The URL of the metrics endpoint a function started with `--metrics-address HOST:0` serves, from the line it
 * logs once bound (the port is the OS's pick); rejects, with the logs, if no such line comes within `timeoutMs`.
 */
export async function metricsUrlOf(fn: FunctionProcess, timeoutMs = 2000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const port = /"metricsPort":(\d+)/.exec(fn.logs())?.[1];
    if (port) return `http://127.0.0.1:${port}/metrics`;
    if (Date.now() > deadline) throw new Error(`no line names the metrics port:\n${fn.logs()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
