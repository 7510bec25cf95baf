// TLS for a Database in a StatefulSet, when the platform names a ClusterIssuer
// (defaults.database.tls): a cert-manager Certificate for the client
// Service's names, the server started with it and refusing every connection
// over the network without TLS (PostgreSQL: ssl=on and a pg_hba of ours;
// MySQL: require_secure_transport), and connection URIs that ask for it. The
// engines' own clients prefer TLS by default (libpq's pg_dump, psql and
// pg_isready; MySQL's mysql and mysqldump, and MariaDB's since 10.11 in this
// environment's stand-in image), so the backup and restore Jobs and the
// probes need no change. A serving database is never stopped to wait for a
// certificate: it moves to TLS (one restart) once its Certificate is Ready,
// and stays on TLS from then on (a renewal that fails leaves the issued
// Secret). Both servers read their key and certificate when they start: a
// renewed one (the Certificate's revision 2 and later) restarts the server once.
import type { V1ConfigMap, V1Container, V1PodSpec } from '@kubernetes/client-node';
import { judge } from '../../../kinds/index.js';
import { list, num, type Obj, str } from '../../../kube.js';
import { dnsLabel } from '../../../names.js';
import type { Desired } from '../../blueprint.js';
import { baseName, type DatabaseInput, meta } from '../database.js';

export const TLS_KEYS = { certificate: 'tls-certificate', hba: 'tls-hba' } as const;

const TLS_VOLUME = 'tls';
const HBA_VOLUME = 'hba';
const TLS_DIR = '/etc/function-platform/tls';
const HBA_DIR = '/etc/function-platform/hba';

/**
 * The official image's own rules for the socket and the loopback (its entrypoint and probes run there, inside
 * the pod), then TLS with a password for everything else; a plain connection from outside meets the last line,
 * and PostgreSQL refuses it ("pg_hba.conf rejects connection ... no encryption").
 */
const PG_HBA = [
  '# function-platform: every connection from outside the pod must use TLS',
  'local     all all              trust',
  'host      all all 127.0.0.1/32 trust',
  'host      all all ::1/128      trust',
  'hostssl   all all all          scram-sha-256',
  'hostnossl all all all          reject',
  '',
].join('\n');

/** The ClusterIssuer this Database's TLS comes from, when the platform asks for TLS. */
export function tlsIssuer(input: DatabaseInput): string | undefined {
  return input.defaults?.database?.tls?.clusterIssuer;
}

/** The Certificate's name, and the Secret cert-manager keeps it in: one name for the Database's whole life. */
export const tlsSecretName = (input: DatabaseInput) => dnsLabel(baseName(input.owner), 'tls');

/** The pg_hba ConfigMap's name. */
const hbaName = (input: DatabaseInput) => dnsLabel(baseName(input.owner), 'pg-hba');

/** On the pod template: the Certificate's revision the server started with, from the first renewal on. */
export const TLS_REVISION_ANNOTATION = 'function-platform.dev/tls-revision';

/** Whether a StatefulSet, as observed, starts its server with TLS. */
export function servesTls(statefulSet: Obj | undefined): boolean {
  return list(statefulSet, 'spec', 'template', 'spec', 'volumes').some((v) => str(v, 'name') === TLS_VOLUME);
}

/** The Certificate as observed: Ready; issued at all (its Secret holds a certificate); its revision. */
function certificate(input: DatabaseInput): { ready: boolean; issued: boolean; revision?: number } {
  const cert = input.observed.get(TLS_KEYS.certificate);
  const ready = judge(cert).ready;
  const revision = num(cert, 'status', 'revision');
  return { ready, issued: ready || str(cert, 'status', 'notAfter') !== undefined, ...(revision ? { revision } : {}) };
}

/**
 * Whether the live StatefulSet is composed with TLS, when the platform asks for it: a new Database's first one
 * starts on TLS (its pod waits for the certificate before the server ever starts); one that exists keeps TLS,
 * or moves to it once its certificate is Ready.
 */
export function liveTls(input: DatabaseInput, observed: Obj | undefined): boolean {
  if (tlsIssuer(input) === undefined) return false;
  return !observed || servesTls(observed) || certificate(input).ready;
}

/**
 * Whether the StatefulSet a restore builds beside the live one is composed with TLS: one that exists keeps what
 * it has (never restarted under its restore Job); a new one starts on TLS only when the certificate is Ready or
 * the live one serves TLS, so a restore never waits on cert-manager.
 */
export function restoredTls(input: DatabaseInput, observed: Obj | undefined, live: Obj | undefined): boolean {
  if (tlsIssuer(input) === undefined) return false;
  if (observed) return servesTls(observed);
  return certificate(input).ready || servesTls(live);
}

/** The pod-template annotation that restarts a server on TLS onto a renewed certificate (none before a renewal). */
export function tlsRestart(input: DatabaseInput): Record<string, string> {
  const { revision } = certificate(input);
  return revision !== undefined && revision > 1 ? { [TLS_REVISION_ANNOTATION]: String(revision) } : {};
}

/** Whether the live server waits for its certificate: it is to start on TLS, and nothing was ever issued. */
export function waitsForCertificate(input: DatabaseInput, liveTls: boolean, liveObserved: Obj | undefined): boolean {
  return liveTls && !certificate(input).issued && !judge(liveObserved).ready;
}

/**
 * The Certificate (and PostgreSQL's pg_hba), when the platform asks for TLS. They block readiness only while the
 * live server waits for its first certificate; a serving one goes on in plain text until they are there.
 */
export function tlsResources(input: DatabaseInput, liveWaits: boolean): Desired[] {
  const issuer = tlsIssuer(input);
  if (issuer === undefined) return [];
  const { owner, spec } = input;
  const service = baseName(owner);
  const certificate = {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: meta(owner, spec, tlsSecretName(input)),
    spec: {
      secretName: tlsSecretName(input),
      // The names a client may verify: the client Service's, short and long.
      dnsNames: [
        service,
        `${service}.${owner.namespace}`,
        `${service}.${owner.namespace}.svc`,
        `${service}.${owner.namespace}.svc.cluster.local`,
      ],
      issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: issuer },
      usages: ['digital signature', 'key encipherment', 'server auth'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
    },
  };
  const hba = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(owner, spec, hbaName(input)),
    data: { 'pg_hba.conf': PG_HBA },
  } satisfies V1ConfigMap;
  const waits = liveWaits ? {} : { independent: true };
  return [
    { key: TLS_KEYS.certificate, object: certificate, ...waits },
    ...(spec.engine === 'postgres' ? [{ key: TLS_KEYS.hba, object: hba as Obj, ...waits }] : []),
  ];
}

/** The pod with its server on TLS: the certificate mounted, and the server told where it is and to require it. */
export function withTls(input: DatabaseInput, pod: V1PodSpec): V1PodSpec {
  const [server, ...others] = pod.containers as [V1Container, ...V1Container[]];
  const postgres = input.spec.engine === 'postgres';
  // Both official images' entrypoints pass arguments that start with "-" to the server.
  const args = postgres
    ? ['-c', 'ssl=on', '-c', `ssl_cert_file=${TLS_DIR}/tls.crt`, '-c', `ssl_key_file=${TLS_DIR}/tls.key`]
    : [
        `--ssl-cert=${TLS_DIR}/tls.crt`,
        `--ssl-key=${TLS_DIR}/tls.key`,
        // Plain TCP is refused; the socket (the entrypoint's first-start server, inside the pod) stays open.
        '--require-secure-transport=ON',
      ];
  return {
    ...pod,
    containers: [
      {
        ...server,
        args: postgres ? [...args, '-c', `hba_file=${HBA_DIR}/pg_hba.conf`] : args,
        volumeMounts: [
          ...(server.volumeMounts ?? []),
          { name: TLS_VOLUME, mountPath: TLS_DIR, readOnly: true },
          ...(postgres ? [{ name: HBA_VOLUME, mountPath: HBA_DIR, readOnly: true }] : []),
        ],
      },
      ...others,
    ],
    volumes: [
      ...(pod.volumes ?? []),
      // Owned by root and readable by the pod's group only: PostgreSQL refuses a key file others may read.
      { name: TLS_VOLUME, secret: { secretName: tlsSecretName(input), defaultMode: 0o440 } },
      ...(postgres ? [{ name: HBA_VOLUME, configMap: { name: hbaName(input), defaultMode: 0o444 } }] : []),
    ],
  };
}
