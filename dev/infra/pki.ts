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
  const key = (name: string) =>
    openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  key('ca');
  openssl(
    dir,
    'req',
    '-x509',
    '-new',
    '-key',
    'ca.key',
    '-subj',
    caSubject,
    '-days',
    '2',
    '-out',
    'ca.crt',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  );
  const paths = (name: string) => ({ cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) });
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    sign(name, subject, extensions) {
      key(name);
      openssl(dir, 'req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`);
      writeFileSync(join(dir, `${name}.ext`), extensions);
      openssl(
        dir,
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      );
      return paths(name);
    },
    selfSigned(name, subject) {
      key(name);
      openssl(
        dir,
        'req',
        '-x509',
        '-new',
        '-key',
        `${name}.key`,
        '-subj',
        subject,
        '-days',
        '2',
        '-out',
        `${name}.crt`,
      );
      return paths(name);
    },
  };
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
