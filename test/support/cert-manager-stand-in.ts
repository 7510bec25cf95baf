// CERT-MANAGER STAND-IN (cert-manager is not installed here, only its CRDs
// from ../shared/crds): for each Certificate of a namespace that is not Ready,
// it does what cert-manager's CA issuer does: a key and a certificate for the
// Certificate's dnsNames, signed by one CA of the run, written to the
// Certificate's secretName as a kubernetes.io/tls Secret (tls.crt, tls.key,
// ca.crt), and then the Certificate's Ready condition. The keys and
// certificates are real (openssl), so a real server and client use them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Json, KubeClient } from './apiserver.js';

export interface CertManagerStandIn {
  /** The CA's certificate (PEM): what a client verifies the servers with. */
  caPem: string;
  /** The Certificates issued so far, by namespace/name. */
  issued: Set<string>;
  /** While held, nothing is issued (a ClusterIssuer not ready yet). */
  hold: boolean;
  stop(): Promise<void>;
}

/** What cert-manager writes on a Certificate once its Secret holds a valid certificate: Ready. */
export async function markIssued(client: KubeClient, cert: Json): Promise<void> {
  await client.mergeStatus(cert, {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: 'Certificate is up to date and has not expired',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    ],
  });
}

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });

export function startCertManagerStandIn(client: KubeClient, namespace: string, everyMs = 500): CertManagerStandIn {
  const dir = mkdtempSync(join(tmpdir(), 'fp-cert-manager-'));
  const ca = { key: join(dir, 'ca.key'), crt: join(dir, 'ca.crt') };
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', ca.key]);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    ca.key,
    '-subj',
    '/CN=function-platform test CA',
    '-days',
    '2',
    '-out',
    ca.crt,
  ]);
  const caPem = readFileSync(ca.crt, 'utf8');

  const issue = (cert: Json): { crt: string; key: string } => {
    const names: string[] = cert['spec']?.['dnsNames'] ?? [];
    const base = join(dir, `${cert['metadata']['name']}`);
    const cnf = `${base}.cnf`;
    writeFileSync(
      cnf,
      [
        '[req]',
        'distinguished_name = dn',
        '[dn]',
        '[ext]',
        `subjectAltName = ${names.map((n) => `DNS:${n}`).join(',')}`,
        'keyUsage = digitalSignature, keyEncipherment',
        'extendedKeyUsage = serverAuth',
        '',
      ].join('\n'),
    );
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${base}.key`]);
    openssl(['req', '-new', '-key', `${base}.key`, '-subj', `/CN=${names[0] ?? 'server'}`, '-out', `${base}.csr`]);
    openssl([
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      ca.crt,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      cnf,
      '-extensions',
      'ext',
      '-out',
      `${base}.crt`,
    ]);
    return { crt: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') };
  };

  const standIn: CertManagerStandIn = { caPem, issued: new Set(), hold: false, stop: async () => {} };
  let stopped = false;
  const pass = async () => {
    if (standIn.hold) return;
    for (const cert of await client.listObjs('cert-manager.io/v1', 'Certificate', namespace)) {
      const ready = (cert['status']?.['conditions'] ?? []).some(
        (c: Json) => c['type'] === 'Ready' && c['status'] === 'True',
      );
      if (ready) continue;
      const { crt, key } = issue(cert);
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      await client.applyObj(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: cert['spec']['secretName'], namespace },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': b64(crt), 'tls.key': b64(key), 'ca.crt': b64(caPem) },
        },
        { fieldManager: 'cert-manager-stand-in', force: true },
      );
      await markIssued(client, cert);
      standIn.issued.add(`${namespace}/${cert['metadata']['name']}`);
    }
  };
  const loop = (async () => {
    while (!stopped) {
      // A failed pass is said (a test waiting on it then knows why), and tried again.
      await pass().catch((err: unknown) => console.log(`# cert-manager stand-in: ${String(err)}`));
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  standIn.stop = async () => {
    stopped = true;
    await loop;
    rmSync(dir, { recursive: true, force: true });
  };
  return standIn;
}
