// moto's server on loopback: the real RDS and S3 APIs, for the tests of the
// AWS path and the benchmark's live-AWS case. scripts/install-moto.sh puts it
// in .cache/moto-venv; $MOTO_SERVER overrides.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './paths.js';
import { freePort, type Proc, spawnLogged, waitFor } from './processes.js';

export interface Moto {
  endpoint: string;
  proc: Proc;
  stop(): Promise<void>;
}

/** Where moto_server is, or undefined when it is not installed. */
export function motoServerPath(): string | undefined {
  const bin = process.env['MOTO_SERVER'] ?? join(repoRoot, '.cache', 'moto-venv', 'bin', 'moto_server');
  return existsSync(bin) ? bin : undefined;
}

/**
 * Starts moto_server on `host` (loopback by default; its log in `logDir`, a
 * temp dir by default) and resolves once it answers HTTP.
 */
export async function startMotoServer(
  bin: string,
  opts: { env?: NodeJS.ProcessEnv; logDir?: string; host?: string; detached?: boolean } = {},
): Promise<Moto> {
  const port = await freePort();
  const host = opts.host ?? '127.0.0.1';
  const log = join(opts.logDir ?? mkdtempSync(join(tmpdir(), 'fp-moto-')), `moto-${port}.log`);
  const proc = spawnLogged('moto_server', bin, ['-H', host, '-p', String(port)], log, {
    env: { ...process.env, ...opts.env },
    ...(opts.detached ? { detached: true } : {}),
  });
  const endpoint = `http://${host}:${port}`;
  try {
    await waitFor(
      'moto_server',
      proc,
      30_000,
      async () => (await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) })).status < 500,
      200,
    );
  } catch (err) {
    await proc.stop(1000);
    throw err;
  }
  return { endpoint, proc, stop: () => proc.stop(5000) };
}
