// moto's server on loopback: the real RDS and S3 APIs for the AWS path.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inCI } from './crank.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { freePort, spawnLogged, waitFor } from '../../dev/infra/processes.js';

export { freePort };

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

/** Starts moto_server and resolves once it answers HTTP. */
export async function startMoto(env: NodeJS.ProcessEnv = {}): Promise<Moto> {
  const bin = motoBinary();
  if (!bin) throw new Error('moto is not installed');
  const port = await freePort();
  const log = join(mkdtempSync(join(tmpdir(), 'fp-moto-')), 'moto.log');
  const proc = spawnLogged('moto_server', bin, ['-H', '127.0.0.1', '-p', String(port)], log, { env: { ...process.env, ...env } });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitFor('moto_server', proc, 30_000, async () => (await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) })).status < 500, 200);
  } catch (err) {
    await proc.stop(1000);
    throw err;
  }
  return { endpoint, child: proc.child, stop: () => proc.stop(5000) };
}
