// Certificates made with openssl for the runs of the tests, the bench and the
// local control plane: a CA and leaves it signs, EC P-256, valid two days.
// (Crossplane-shaped certificates, which openssl's defaults cannot make, come
// from xp-certs: see crossplane-tls.ts.)
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function openssl(cwd: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

export interface Pki {
  dir: string;
  /** Makes NAME.key, and NAME.crt signed by the CA with the given subject and extensions; returns the two paths. */
  sign(name: string, subject: string, extensions: string): { cert: string; key: string };
  /** A self-signed certificate no CA of this PKI vouches for. */
  selfSigned(name: string, subject: string): { cert: string; key: string };
  ca: string;
  caKey: string;
}

/** A CA in `dir` (a new temp dir when not given), ready to sign leaves. */
export function newPki(dir = mkdtempSync(join(tmpdir(), 'fp-pki-')), caSubject = '/CN=fp-test-ca'): Pki {
  mkdirSync(dir, { recursive: true });
  selfSignedIn(
    dir,
    'ca',
    caSubject,
    'basicConstraints=critical,CA:TRUE',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  );
  return openPki(dir);
}

/** The CA that ca.crt and ca.key in `dir` hold (made by newPki), to sign more leaves with. */
export function openPki(dir: string): Pki {
  const run = (command: string, ...args: string[]) => openssl(dir, ...command.split(' '), ...args);
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    sign(name, subject, extensions) {
      run('genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out', `${name}.key`);
      run('req -new -key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`);
      writeFileSync(join(dir, `${name}.ext`), extensions);
      run(
        'x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -in',
        `${name}.csr`,
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      );
      return leafPaths(dir, name);
    },
    selfSigned: (name, subject) => selfSignedIn(dir, name, subject),
  };
}

const leafPaths = (dir: string, name: string) => ({ cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) });

/** NAME.key in `dir`, and NAME.crt signed by its own key. */
function selfSignedIn(dir: string, name: string, subject: string, ...extensions: string[]) {
  openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  openssl(
    dir,
    'req',
    '-x509',
    '-new',
    '-days',
    '2',
    '-key',
    `${name}.key`,
    '-subj',
    subject,
    '-out',
    `${name}.crt`,
    ...extensions.flatMap((e) => ['-addext', e]),
  );
  return leafPaths(dir, name);
}

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

/**
 * Certificates laid out as a function's are mounted: tls.crt/tls.key (for
 * localhost and 127.0.0.1) with ca.crt beside them, and a client certificate
 * signed by the same CA. Made the textbook way, with key identifiers.
 */
export function makeCerts(): TestCerts {
  const pki = newPki();
  const _server = pki.sign(
    'tls',
    '/CN=function-platform',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n',
  );
  const client = pki.sign('client', '/CN=crossplane', 'extendedKeyUsage=clientAuth\n');
  const rogue = pki.selfSigned('rogue', '/CN=crossplane');
  return {
    serverDir: pki.dir,
    ca: readFileSync(pki.ca),
    clientCert: readFileSync(client.cert),
    clientKey: readFileSync(client.key),
    rogueCert: readFileSync(rogue.cert),
    rogueKey: readFileSync(rogue.key),
  };
}
