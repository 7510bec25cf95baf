// moto's server on loopback: the real RDS and S3 APIs for the AWS path.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inCI } from './crank.js';
import { repoRoot } from '../../dev/infra/paths.js';

export interface Moto {
  endpoint: string;
  stop(): Promise<void>;
  readonly child: ChildProcess;
}

export function motoBinary(): string | undefined {
  const bin = process.env['MOTO_SERVER'] ?? join(repoRoot, '.cache', 'moto-venv', 'bin', 'moto_server');
  if (existsSync(bin)) return bin;
  if (inCI()) throw new Error(`moto_server not found at ${bin}: scripts/install-moto.sh must run before the tests in CI`);
  return undefined;
}

export function motoSkipReason(): string | false {
  if (motoBinary()) return false;
  const reason = 'moto is not installed (bash scripts/install-moto.sh): the tests against the AWS API are SKIPPED';
  console.warn(`\n!!! ${reason} !!!\n`);
  return reason;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts moto_server and resolves once it answers HTTP. */
export async function startMoto(env: NodeJS.ProcessEnv = {}): Promise<Moto> {
  const bin = motoBinary();
  if (!bin) throw new Error('moto is not installed');
  const port = await freePort();
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let logs = '';
  child.stdout?.on('data', (b: Buffer) => (logs += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (logs += b.toString()));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${logs}`);
    try {
      const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      if (res.status < 500) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`moto_server did not answer in 30 s: ${logs}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
