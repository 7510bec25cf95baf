// moto's server on loopback: the real RDS and S3 APIs for the AWS path.
import { type Moto, motoServerPath, startMotoServer } from '../../dev/infra/moto.js';
import { freePort } from '../../dev/infra/processes.js';
import { inCI } from './tools.js';

export { freePort };

export type { Moto };

export function motoBinary(): string | undefined {
  const bin = motoServerPath();
  if (bin) return bin;
  if (inCI()) throw new Error('moto_server not found: scripts/install-moto.sh must run before the tests in CI');
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
  return startMotoServer(bin, { env });
}
