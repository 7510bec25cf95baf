// Mutual TLS as Crossplane speaks it, judged by the function itself.
//
// Crossplane's CA, its client certificate and every function's server
// certificate share one subject (O=Crossplane, CN=Crossplane, ...), so the
// leaves carry no authority key identifier. Go accepts them; OpenSSL takes
// such a leaf for self-signed and refuses it. The server therefore asks
// OpenSSL for the client's certificate without letting it judge, and judges
// here: signed by a key in ca.crt (the signature, never the names), within
// its dates, and allowed for client authentication where it lists usages.
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const CERT_HELP = 'TLS needs tls.crt, tls.key and ca.crt in --tls-server-certs-dir, or pass --insecure';

/** id-kp-clientAuth and anyExtendedKeyUsage (RFC 5280, 4.2.1.12). */
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_USAGE = '2.5.29.37.0';

/** What the server serves and whom it trusts, read once at start. */
export interface ServerTls {
  /** PEM of tls.crt, tls.key and ca.crt, as read. */
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
  /** Every certificate of ca.crt: a client must be signed by one of their keys. */
  trusted: X509Certificate[];
}

/** A certificate named the way logs may name one: subject and SHA-256 fingerprint, nothing more. */
export interface CertificateName {
  subject: string;
  fingerprint256: string;
}

export type ClientVerdict =
  | { ok: true; client: CertificateName; ca: CertificateName }
  | { ok: false; reason: string; client?: CertificateName };

export function nameOf(cert: X509Certificate): CertificateName {
  // The subject on one line, RDNs in the order they are printed.
  return { subject: cert.subject.split('\n').join(', '), fingerprint256: cert.fingerprint256 };
}

/** Every certificate of a PEM file, parsed; none, or one that does not parse, is an error naming the file. */
function certificates(pem: Buffer, path: string): X509Certificate[] {
  const blocks = pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new Error(`${path} holds no PEM certificate (no "-----BEGIN CERTIFICATE-----" block): ${CERT_HELP}`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(
        `${path}: certificate ${i + 1} cannot be parsed (${err instanceof Error ? err.message : String(err)}): ${CERT_HELP}`,
      );
    }
  });
}

function privateKey(pem: Buffer, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new Error(
      `${path} is not a PEM private key (${err instanceof Error ? err.message : String(err)}): ${CERT_HELP}`,
    );
  }
}

/**
 * Reads tls.crt, tls.key and ca.crt from `dir` and checks them, so that a
 * broken mount fails the start naming the file (OpenSSL would report a bad
 * key without a name, and take an empty ca.crt and then refuse everyone).
 */
export function readServerTls(dir: string): ServerTls {
  const path = (file: string) => join(dir, file);
  const read = (file: string) => {
    try {
      return readFileSync(path(file));
    } catch (err) {
      const why = err instanceof Error && 'code' in err ? String((err as NodeJS.ErrnoException).code) : 'unreadable';
      throw new Error(`cannot read ${path(file)} (${why}): ${CERT_HELP}`);
    }
  };
  const ca = read('ca.crt');
  const key = read('tls.key');
  const cert = read('tls.crt');
  const trusted = certificates(ca, path('ca.crt'));
  const [leaf] = certificates(cert, path('tls.crt'));
  if (!leaf!.checkPrivateKey(privateKey(key, path('tls.key')))) {
    throw new Error(`${path('tls.key')} is not the key of the certificate in ${path('tls.crt')}: ${CERT_HELP}`);
  }
  return { cert, key, ca, trusted };
}

const within = (cert: X509Certificate, now: number) =>
  cert.validFromDate.getTime() <= now && now <= cert.validToDate.getTime();

/**
 * Whether a connection's client certificate may call the function. Once per
 * connection; `now` is injectable for tests. The reasons are short, for a log
 * line: they never quote more of a certificate than its subject and fingerprint.
 */
export function judgeClient(
  peer: X509Certificate | undefined,
  trusted: readonly X509Certificate[],
  now = Date.now(),
): ClientVerdict {
  if (!peer) return { ok: false, reason: 'no client certificate' };
  const client = nameOf(peer);
  // The signature against each trusted key: a CA with the same subject and another key signs nothing we accept.
  const ca = trusted.find((c) => peer.verify(c.publicKey));
  if (!ca) return { ok: false, reason: 'not signed by the CA in ca.crt', client };
  if (!within(ca, now))
    return { ok: false, reason: `its CA is outside its validity (${ca.validFrom} to ${ca.validTo})`, client };
  if (now < peer.validFromDate.getTime()) return { ok: false, reason: `not valid before ${peer.validFrom}`, client };
  if (now > peer.validToDate.getTime()) return { ok: false, reason: `expired ${peer.validTo}`, client };
  // X509Certificate.keyUsage lists the extended key usages; undefined when the certificate has none (any use).
  const usages = peer.keyUsage;
  if (usages && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_USAGE)) {
    return { ok: false, reason: 'its extended key usages do not allow client authentication', client };
  }
  return { ok: true, client, ca: nameOf(ca) };
}
