// A real Kubernetes API server for test/apiserver/: kube-apiserver and etcd,
// both built from Go modules by scripts/install-kube.sh into .cache/bin/,
// started on loopback with certificates made for the run, a fresh etcd data
// directory in a temp dir, and a client-certificate user in system:masters.
// Every start is clean; stop() ends exactly the two processes it started and
// removes the temp dir.
//
// The client is @kubernetes/client-node's KubernetesObjectApi, extended with
// raw JSON requests (`KubeClient`): the typed (de)serializers of client-node
// drop fields they do not know and turn timestamps into Dates, and these tests
// must send exactly what the function produced and hand the function exactly
// what the server returned.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newPki } from '../../dev/infra/pki.js';
import { onFreePorts, type Proc, spawnLogged, tail, waitFor } from '../../dev/infra/processes.js';
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { inCI } from './crank.js';
import { repoRoot } from './function-process.js';

export type Json = Record<string, any>;

export interface KubeBinaries {
  apiserver: string;
  etcd: string;
}

/**
 * kube-apiserver and etcd: $KUBE_APISERVER_BIN / $ETCD_BIN, else .cache/bin/.
 * Undefined when missing outside CI (tests then skip loudly); in CI a missing
 * binary is an error, because a skipped suite would look like a passing one.
 */
export function findKubeBinaries(): KubeBinaries | undefined {
  const pick = (env: string, name: string): string | undefined => {
    const fromEnv = process.env[env];
    if (fromEnv) {
      if (!existsSync(fromEnv)) throw new Error(`${env}=${fromEnv} does not exist`);
      return fromEnv;
    }
    const bin = join(repoRoot, '.cache', 'bin', name);
    return existsSync(bin) ? bin : undefined;
  };
  const apiserver = pick('KUBE_APISERVER_BIN', 'kube-apiserver');
  const etcd = pick('ETCD_BIN', 'etcd');
  if (apiserver && etcd) return { apiserver, etcd };
  if (inCI()) {
    throw new Error(`kube-apiserver or etcd missing in .cache/bin and CI is set: run scripts/install-kube.sh first`);
  }
  return undefined;
}

/** Why the API server suites are skipped, or undefined when they can run. Warns loudly when skipping. */
export function apiServerSkipReason(suite: string): string | undefined {
  if (findKubeBinaries() !== undefined) return undefined;
  const reason =
    'kube-apiserver/etcd not built: run `bash scripts/install-kube.sh` (needs Go), or set KUBE_APISERVER_BIN and ETCD_BIN';
  console.warn(`\n!!!!!!!!!!\n!!! SKIPPING ${suite}: ${reason}\n!!! (in CI this is an error)\n!!!!!!!!!!\n`);
  return reason;
}

export interface KubePki {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  saKey: string;
  saPub: string;
}

/**
 * A CA, the server's certificate (127.0.0.1, localhost and `ips`), an admin
 * client certificate and service-account keys.
 */
export function makeKubePki(dir: string, ips: string[] = []): KubePki {
  const pki = newPki(dir, '/CN=fp-test-kube-ca');
  const sans = [
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default.svc',
    'IP:127.0.0.1',
    ...ips.map((ip) => `IP:${ip}`),
  ];
  const server = pki.sign(
    'apiserver',
    '/CN=kube-apiserver',
    `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
  );
  // O=system:masters: the group RBAC lets do everything, as kubeadm's admin.conf.
  const admin = pki.sign(
    'admin',
    '/O=system:masters/CN=fp-test-admin',
    'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
  );
  // The service-account signing key pair: a leaf's key serves, its public half verifies.
  const sa = pki.selfSigned('sa', '/CN=service-accounts');
  const saPub = join(dir, 'sa.pub');
  execFileSync('openssl', ['pkey', '-in', sa.key, '-pubout', '-out', saPub], { stdio: 'pipe' });
  return {
    dir,
    ca: pki.ca,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: admin.cert,
    clientKey: admin.key,
    saKey: sa.key,
    saPub,
  };
}

interface Probe {
  status: number;
  body: string;
}

function get(url: string, tls?: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', timeout: 5000, ...(tls ?? {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

export interface ApiServer {
  /** https://<address>:<port> */
  url: string;
  /** A kubeconfig file for the admin user (kubectl --kubeconfig works with it). */
  kubeconfigPath: string;
  kc: KubeConfig;
  client: KubeClient;
  /** The CA that signed the server's and the client's certificates (PEM). */
  caPem: string;
  /** The directory holding certificates, etcd data and logs. */
  dir: string;
  pki: KubePki;
  /** etcd and kube-apiserver. */
  processes: Proc[];
  /** How long startup took, in ms. */
  startupMs: number;
  /** The last lines of the apiserver's log, for assertion messages. */
  logs(lines?: number): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /** Where certificates, data and logs go (default: a new temp dir, removed by stop()). */
  dir?: string;
  /** Processes that outlive this one (npm run cluster); stop() still ends them. */
  detached?: boolean;
  /** How long to wait for /readyz. */
  timeoutMs?: number;
  /**
   * Real nodes join it (test/support/real-node.ts): it listens on `address`,
   * the host's end of the node's link (not loopback: the node has its own
   * network namespace), is the kubernetes Service's endpoint there, and runs
   * what pods and kubelets need (ServiceAccount admission, the Node authorizer).
   */
  nodes?: { address: string };
}

/** The kubernetes Service's ClusterIP: the first address of the service range below. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
const SERVICE_RANGE = '10.96.0.0/16';

/**
 * Starts etcd and kube-apiserver on loopback, each with a fresh state, and
 * waits until the apiserver is ready. Keep the temp dir with KEEP_APISERVER_DIR=1.
 */
export async function startApiServer(opts: StartOptions = {}): Promise<ApiServer> {
  const bins = findKubeBinaries();
  if (!bins) throw new Error('kube-apiserver/etcd not built: run scripts/install-kube.sh');
  const started = Date.now();
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'fp-apiserver-'));
  mkdirSync(dir, { recursive: true });
  let apiserver: Proc | undefined;
  // etcd, then kube-apiserver; a restart (chaos) replaces an entry, and stop() ends what runs then.
  const processes: Proc[] = [];
  const stop = async () => {
    for (const p of [...processes].reverse()) await p.stop(p.name === 'etcd' ? 10_000 : 15_000);
    if (ownDir && !process.env['KEEP_APISERVER_DIR']) rmSync(dir, { recursive: true, force: true });
  };
  const spawnOpts = { detached: opts.detached ?? false };
  try {
    const address = opts.nodes?.address ?? '127.0.0.1';
    const pki = makeKubePki(join(dir, 'pki'), opts.nodes ? [address, KUBERNETES_SERVICE_IP] : []);
    let etcdUrl = '';
    await onFreePorts(2, async ([clientPort, peerPort]) => {
      etcdUrl = `http://127.0.0.1:${clientPort}`;
      const p = spawnLogged(
        'etcd',
        bins.etcd,
        [
          '--name=fp-test',
          // A data dir per attempt: a start that lost its port may have left one behind.
          `--data-dir=${join(dir, `etcd-${clientPort}`)}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-cluster=fp-test=http://127.0.0.1:${peerPort}`,
          '--initial-cluster-state=new',
          // Throwaway data: no fsync makes writes cheap on a busy machine.
          '--unsafe-no-fsync',
          '--log-level=warn',
        ],
        join(dir, 'etcd.log'),
        spawnOpts,
      );
      // An attempt that lost its port has exited: this one takes its place.
      processes.splice(0, processes.length, ...processes.filter((q) => q.name !== p.name), p);
      await waitFor('etcd', p, 30_000, async () => {
        const r = await get(`${etcdUrl}/health`);
        return r.status === 200 && /"health":\s*"true"/.test(r.body);
      });
    });

    const tls = { ca: readFileSync(pki.ca), cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey) };
    let url = '';
    await onFreePorts(1, async ([securePort]) => {
      url = `https://${address}:${securePort}`;
      const p = spawnLogged(
        'kube-apiserver',
        bins.apiserver,
        [
          `--etcd-servers=${etcdUrl}`,
          `--bind-address=${address}`,
          `--advertise-address=${address}`,
          `--secure-port=${securePort}`,
          `--cert-dir=${join(dir, 'apiserver-certs')}`,
          `--tls-cert-file=${pki.serverCert}`,
          `--tls-private-key-file=${pki.serverKey}`,
          `--client-ca-file=${pki.ca}`,
          '--anonymous-auth=false',
          `--service-account-key-file=${pki.saPub}`,
          `--service-account-signing-key-file=${pki.saKey}`,
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-cluster-ip-range=${SERVICE_RANGE}`,
          ...(opts.nodes
            ? [
                // Kubelets are users system:node:<name>; pods get their ServiceAccount's token.
                '--authorization-mode=Node,RBAC',
                '--endpoint-reconciler-type=lease',
                // kubectl logs and exec reach the kubelet at its node's address, not a host name.
                '--kubelet-preferred-address-types=InternalIP,Hostname',
              ]
            : [
                '--authorization-mode=RBAC',
                // ServiceAccount admission wants the token controller's objects for pods; nothing here runs pods.
                '--disable-admission-plugins=ServiceAccount',
                // No nodes, no endpoints controller: do not maintain the kubernetes Service's endpoints.
                '--endpoint-reconciler-type=none',
              ]),
          '--enable-priority-and-fairness=false',
          '--profiling=false',
          '--shutdown-delay-duration=0s',
          '--v=1',
          ...(opts.apiserverArgs ?? []),
        ],
        join(dir, 'apiserver.log'),
        spawnOpts,
      );
      apiserver = p;
      processes.splice(0, processes.length, ...processes.filter((q) => q.name !== p.name), p);
      await waitFor(
        'kube-apiserver',
        p,
        opts.timeoutMs ?? 180_000,
        async () => (await get(`${url}/readyz`, tls)).status === 200,
      );
    });

    const kubeconfig = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'fp-test', cluster: { server: url, 'certificate-authority-data': tls.ca.toString('base64') } },
      ],
      users: [
        {
          name: 'fp-test-admin',
          user: {
            'client-certificate-data': tls.cert.toString('base64'),
            'client-key-data': tls.key.toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'fp-test', context: { cluster: 'fp-test', user: 'fp-test-admin', namespace: 'default' } }],
      'current-context': 'fp-test',
    };
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, stringify(kubeconfig), { mode: 0o600 });
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const log = apiserver!.log;
    return {
      url,
      kubeconfigPath,
      kc,
      client: KubeClient.fromKubeConfig(kc),
      caPem: tls.ca.toString('utf8'),
      dir,
      pki,
      processes,
      startupMs: Date.now() - started,
      logs: (lines = 40) => tail(log, lines),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** An error answer of the API server, with its Status. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: Json,
    readonly request: string,
  ) {
    super(
      `${request}: ${code} ${String(status['reason'] ?? '')}: ${String(status['message'] ?? JSON.stringify(status))}`,
    );
    this.name = 'ApiError';
  }

  /** The server's message, as kubectl prints it after "Error from server". */
  get serverMessage(): string {
    return String(this.status['message'] ?? '');
  }
}

export interface WriteOptions {
  fieldManager?: string;
  /** dryRun=All: admission and validation run, nothing is stored. */
  dryRun?: boolean;
  /** Server-side apply only: take fields other managers own. */
  force?: boolean;
  /**
   * Unknown or duplicate fields: Strict rejects them (kubectl's default);
   * left out, the server's default, Warn, drops them and says so in a
   * Warning header (what a controller such as Crossplane gets). Warnings are
   * collected in KubeClient.warnings.
   */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
}

type Header = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

const header = (o: Json): Header => ({
  apiVersion: String(o['apiVersion']),
  kind: String(o['kind']),
  metadata: {
    name: String(o['metadata']?.['name'] ?? ''),
    ...(o['metadata']?.['namespace'] ? { namespace: String(o['metadata']['namespace']) } : {}),
  },
});

/**
 * client-node's KubernetesObjectApi (discovery, URL paths, TLS and auth from
 * the kubeconfig) sending and returning plain JSON, with the status
 * subresource and server-side apply.
 */
export class KubeClient extends KubernetesObjectApi {
  /** Every Warning header the server sent, with the request it answered. */
  readonly warnings: { request: string; warning: string }[] = [];

  static fromKubeConfig(kc: KubeConfig): KubeClient {
    const base = KubernetesObjectApi.makeApiClient(kc);
    return new KubeClient(
      (base as unknown as { configuration: ConstructorParameters<typeof KubernetesObjectApi>[0] }).configuration,
    );
  }

  /** One request; `action` picks the collection (create) or the object URL. */
  async raw(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    obj: Json,
    action: 'create' | 'list' | 'read' | 'patch' | 'replace' | 'delete',
    opts: { subresource?: string; query?: Record<string, string>; body?: unknown; contentType?: string } = {},
  ): Promise<Json> {
    const spec = header(obj) as unknown as KubernetesObject;
    // Cluster-scoped kinds have no namespace; specUriPath leaves it out for them.
    let path = await this.specUriPath(spec, action);
    if (opts.subresource) path += `/${opts.subresource}`;
    const cfg = this.configuration;
    const ctx = cfg.baseServer.makeRequestContext(path, method as never);
    ctx.setHeaderParam('Accept', 'application/json');
    for (const [k, v] of Object.entries(opts.query ?? {})) ctx.setQueryParam(k, v);
    if (opts.body !== undefined) {
      ctx.setHeaderParam('Content-Type', opts.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(opts.body));
    }
    const auth = cfg.authMethods.default;
    if (auth?.applySecurityAuthentication) await auth.applySecurityAuthentication(ctx);
    const what = `${method} ${path}`;
    const rsp = await cfg.httpApi.send(ctx).toPromise();
    const text = await rsp.body.text();
    const warning = rsp.headers['warning'];
    if (warning) {
      // "299 - \"unknown field \"spec.foo\"\"", several joined with ", " (RFC 7234 warn-text is quoted).
      for (const m of warning.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g))
        this.warnings.push({ request: what, warning: m[1]!.replace(/\\(.)/g, '$1') });
    }
    let data: Json;
    try {
      data = text ? (JSON.parse(text) as Json) : {};
    } catch {
      data = { message: text };
    }
    if (rsp.httpStatusCode < 200 || rsp.httpStatusCode > 299) throw new ApiError(rsp.httpStatusCode, data, what);
    return data;
  }

  private static query(o: WriteOptions): Record<string, string> {
    return {
      ...(o.fieldValidation ? { fieldValidation: o.fieldValidation } : {}),
      ...(o.fieldManager ? { fieldManager: o.fieldManager } : {}),
      ...(o.dryRun ? { dryRun: 'All' } : {}),
      ...(o.force ? { force: 'true' } : {}),
    };
  }

  /** POST: create. */
  async createObj(obj: Json, o: WriteOptions = {}): Promise<Json> {
    return this.raw('POST', obj, 'create', { body: obj, query: KubeClient.query(o) });
  }

  /** GET one object; undefined when it does not exist. */
  async getObj(obj: Json): Promise<Json | undefined> {
    try {
      return await this.raw('GET', obj, 'read');
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return undefined;
      throw e;
    }
  }

  /** PUT: replace (an update, so transition rules run). */
  async updateObj(obj: Json, o: WriteOptions = {}): Promise<Json> {
    return this.raw('PUT', obj, 'replace', { body: obj, query: KubeClient.query(o) });
  }

  /** Server-side apply of the object's fully specified intent. */
  async applyObj(obj: Json, o: WriteOptions & { fieldManager: string }): Promise<Json> {
    return this.raw('PATCH', obj, 'patch', {
      body: obj,
      contentType: 'application/apply-patch+yaml',
      query: KubeClient.query(o),
    });
  }

  /** Server-side apply to the status subresource. */
  async applyStatus(obj: Json, o: WriteOptions & { fieldManager: string }): Promise<Json> {
    return this.raw('PATCH', obj, 'patch', {
      subresource: 'status',
      body: obj,
      contentType: 'application/apply-patch+yaml',
      query: KubeClient.query(o),
    });
  }

  /** JSON merge patch of the status subresource, as a controller writes its status. */
  async mergeStatus(obj: Json, status: Json, o: WriteOptions = {}): Promise<Json> {
    return this.raw('PATCH', obj, 'patch', {
      subresource: 'status',
      body: { status },
      contentType: 'application/merge-patch+json',
      query: KubeClient.query(o),
    });
  }

  async deleteObj(obj: Json): Promise<void> {
    try {
      await this.raw('DELETE', obj, 'delete');
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  }

  /** Lists objects as plain JSON (every namespace when none is given). */
  async listObjs(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<Json[]> {
    const r = await this.raw(
      'GET',
      { apiVersion, kind, metadata: { name: '', ...(namespace ? { namespace } : {}) } },
      'list',
      {
        query: labelSelector ? { labelSelector } : {},
      },
    );
    return (r['items'] ?? []).map((item: Json) => ({ apiVersion, kind, ...item }));
  }

  /** Waits until a CRD is Established (its kinds are served). */
  async waitEstablished(name: string, timeoutMs = 60_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    const ref = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } };
    for (;;) {
      const crd = await this.getObj(ref);
      const conditions: Json[] = crd?.['status']?.['conditions'] ?? [];
      if (conditions.some((c) => c['type'] === 'Established' && c['status'] === 'True')) return crd!;
      const bad = conditions.find((c) => c['type'] === 'NamesAccepted' && c['status'] === 'False');
      if (bad) throw new Error(`CRD ${name}: names not accepted: ${String(bad['message'])}`);
      if (Date.now() > deadline)
        throw new Error(`CRD ${name} not Established after ${timeoutMs} ms: ${JSON.stringify(conditions)}`);
      await sleep(100);
    }
  }
}
