// Certificates as Crossplane lays them out: a CA, a server certificate in
// tls.crt/tls.key with ca.crt beside it, and a client certificate signed by
// the same CA (what Crossplane's function runner presents).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCerts {
  /** Directory for --tls-server-certs-dir: tls.crt, tls.key, ca.crt. */
  serverDir: string;
  ca: Buffer;
  clientCert: Buffer;
  clientKey: Buffer;
  /** A client certificate no CA of ours signed. */
  rogueCert: Buffer;
  rogueKey: Buffer;
}

function openssl(cwd: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

export function makeCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'fp-certs-'));
  const key = (name: string) => openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  key('ca');
  openssl(dir, 'req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=test-ca', '-days', '2', '-out', 'ca.crt');
  const signed = (name: string, cn: string, ext: string) => {
    key(name);
    openssl(dir, 'req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  };
  signed('tls', 'function-platform', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('client', 'crossplane', 'extendedKeyUsage=clientAuth\n');
  key('rogue');
  openssl(dir, 'req', '-x509', '-new', '-key', 'rogue.key', '-subj', '/CN=crossplane', '-days', '2', '-out', 'rogue.crt');
  return {
    serverDir: dir,
    ca: readFileSync(join(dir, 'ca.crt')),
    clientCert: readFileSync(join(dir, 'client.crt')),
    clientKey: readFileSync(join(dir, 'client.key')),
    rogueCert: readFileSync(join(dir, 'rogue.crt')),
    rogueKey: readFileSync(join(dir, 'rogue.key')),
  };
}
