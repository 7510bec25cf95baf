// Certificates shaped exactly as Crossplane makes them (xp-certs copies the
// templates of its initializer), and RunFunction dialled exactly as
// Crossplane's function runner dials (xp-fnclient: crossplane-runtime's
// LoadMTLSConfig, grpc-go, credentials.NewTLS). Both are built by
// scripts/install-crossplane.sh from scripts/go/crossplane.
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { toolPath } from './tools.js';

/** The names Crossplane's package runtime puts into a function's server certificate (DNSNamesForService). */
export const FUNCTION_SERVICE = 'function-platform';
export const FUNCTION_DNS = [
  FUNCTION_SERVICE,
  `${FUNCTION_SERVICE}.crossplane-system`,
  `${FUNCTION_SERVICE}.crossplane-system.svc`,
];
/** What a client verifies the server certificate for, as Crossplane does when it dials the Service. */
export const FUNCTION_AUTHORITY = `${FUNCTION_SERVICE}.crossplane-system`;

export const XP_CERTS_TOOLS = ['xp-certs', 'xp-fnclient'] as const;

/** Each directory holds tls.crt, tls.key and ca.crt, as a Crossplane Secret mounts them. */
export interface CrossplaneCerts {
  /** Crossplane's CA (tls.crt = ca.crt). */
  ca: string;
  /** The function's server certificate, for --tls-server-certs-dir. */
  server: string;
  /** Crossplane's client certificate. */
  client: string;
  /** A CA with exactly Crossplane's subject but another key, and a client it signed. */
  impostorCa: string;
  impostor: string;
  expired: string;
  notYetValid: string;
  /** Signed by the CA, but for server authentication only. */
  serverUsage: string;
}

function xpCerts(...args: string[]): void {
  execFileSync(toolPath('xp-certs'), args, { stdio: 'pipe' });
}

export function makeCrossplaneCerts(extraServerDns: readonly string[] = []): CrossplaneCerts {
  const root = mkdtempSync(join(tmpdir(), 'fp-xpcerts-'));
  const dir = (name: string) => join(root, name);
  const dns = [...FUNCTION_DNS, ...extraServerDns].flatMap((d) => ['--dns', d]);
  xpCerts('ca', '--out', dir('ca'));
  xpCerts('sign', '--ca', dir('ca'), '--usage', 'server', '--out', dir('server'), ...dns);
  xpCerts('sign', '--ca', dir('ca'), '--usage', 'client', '--out', dir('client'));
  xpCerts('ca', '--out', dir('impostor-ca'));
  xpCerts('sign', '--ca', dir('impostor-ca'), '--usage', 'client', '--out', dir('impostor'));
  // The impostor trusts the real CA for the server: only its own certificate is false.
  copyFileSync(join(dir('ca'), 'ca.crt'), join(dir('impostor'), 'ca.crt'));
  const day = 24 * 3600 * 1000;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
  xpCerts(
    'sign',
    '--ca',
    dir('ca'),
    '--usage',
    'client',
    '--out',
    dir('expired'),
    '--not-before',
    iso(Date.now() - 30 * day),
    '--not-after',
    iso(Date.now() - day),
  );
  xpCerts(
    'sign',
    '--ca',
    dir('ca'),
    '--usage',
    'client',
    '--out',
    dir('not-yet-valid'),
    '--not-before',
    iso(Date.now() + day),
  );
  xpCerts(
    'sign',
    '--ca',
    dir('ca'),
    '--usage',
    'server',
    '--out',
    dir('server-usage'),
    '--dns',
    'crossplane.crossplane-system',
  );
  return {
    ca: dir('ca'),
    server: dir('server'),
    client: dir('client'),
    impostorCa: dir('impostor-ca'),
    impostor: dir('impostor'),
    expired: dir('expired'),
    notYetValid: dir('not-yet-valid'),
    serverUsage: dir('server-usage'),
  };
}

export const pem = (dir: string, file: 'tls.crt' | 'tls.key' | 'ca.crt') => readFileSync(join(dir, file));

export type GoCallOutcome = { ok: true; rsp: RunFunctionResponse } | { ok: false; code: string; message: string };

/** One RunFunction call from a Go client that dials as Crossplane does, with the client certificate in `certsDir`. */
export function callLikeCrossplane(
  target: string,
  certsDir: string,
  req: RunFunctionRequest,
  opts: { authority?: string; timeoutMs?: number } = {},
): Promise<GoCallOutcome> {
  const args = ['--target', target, '--certs-dir', certsDir, '--timeout', `${opts.timeoutMs ?? 10_000}ms`];
  if (opts.authority) args.push('--authority', opts.authority);
  return new Promise((resolve) => {
    const child = execFile(toolPath('xp-fnclient'), args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) {
        resolve({ ok: true, rsp: RunFunctionResponse.fromJSON(JSON.parse(stdout)) });
        return;
      }
      const line = stderr.trim();
      const at = line.indexOf(': ');
      resolve({
        ok: false,
        code: at > 0 ? line.slice(0, at) : 'unknown',
        message: at > 0 ? line.slice(at + 2) : line || String(err),
      });
    });
    child.stdin!.end(JSON.stringify(RunFunctionRequest.toJSON(req)));
  });
}
