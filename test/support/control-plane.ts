// A real local control plane on loopback, for the e2e suites and for anyone
// trying the product (npm run cluster): etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok with fake nodes, Crossplane
// core with the External package runtime, an OCI registry holding the
// function's package, the function itself as a local process on the
// certificates Crossplane generated, the stand-ins (stand-ins.ts) that
// play the external package runtime and a volume provisioner, and with
// `objectStore` moto's S3 server as the object store backups go to. Every binary is
// built from Go modules by scripts/install-kube.sh and install-crossplane.sh
// (and install-provider-kubernetes.sh for claims mode).
//
// What is real: the API server and its admission, the controllers (Deployment,
// ReplicaSet, StatefulSet, Job, CronJob, garbage collector, PV binder),
// the scheduler, Crossplane (package manager, XRD and composite controllers,
// the function runner over mutual TLS). What is not: kwok fakes nodes and pods
// (nothing runs in them), and stand-ins.ts names what it plays.
//
// With `realNodes`, kwok gives way to a real node (real-node.ts): a kubelet,
// containerd and kube-proxy in namespaces of their own, CoreDNS, the images
// of scripts/build-node-images.sh served by the local registry, data volumes
// that are real file systems, and an S3 API (moto's server) pods reach, whose
// address and credentials go to object-store.json.
import { execFile, execFileSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments, parseDocument, stringify } from 'yaml';
import { ApiError, type ApiServer, type Json, type KubeClient, startApiServer } from './apiserver.js';
import { FUNCTION_DNS } from './crossplane-tls.js';
import { binDir, repoRoot } from '../../dev/infra/paths.js';
import {
  freePort,
  type Proc,
  type ProcessRecord,
  respawn,
  spawnLogged,
  stopPid,
  tail,
  waitFor,
} from '../../dev/infra/processes.js';
import {
  clusterDnsObjects,
  NODE_NAME,
  deploymentAvailable,
  prepareRealNode,
  type RealNodeState,
  realNodeSkipReason,
  startRealNode,
  teardownRealNode,
} from './real-node.js';
import { providerDependencies, writeStandInProvider } from './stand-in-packages.js';
import { motoServerPath, startMotoServer } from '../../dev/infra/moto.js';
import { inCI, toolPath, toolsSkipReason } from './tools.js';

export const CROSSPLANE_NAMESPACE = 'crossplane-system';
export const FUNCTION_NAME = 'function-platform';
export const FUNCTION_VERSION = 'v0.1.0';
/** Where the project publishes its packages, and where the providers it depends on live. */
export const PUBLISHED_PREFIX = 'xpkg.crossplane.io/function-platform/';
const PROVIDERS_PREFIX = 'xpkg.crossplane.io/crossplane-contrib/';

/** An ImageConfig that rewrites images under `prefix` to `rewrite` (Crossplane v2.2's spec.rewriteImage). */
export function imageConfig(name: string, prefix: string, rewrite: string): Json {
  return {
    apiVersion: 'pkg.crossplane.io/v1beta1',
    kind: 'ImageConfig',
    metadata: { name },
    spec: { matchImages: [{ type: 'Prefix', prefix }], rewriteImage: { prefix: rewrite } },
  };
}

/** metadata.name of a package's crossplane.yaml. */
function packageName(root: string): string {
  return String(yamlDocs(join(root, 'crossplane.yaml'))[0]?.['metadata']?.['name']);
}

/** What each mode needs from .cache/bin. */
const TOOLS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
  'crossplane',
  'crank',
  'crane',
  'xp-certs',
];
const CLAIMS_TOOLS = [...TOOLS, 'provider-kubernetes'];

/** Why an e2e suite must skip (missing tools; an error in CI), or undefined. */
export function controlPlaneSkipReason(suite: string, opts: { claims?: boolean } = {}): string | undefined {
  const kube = toolsSkipReason(
    suite,
    ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'],
    'scripts/install-kube.sh',
  );
  if (kube) return kube;
  const xp = toolsSkipReason(suite, ['crossplane', 'crank', 'crane', 'xp-certs'], 'scripts/install-crossplane.sh');
  if (xp) return xp;
  if (opts.claims) return toolsSkipReason(suite, ['provider-kubernetes'], 'scripts/install-provider-kubernetes.sh');
  return undefined;
}

/**
 * Why a suite on a real node must skip: no root, no containerd or images
 * (outside CI, loudly), or the control plane's tools missing. In CI a real
 * node must run: the reason is an error.
 */
export function realNodeSuiteSkipReason(suite: string): string | undefined {
  const tools = controlPlaneSkipReason(suite);
  if (tools) return tools;
  const why =
    realNodeSkipReason() ??
    (motoServerPath() ? undefined : 'moto is not installed: run `bash scripts/install-moto.sh`');
  if (!why) return undefined;
  if (inCI()) throw new Error(`${suite}: ${why} (CI must run the real-node suites)`);
  console.warn(`\n!!!!!!!!!!\n!!! SKIPPING ${suite}: ${why}\n!!! (in CI this is an error)\n!!!!!!!!!!\n`);
  return why;
}

export interface ControlPlaneOptions {
  /** Where everything goes: certificates, data, logs, state.json. */
  dir: string;
  /** Processes that outlive this one (npm run cluster). */
  detached?: boolean;
  /** The legacy XRDs of package/configuration-claims instead of the namespaced ones, with provider-kubernetes out of cluster. */
  claims?: boolean;
  /** Fake nodes for kwok. */
  nodes?: number;
  /** Start the function with --debug. */
  functionDebug?: boolean;
  /** More environment for the function (FUNCTION_PLATFORM_CLOCK_FILE: a clock the test moves). */
  functionEnv?: Record<string, string>;
  /** Progress lines (npm run cluster prints them). */
  say?: (line: string) => void;
  /** Leave what started running when the bring-up fails, to look at it (CLUSTER_KEEP_ON_FAILURE=1). */
  keepOnFailure?: boolean;
  /** A built Function package to install (e.g. with its runtime image embedded) instead of one built here without. */
  functionPackage?: string;
  /** A real node instead of kwok's fake ones (real-node.ts), and an object store pods reach. */
  realNodes?: boolean;
  /**
   * An S3-compatible object store for backups: moto's S3 server (scripts/install-moto.sh), with the bucket of
   * the examples made; its endpoint and a Secret with its keys are written into the run's dir. On loopback; a
   * control plane with real nodes always has one, on the host's end of the node's link, where pods reach it.
   */
  objectStore?: boolean;
  /**
   * With an object store: the installed Database Composition names it as the platform's default
   * (defaults.database.backup.objectStore in its step's Input), and its keys' Secret is in namespace team-a,
   * so a two-line Database there gets backups with nothing to configure (npm run cluster does this).
   */
  platformStore?: boolean;
  /**
   * Crossplane's webhooks on, as its Helm chart has them: Usages order deletions (a Database is not deleted
   * while a backup or restore reads it). npm run cluster turns them on; a test asks for them.
   */
  webhooks?: boolean;
  /**
   * crossplane-contrib/function-patch-and-transform installed beside function-platform (built by
   * scripts/install-peer.sh, run as a local process on Crossplane's certificates like ours), with the
   * bench's Widget Composition for it (bench/peer/composition.yaml): bench:scale runs both side by side.
   */
  peer?: boolean;
  /** More flags for Crossplane core (bench:scale's SCALE_CROSSPLANE_ARGS: --max-reconcile-rate and the like). */
  crossplaneArgs?: string[];
  /** Node flags for the function's process (bench:scale passes the image's ENTRYPOINT flags). */
  functionNodeFlags?: string[];
}

/** Whether something accepts TCP connections on loopback at `port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

/** The Function name of the peer (ControlPlaneOptions.peer), and the name of its Widget Composition. */
export const PEER_FUNCTION = 'function-patch-and-transform';
export const PEER_COMPOSITION = 'widgets-patch-and-transform';

/** The Secret of the object store's keys, as the backup Jobs read them (no namespace: apply it with -n). */
export function objectStoreSecret(store: ObjectStore): Json {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'backup-store' },
    type: 'Opaque',
    stringData: { AWS_ACCESS_KEY_ID: store.accessKeyId, AWS_SECRET_ACCESS_KEY: store.secretAccessKey },
  };
}

/**
 * The object store of a run: what a Database needs to back up to it (object-store.json), and the files that
 * hand it to a user.
 */
export interface ObjectStore {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A Secret `backup-store` in namespace team-a with the store's keys, as examples/database/cluster.yaml names it. */
  secretFile: string;
  /** The endpoint alone, for `kubectl patch` in the README. */
  endpointFile: string;
}

/** The bucket the examples name (examples/database/cluster.yaml). */
/**
 * The labels every test namespace carries: the API server's PodSecurity
 * admission enforces the restricted Pod Security Standard there, so every pod
 * the product composes is judged by it when the controllers create it (a
 * refused pod is a FailedCreate event on its StatefulSet, ReplicaSet or Job).
 */
export const RESTRICTED_NAMESPACE_LABELS = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
};

export const EXAMPLE_BUCKET = 'team-a-backups';

/** What state.json records, so that `cluster:down` can stop exactly what `cluster` started. */
export interface ControlPlaneState {
  dir: string;
  kubeconfig: string;
  claims: boolean;
  /** The real node, when there is one: what its teardown needs. */
  realNode?: RealNodeState;
  functionPort: number;
  /** Crossplane core's metrics port (http://127.0.0.1:PORT/metrics). */
  crossplaneMetricsPort?: number;
  /** The object store for backups, when one was started. */
  objectStore?: ObjectStore;
  registry: string;
  processes: ProcessRecord[];
  timings: Record<string, number>;
}

export interface ControlPlane {
  dir: string;
  kubeconfig: string;
  client: KubeClient;
  api: ApiServer;
  /** host:port of the local registry. */
  registry: string;
  /** The name of the Configuration installed (platform, or platform-claims in claims mode). */
  configuration: string;
  /** The real node, with realNodes. */
  realNode?: RealNodeState;
  /** The object store for backups: with objectStore, and always with realNodes (where pods reach it). */
  objectStore?: ObjectStore;
  functionPort: number;
  /** Crossplane core's metrics port (http://127.0.0.1:PORT/metrics). */
  crossplaneMetricsPort: number;
  timings: Record<string, number>;
  /** Runs the machine's kubectl against this control plane (its cache kept in the run's dir). */
  kubectl(
    args: string[],
    opts?: { input?: string; allowFail?: boolean },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Ends the function's process (SIGKILL by default: a crash), and starts it again on the same port. */
  killFunction(signal?: NodeJS.Signals): Promise<void>;
  startFunction(): Promise<void>;
  /**
   * A component's process as it runs now, by name: etcd, kube-apiserver,
   * kube-controller-manager, kube-scheduler, crossplane, registry, stand-ins,
   * provider-kubernetes (claims), moto (real nodes), the node's containerd,
   * kubelet and kube-proxy, and function.
   */
  component(name: string): Proc | undefined;
  /** Sends a component a signal (SIGKILL by default) and, unless it is SIGSTOP or SIGCONT, waits until it has exited. */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a component that has exited again, as it was started (a supervisor's restart), and waits until it serves. */
  restart(name: string): Promise<void>;
  /** The function's log so far. */
  functionLog(): string;
  /** Crossplane core's log so far. */
  crossplaneLog(): string;
  stop(): Promise<void>;
}

const fileOf = (dir: string, ...parts: string[]) => join(dir, ...parts);

/** A server certificate for `names`, signed by the CA in `caDir` the way Crossplane's initializer signs one, into `out`. */
function signServerCert(caDir: string, out: string, names: string[]): void {
  execFileSync(toolPath('xp-certs'), [
    'sign',
    '--ca',
    caDir,
    '--usage',
    'server',
    '--out',
    out,
    ...names.flatMap((d) => ['--dns', d]),
  ]);
}

function yamlDocs(file: string): Json[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as Json)
    .filter((d) => d && typeof d === 'object');
}

function yamlFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...yamlFilesUnder(p));
    else if (/\.ya?ml$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

/** Server-side apply of a manifest as a person with kubectl would (fieldManager kubectl). */
export async function applyManifest(client: KubeClient, obj: Json): Promise<Json> {
  return client.applyObj(obj, { fieldManager: 'kubectl', force: true, fieldValidation: 'Strict' });
}

async function waitCondition(client: KubeClient, ref: Json, type: string, timeoutMs: number): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  let last: Json | undefined;
  for (;;) {
    try {
      last = await client.getObj(ref);
    } catch (e) {
      // A kind whose CRD is still being established answers 404 on discovery.
      if (!(e instanceof ApiError) && !String(e).includes('Unrecognized API')) throw e;
    }
    const conditions: Json[] = last?.['status']?.['conditions'] ?? [];
    if (conditions.some((c) => c['type'] === type && c['status'] === 'True')) return last!;
    if (Date.now() > deadline) {
      throw new Error(
        `${ref['kind']} ${ref['metadata']['name']}: ${type} not True after ${timeoutMs} ms: ${JSON.stringify(conditions)}`,
      );
    }
    await sleep(200);
  }
}

/** The Secret's data, decoded. */
export async function secretData(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Record<string, Buffer> | undefined> {
  const s = await client.getObj({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace } });
  if (!s) return undefined;
  return Object.fromEntries(
    Object.entries((s['data'] ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
  );
}

function writeCertDir(dir: string, files: Record<string, Buffer>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(files)) writeFileSync(join(dir, name), data, { mode: 0o644 });
}

function run(
  bin: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      bin,
      args,
      { env: opts.env ?? process.env, cwd: opts.cwd ?? repoRoot, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** The folder of Crossplane's own CRDs, copied by scripts/install-crossplane.sh from the module it builds. */
export const CROSSPLANE_CRDS = join(repoRoot, '.cache', 'crossplane-crds');
/** Its webhook configurations (the Usage webhook), copied with them. */
export const CROSSPLANE_WEBHOOK_CONFIGS = join(repoRoot, '.cache', 'crossplane-webhookconfigurations');
/** The Service the API server reaches Crossplane's webhook through: an ExternalName of localhost, where core runs. */
export const CROSSPLANE_WEBHOOK_SERVICE = 'crossplane-webhooks';
/** provider-kubernetes's CRDs, copied the same way by scripts/install-provider-kubernetes.sh. */
export const PROVIDER_KUBERNETES_CRDS = join(repoRoot, '.cache', 'provider-kubernetes-crds');

/** Fake nodes, as kwok manages them: capacity enough for every example, no taints. */
function fakeNode(name: string): Json {
  const capacity = { cpu: '64', memory: '256Gi', pods: '250', 'ephemeral-storage': '1Ti' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
    },
    spec: {},
    status: { capacity, allocatable: capacity },
  };
}

/**
 * The StorageClasses of the run: `standard` (default, can grow volumes) and
 * `fixed` (cannot), both served by the stand-in provisioner.
 */
export const STAND_IN_PROVISIONER = 'stand-in.function-platform.dev/volumes';
function storageClasses(): Json[] {
  const sc = (name: string, expand: boolean, isDefault: boolean): Json => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name,
      ...(isDefault ? { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } : {}),
    },
    provisioner: STAND_IN_PROVISIONER,
    reclaimPolicy: 'Retain',
    volumeBindingMode: 'Immediate',
    allowVolumeExpansion: expand,
  });
  return [sc('standard', true, true), sc('fixed', false, false)];
}

export interface CrossplaneCore {
  proc: Proc;
  /** Crossplane's CA Secret (tls.crt, tls.key), as core init wrote it. */
  caSecret: Record<string, Buffer>;
  /** Its readiness endpoint: http://127.0.0.1:PORT/readyz. */
  healthPort: number;
  /** Its Prometheus metrics (the watch circuit breaker's among them): http://127.0.0.1:PORT/metrics. */
  metricsPort: number;
  /** Where its webhook serves (Usages), when started with webhooks. */
  webhookPort?: number;
}

/**
 * What core needs to serve its webhook to this API server, as the Helm chart
 * gives it a Service: one named crossplane-webhooks of type ExternalName,
 * `localhost`, which the API server resolves to localhost:<port of the
 * webhook configuration> (it resolves Services to their cluster IP, or to an
 * ExternalName's host, and does not need DNS), verifying the certificate for
 * the Service's DNS name, which `core init` signs. The port is free here and
 * is not 9443, which provider-kubernetes holds.
 */
async function webhookService(client: KubeClient): Promise<number> {
  const port = await freePort();
  await applyManifest(client, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: CROSSPLANE_WEBHOOK_SERVICE, namespace: CROSSPLANE_NAMESPACE },
    spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'webhooks', port, protocol: 'TCP' }] },
  });
  return port;
}

/**
 * Crossplane on an API server: `core init` as the Helm chart's init container
 * runs it (its CRDs, CA and client certificate Secrets, the Lock), then
 * `core start` with the External package runtime. With `webhooks`, as the
 * chart installs it, core serves its webhook, and so runs Usages (deletion
 * order, protection.crossplane.io): core runs its Usage controllers only
 * with webhooks on. Without, Usages are inert objects.
 */
export async function startCrossplane(
  api: ApiServer,
  dir: string,
  opts: { detached?: boolean; webhooks?: boolean; crossplaneArgs?: string[] } = {},
): Promise<CrossplaneCore> {
  const client = api.client;
  const logs = fileOf(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  const env = { ...process.env, KUBECONFIG: api.kubeconfigPath };
  await applyManifest(client, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CROSSPLANE_NAMESPACE } });
  const webhookPort = opts.webhooks ? await webhookService(client) : undefined;
  const initArgs = [
    'core',
    'init',
    `--namespace=${CROSSPLANE_NAMESPACE}`,
    ...(webhookPort
      ? [
          '--enable-webhooks=true',
          '--tls-server-secret-name=crossplane-tls-server',
          `--webhook-service-name=${CROSSPLANE_WEBHOOK_SERVICE}`,
          `--webhook-service-namespace=${CROSSPLANE_NAMESPACE}`,
          `--webhook-service-port=${webhookPort}`,
          `--webhook-configurations-path=${CROSSPLANE_WEBHOOK_CONFIGS}`,
        ]
      : ['--enable-webhooks=false']),
    `--cr-ds-path=${CROSSPLANE_CRDS}`,
    '--tlsca-secret-name=crossplane-root-ca',
    '--tls-client-secret-name=crossplane-tls-client',
  ];
  // On a fresh API server the first run fails with `no matches for kind "Lock"`
  // (its REST mapper predates the CRDs it just made); it is idempotent.
  let init = await run(toolPath('crossplane'), initArgs, { env });
  for (let i = 0; i < 5 && init.code !== 0; i++) {
    await sleep(500);
    init = await run(toolPath('crossplane'), initArgs, { env });
  }
  writeFileSync(fileOf(logs, 'crossplane-init.log'), init.stdout + init.stderr);
  if (init.code !== 0) throw new Error(`crossplane core init failed:\n${tail(fileOf(logs, 'crossplane-init.log'))}`);
  const clientSecret = await secretData(client, CROSSPLANE_NAMESPACE, 'crossplane-tls-client');
  const caSecret = await secretData(client, CROSSPLANE_NAMESPACE, 'crossplane-root-ca');
  if (!clientSecret?.['tls.crt'] || !caSecret?.['tls.key'])
    throw new Error('crossplane core init wrote no crossplane-tls-client or crossplane-root-ca Secret');
  const clientCerts = fileOf(dir, 'crossplane-tls-client');
  writeCertDir(clientCerts, {
    'tls.crt': clientSecret['tls.crt'],
    'tls.key': clientSecret['tls.key']!,
    'ca.crt': clientSecret['ca.crt']!,
  });
  const serverCerts = fileOf(dir, 'crossplane-tls-server');
  if (webhookPort) {
    const server = await secretData(client, CROSSPLANE_NAMESPACE, 'crossplane-tls-server');
    if (!server?.['tls.crt'] || !server['tls.key'])
      throw new Error('crossplane core init wrote no crossplane-tls-server Secret');
    writeCertDir(serverCerts, { 'tls.crt': server['tls.crt'], 'tls.key': server['tls.key'] });
  }
  const cache = fileOf(dir, 'xpkg-cache');
  mkdirSync(cache, { recursive: true });
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const proc = spawnLogged(
    'crossplane',
    toolPath('crossplane'),
    [
      'core',
      'start',
      `--namespace=${CROSSPLANE_NAMESPACE}`,
      ...(webhookPort
        ? ['--enable-webhooks=true', `--webhook-port=${webhookPort}`, `--tls-server-certs-dir=${serverCerts}`]
        : ['--enable-webhooks=false']),
      '--package-runtime=External',
      // Operations and CronOperations (alpha in v2): the function's fleet operations run as their steps.
      '--enable-operations',
      `--tls-client-certs-dir=${clientCerts}`,
      `--xpkg-cache-dir=${cache}`,
      `--metrics-port=${metricsPort}`,
      `--health-probe-port=${healthPort}`,
      '--debug',
      ...(opts.crossplaneArgs ?? []),
    ],
    fileOf(logs, 'crossplane.log'),
    { detached: opts.detached ?? false, env },
  );
  return { proc, caSecret, healthPort, metricsPort, ...(webhookPort ? { webhookPort } : {}) };
}

/** Builds the package at `root` with crank (no examples) into the run's `dir`, and pushes it to `ref`. */
export async function buildAndPush(dir: string, root: string, ref: string): Promise<void> {
  const emptyExamples = fileOf(dir, 'no-examples');
  mkdirSync(emptyExamples, { recursive: true });
  mkdirSync(fileOf(dir, 'xpkg'), { recursive: true });
  const xpkg = fileOf(dir, 'xpkg', `${ref.slice(ref.indexOf('/') + 1).replace(/[/:]/g, '_')}.xpkg`);
  const build = await run(toolPath('crank'), ['xpkg', 'build', '-f', root, '-e', emptyExamples, '-o', xpkg]);
  if (build.code !== 0) throw new Error(`crank xpkg build of ${root} failed: ${build.stderr}`);
  await pushXpkg(xpkg, ref);
}

/** Pushes a built package to `ref` (a loopback registry: plain HTTP). */
export async function pushXpkg(xpkg: string, ref: string): Promise<void> {
  let push = { code: 1, stdout: '', stderr: '' };
  // The registry may still be starting.
  for (let i = 0; i < 20 && push.code !== 0; i++) {
    push = await run(toolPath('crank'), ['xpkg', 'push', '-f', xpkg, ref]);
    if (push.code !== 0) await sleep(100);
  }
  if (push.code !== 0) throw new Error(`crank xpkg push ${ref} failed: ${push.stderr}`);
}

/** Waits until Crossplane's readiness endpoint answers. */
export async function crossplaneReady(xp: CrossplaneCore, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    'crossplane',
    xp.proc,
    timeoutMs,
    async () => (await fetch(`http://127.0.0.1:${xp.healthPort}/readyz`).catch(() => undefined))?.status === 200,
  );
}

/**
 * Brings the control plane up in `opts.dir`, stage by stage, recording how
 * long each took. On any failure everything started so far is stopped.
 */
export async function startControlPlane(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const say = opts.say ?? (() => {});
  const claims = opts.claims ?? false;
  const missing = (claims ? CLAIMS_TOOLS : TOOLS).filter((t) => !existsSync(toolPath(t)));
  if (missing.length)
    throw new Error(
      `not built: ${missing.join(', ')} (run scripts/install-kube.sh, scripts/install-crossplane.sh${claims ? ', scripts/install-provider-kubernetes.sh' : ''})`,
    );
  if (!existsSync(join(CROSSPLANE_CRDS, 'apiextensions.crossplane.io_compositeresourcedefinitions.yaml'))) {
    throw new Error(`${CROSSPLANE_CRDS} holds no Crossplane CRDs: run scripts/install-crossplane.sh`);
  }
  const real = opts.realNodes ?? false;
  if (real) {
    const why = realNodeSkipReason();
    if (why) throw new Error(`no real node here: ${why}`);
  }
  const dir = opts.dir;
  mkdirSync(dir, { recursive: true });
  const logs = fileOf(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  const detached = opts.detached ?? false;
  const processes: Proc[] = [];
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  let mark = t0;
  const lap = (what: string) => {
    const now = Date.now();
    timings[what] = now - mark;
    mark = now;
    say(`${what}: ${((now - t0) / 1000).toFixed(1)} s`);
  };
  const start = (name: string, bin: string, args: string[], env?: NodeJS.ProcessEnv) => {
    const p = spawnLogged(name, bin, args, fileOf(logs, `${name}.log`), { detached, ...(env ? { env } : {}) });
    processes.push(p);
    return p;
  };
  let api: ApiServer | undefined;
  let fn: Proc | undefined;
  let node: RealNodeState | undefined;
  const stopAll = async () => {
    for (const p of [...processes].reverse()) await p.stop(10_000);
    if (fn) await fn.stop(10_000);
    await api?.stop();
    if (node) for (const line of await teardownRealNode(node)) say(`teardown: ${line}`);
  };
  try {
    // 0. A real node's namespaces and link first: the API server listens on the host's end of it.
    if (real) {
      node = await prepareRealNode(dir, { detached });
      lap(`real node namespaces (node ${node.nodeIp}, host ${node.hostIp})`);
    }

    // 1. etcd and kube-apiserver, with the ServiceAccount admission the controllers need.
    api = await startApiServer({
      dir: fileOf(dir, 'apiserver'),
      detached,
      ...(node ? { nodes: { address: node.hostIp } } : {}),
    });
    const client = api.client;
    const kubeconfig = api.kubeconfigPath;
    lap('etcd and kube-apiserver');

    // 2. The controllers, the scheduler and kwok's fake nodes.
    const kubeEnv = { ...process.env, KUBECONFIG: kubeconfig };
    start('kube-controller-manager', toolPath('kube-controller-manager'), [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--controllers=*',
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      `--service-account-private-key-file=${api.pki.saKey}`,
      `--root-ca-file=${api.pki.ca}`,
      `--cluster-signing-cert-file=${api.pki.ca}`,
      `--cluster-signing-key-file=${join(api.pki.dir, 'ca.key')}`,
      '--secure-port=0',
      // Without it, it creates /usr/libexec/kubernetes/kubelet-plugins on the host.
      `--flex-volume-plugin-dir=${fileOf(dir, 'flexvolume')}`,
      // Pods of a deleted node leave soon, and fake nodes never go away.
      '--node-monitor-grace-period=60s',
      '--v=1',
    ]);
    start('kube-scheduler', toolPath('kube-scheduler'), [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);
    for (const sc of storageClasses()) await applyManifest(client, sc);
    // The registry (crane's, in memory): packages for Crossplane, and with a real node the images it
    // runs; then it listens on the host's end of the node's link, where containerd pulls from.
    const registry = `${node?.hostIp ?? '127.0.0.1'}:${await freePort()}`;
    const registryProc = start('registry', toolPath('crane'), ['registry', 'serve', `--address=${registry}`]);
    await waitFor(
      'the registry',
      registryProc,
      10_000,
      async () => (await fetch(`http://${registry}/v2/`).catch(() => undefined))?.status === 200,
    );
    if (node) {
      const pushed = await pushNodeImages(registry);
      lap(`${pushed} node images pushed`);
      await startRealNode(api, node, { registry, detached, say }).then((n) => processes.push(...n.processes));
      lap('real node Ready');
      const coredns = nodeImage('registry.k8s.io/coredns/coredns:');
      for (const obj of clusterDnsObjects(coredns)) await applyManifest(client, obj);
      await deploymentAvailable(client, 'kube-system', 'coredns', 120_000);
      lap('CoreDNS serving');
    } else {
      start('kwok', toolPath('kwok'), [
        `--kubeconfig=${kubeconfig}`,
        `--config=${join(repoRoot, 'test', 'support', 'kwok-stages.yaml')}`,
        '--manage-all-nodes=true',
        '--cidr=10.244.0.0/16',
        '--node-ip=10.0.0.1',
        // Without leases the nodes flap NotReady about every 55 s and pods never come back.
        '--node-lease-duration-seconds=40',
        `--server-address=127.0.0.1:${await freePort()}`,
      ]);
      for (let i = 1; i <= (opts.nodes ?? 2); i++) await applyManifest(client, fakeNode(`fake-node-${i}`));
      await waitFor(
        'fake nodes Ready',
        processes.find((p) => p.name === 'kwok'),
        60_000,
        async () => {
          const nodes = await client.listObjs('v1', 'Node');
          return (
            nodes.length > 0 &&
            nodes.every((n) =>
              (n['status']?.['conditions'] ?? []).some((c: Json) => c['type'] === 'Ready' && c['status'] === 'True'),
            )
          );
        },
      );
      lap('controllers, scheduler, kwok nodes Ready');
    }
    // The object store for backups: moto's S3 server, the examples' bucket, a Secret with its keys. With a real
    // node it listens on the host's end of the node's link, where pods reach it.
    let objectStore: ObjectStore | undefined;
    if (node || opts.objectStore) {
      objectStore = await startObjectStore(node?.hostIp ?? '127.0.0.1', dir, detached, (p) => processes.push(p));
      lap(`object store at ${objectStore.endpoint}`);
    }

    // 3. Crossplane: what the Helm chart's init container does, then the core.
    const xp = await startCrossplane(api, dir, {
      detached,
      webhooks: opts.webhooks ?? false,
      crossplaneArgs: opts.crossplaneArgs ?? [],
    });
    processes.push(xp.proc);
    const { caSecret } = xp;
    const crossplane = xp.proc;
    lap('crossplane core init');

    // 4. The function's server certificate, signed by Crossplane's CA in the
    // shape its package runtime makes (the Service's names), plus localhost,
    // the name the external runtime gives Crossplane to dial here.
    const caDir = fileOf(dir, 'crossplane-root-ca');
    writeCertDir(caDir, { 'tls.crt': caSecret['tls.crt']!, 'tls.key': caSecret['tls.key']! });
    const serverCerts = fileOf(dir, 'function-tls-server');
    signServerCert(caDir, serverCerts, [...FUNCTION_DNS, 'localhost']);

    // 5. The function, as a local process on those certificates.
    const functionPort = await freePort();
    const fnArgs = [
      ...(opts.functionNodeFlags ?? []),
      join(repoRoot, 'dist', 'main.js'),
      '--address',
      `127.0.0.1:${functionPort}`,
      '--tls-server-certs-dir',
      serverCerts,
      ...(opts.functionDebug ? ['--debug'] : []),
    ];
    const fnLog = fileOf(logs, 'function.log');
    const startFn = async (append: boolean) => {
      // A restart appends: only what this start writes says it listens.
      const from = append && existsSync(fnLog) ? statSync(fnLog).size : 0;
      fn = spawnLogged('function', process.execPath, fnArgs, fnLog, {
        detached,
        append,
        ...(opts.functionEnv ? { env: { ...process.env, ...opts.functionEnv } } : {}),
      });
      await waitFor('the function', fn, 20_000, async () =>
        readFileSync(fnLog).subarray(from).toString('utf8').includes(`"port":${functionPort}`),
      );
    };
    await startFn(false);
    // The peer, when asked for: plaintext is refused by Crossplane, so it serves on the same certificates.
    let peerPort: number | undefined;
    const peerVersion = opts.peer ? readFileSync(join(binDir, `${PEER_FUNCTION}.version`), 'utf8').trim() : '';
    if (opts.peer) {
      peerPort = await freePort();
      const peer = start(PEER_FUNCTION, join(binDir, PEER_FUNCTION), [
        '--address',
        `127.0.0.1:${peerPort}`,
        // function-sdk-go v0.2.0's name for it (later SDKs say --tls-server-certs-dir).
        '--tls-certs-dir',
        serverCerts,
      ]);
      await waitFor(PEER_FUNCTION, peer, 20_000, () => listening(peerPort!));
    }

    // 6. The packages in the registry: the Function, the Configuration
    // and stand-in packages of the providers it depends on (stand-in-packages.ts).
    const pushPackage = (root: string, ref: string) => buildAndPush(dir, root, ref);
    // The Function package as given (with its runtime image), else built without one: the External runtime never pulls it.
    const functionRef = `${registry}/function-platform/${FUNCTION_NAME}:${FUNCTION_VERSION}`;
    if (opts.functionPackage) await pushXpkg(opts.functionPackage, functionRef);
    else await pushPackage(join(repoRoot, 'package', 'function'), functionRef);
    const configurationRoot = join(repoRoot, 'package', claims ? 'configuration-claims' : 'configuration');
    const configurationName = packageName(configurationRoot);
    // With the platform's default store, the package installed is the Configuration with it in the Input.
    const platformStore = objectStore && opts.platformStore ? objectStore : undefined;
    const installedRoot = platformStore
      ? withPlatformStore(configurationRoot, fileOf(dir, 'configuration-with-store'), platformStore)
      : configurationRoot;
    await pushPackage(installedRoot, `${registry}/function-platform/${configurationName}:${FUNCTION_VERSION}`);
    for (const dep of providerDependencies(configurationRoot)) {
      const root = writeStandInProvider(dep, fileOf(dir, 'stand-in-packages'), PROVIDER_KUBERNETES_CRDS);
      await pushPackage(root, `${registry}/stand-ins/${dep.source.slice(dep.source.indexOf('/') + 1)}:${dep.version}`);
    }
    if (opts.peer) {
      // A package of metadata only, as ours is here: the External runtime never pulls an image.
      const root = fileOf(dir, 'peer-package');
      mkdirSync(root, { recursive: true });
      writeFileSync(
        fileOf(root, 'crossplane.yaml'),
        stringify({
          apiVersion: 'meta.pkg.crossplane.io/v1',
          kind: 'Function',
          metadata: { name: PEER_FUNCTION },
          spec: { capabilities: ['composition'] },
        }),
      );
      await pushPackage(root, `${registry}/function-platform/${PEER_FUNCTION}:${peerVersion}`);
    }
    lap('function started, packages pushed');

    // 7. The stand-ins: the external package runtime and the volume provisioner.
    const standIns = start('stand-ins', process.execPath, [
      join(repoRoot, 'dist', 'test', 'support', 'stand-ins.js'),
      `--kubeconfig=${kubeconfig}`,
      `--function-endpoint=localhost:${functionPort}`,
      `--function-certs=${serverCerts}`,
      ...(peerPort ? [`--function-endpoint-for=${PEER_FUNCTION}=localhost:${peerPort}`] : []),
      ...(node ? [`--volumes=${node.volumes}`, `--node=${NODE_NAME}`] : []),
    ]);
    await crossplaneReady(xp);
    lap('crossplane core ready');

    // 8. The packages, installed as a platform team installs them: ImageConfigs
    // send the published prefixes to the local registry, then `crossplane xpkg
    // install` the Function and the Configuration, whose provider dependencies
    // Crossplane's package manager resolves and installs (the stand-ins).
    for (const [name, from, to] of [
      ['function-platform', PUBLISHED_PREFIX, `${registry}/function-platform/`],
      ['stand-in-providers', PROVIDERS_PREFIX, `${registry}/stand-ins/crossplane-contrib/`],
    ])
      await applyManifest(client, imageConfig(name!, from!, to!));
    const crankEnv = { ...process.env, KUBECONFIG: kubeconfig };
    const install = async (kind: string, ref: string, name: string, condition: string) => {
      const r = await run(toolPath('crank'), ['xpkg', 'install', kind, ref, name], { env: crankEnv });
      appendFileSync(
        fileOf(logs, 'xpkg-install.log'),
        `$ crossplane xpkg install ${kind} ${ref} ${name}\n${r.stdout}${r.stderr}`,
      );
      if (r.code !== 0) throw new Error(`crossplane xpkg install ${kind} ${ref} failed: ${r.stderr}`);
      const kindName = kind[0]!.toUpperCase() + kind.slice(1);
      await waitCondition(
        client,
        { apiVersion: 'pkg.crossplane.io/v1', kind: kindName, metadata: { name } },
        condition,
        120_000,
      ).catch((e: Error) => {
        throw new Error(
          `${e.message}\nstand-ins:\n${tail(standIns.log, 20)}\ncrossplane:\n${tail(crossplane.log, 30)}`,
        );
      });
    };
    await install('function', `${PUBLISHED_PREFIX}${FUNCTION_NAME}:${FUNCTION_VERSION}`, FUNCTION_NAME, 'Healthy');
    lap('Function installed and healthy');
    if (opts.peer) {
      await install('function', `${PUBLISHED_PREFIX}${PEER_FUNCTION}:${peerVersion}`, PEER_FUNCTION, 'Healthy');
      lap('the peer Function installed and healthy');
    }
    await install(
      'configuration',
      `${PUBLISHED_PREFIX}${configurationName}:${FUNCTION_VERSION}`,
      configurationName,
      'Healthy',
    );
    lap('Configuration and its dependencies installed');

    // 9. RBAC for what Crossplane composes beyond its own role (a Configuration cannot carry it); the XRDs established.
    for (const doc of yamlDocs(join(repoRoot, 'package', 'rbac', 'aggregate-to-crossplane.yaml')))
      await applyManifest(client, doc);
    const xrds = yamlFilesUnder(join(configurationRoot, 'apis'))
      .flatMap(yamlDocs)
      .filter((doc) => doc['kind'] === 'CompositeResourceDefinition');
    for (const xrd of xrds) {
      const ref = { apiVersion: xrd['apiVersion'], kind: xrd['kind'], metadata: { name: xrd['metadata']['name'] } };
      await waitCondition(client, ref, 'Established', 60_000);
      if (xrd['spec']?.['claimNames']) await waitCondition(client, ref, 'Offered', 60_000);
    }
    lap('XRDs established');
    if (opts.peer)
      for (const doc of yamlDocs(join(repoRoot, 'bench', 'peer', 'composition.yaml'))) await applyManifest(client, doc);
    // The application team's namespace, made as a platform team onboards a team, closed by default (pods must
    // meet the restricted Pod Security Standard): the default store's Secret goes there, and the README's walk
    // starts in it.
    await applyManifest(client, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'team-a',
        labels: RESTRICTED_NAMESPACE_LABELS,
      },
    });
    if (platformStore) {
      // The platform team puts the default store's Secret in each namespace its Databases live in.
      const secret = objectStoreSecret(platformStore);
      await applyManifest(client, { ...secret, metadata: { ...secret['metadata'], namespace: 'team-a' } });
      lap("the platform's default object store set in the Database Composition, its Secret in team-a");
    }

    // 10. Claims mode: provider-kubernetes out of cluster, with a ProviderConfig.
    if (claims) {
      // Its CRDs came with its stand-in package (step 8).
      for (const name of ['objects.kubernetes.crossplane.io', 'providerconfigs.kubernetes.crossplane.io'])
        await client.waitEstablished(name);
      await applyManifest(client, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'provider-kubernetes-kubeconfig', namespace: CROSSPLANE_NAMESPACE },
        stringData: { kubeconfig: readFileSync(kubeconfig, 'utf8') },
      });
      await applyManifest(client, {
        apiVersion: 'kubernetes.crossplane.io/v1alpha1',
        kind: 'ProviderConfig',
        metadata: { name: 'default' },
        spec: {
          credentials: {
            source: 'Secret',
            secretRef: { namespace: CROSSPLANE_NAMESPACE, name: 'provider-kubernetes-kubeconfig', key: 'kubeconfig' },
          },
        },
      });
      // Management policies: the function leaves Delete out of them under Retain.
      // Its conversion webhook server wants certificates, as Crossplane's runtime would mount them.
      const providerCerts = fileOf(dir, 'provider-kubernetes-tls-server');
      signServerCert(caDir, providerCerts, [
        'provider-kubernetes',
        `provider-kubernetes.${CROSSPLANE_NAMESPACE}`,
        'localhost',
      ]);
      // It listens on fixed ports (metrics :8080, webhooks :9443): with a real node it runs in the node's
      // network namespace, where they are its own, so control planes can run side by side. On kwok nodes it
      // runs on the host, where a second one on the machine exits at once and the Objects would wait forever:
      // said here instead.
      const providerArgs = ['--debug', '--enable-management-policies', '--poll=5s'];
      const providerEnv = { ...kubeEnv, TLS_SERVER_CERTS_DIR: providerCerts };
      let provider: Proc;
      if (node) {
        provider = start(
          'provider-kubernetes',
          'nsenter',
          ['-t', String(node.holder.pid), '-n', '--', toolPath('provider-kubernetes'), ...providerArgs],
          providerEnv,
        );
        // nsenter execs it in place: the PID runs provider-kubernetes.
        provider.bin = toolPath('provider-kubernetes');
      } else provider = start('provider-kubernetes', toolPath('provider-kubernetes'), providerArgs, providerEnv);
      await sleep(3000);
      if (provider.exited() !== undefined)
        throw new Error(`provider-kubernetes exited (${provider.exited()}):\n${tail(provider.log, 10)}`);
      lap('provider-kubernetes started');
    }
    timings['total'] = Date.now() - t0;

    if (objectStore) {
      const { endpoint, region, bucket, accessKeyId, secretAccessKey } = objectStore;
      writeFileSync(
        fileOf(dir, 'object-store.json'),
        `${JSON.stringify({ endpoint, region, bucket, accessKeyId, secretAccessKey }, null, 2)}\n`,
      );
      // What a namespace needs to use it: the Secret spec.backup.objectStore.credentialsSecretRef names;
      // and the example Database, pointed at it.
      writeFileSync(fileOf(dir, 'object-store-secret.yaml'), manifest([objectStoreSecret(objectStore)]));
      const example = yamlDocs(join(repoRoot, 'examples', 'database', 'cluster.yaml'))[0]!;
      example['spec']['backup']['objectStore'] = {
        bucket: objectStore.bucket,
        region: objectStore.region,
        endpoint: objectStore.endpoint,
        prefix: 'databases',
        credentialsSecretRef: { name: 'backup-store' },
      };
      mkdirSync(fileOf(dir, 'examples'), { recursive: true });
      writeFileSync(fileOf(dir, 'examples', 'orders.yaml'), manifest([example]));
    }
    // What cluster:down stops: written again whenever a component is restarted (its PID changes).
    const writeState = () => {
      const state: ControlPlaneState = {
        dir,
        kubeconfig,
        claims,
        ...(node ? { realNode: node } : {}),
        functionPort,
        crossplaneMetricsPort: xp.metricsPort,
        ...(objectStore ? { objectStore } : {}),
        registry,
        processes: [...api!.processes, ...processes, fn!].map(({ name, pid, bin, log }) => ({ name, pid, bin, log })),
        timings,
      };
      writeFileSync(fileOf(dir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
    };
    writeState();
    const component = (name: string): Proc | undefined =>
      name === 'function' ? fn : [...api!.processes, ...processes].find((p) => p.name === name);
    const killFunction = async (signal: NodeJS.Signals = 'SIGKILL') => {
      if (!fn) return;
      const p = fn;
      const gone = new Promise<void>((resolve) =>
        p.exited() !== undefined ? resolve() : p.child.once('exit', () => resolve()),
      );
      p.child.kill(signal);
      await gone;
    };
    // How a restarted component is known to serve again.
    const served = async (p: Proc) => {
      const deadline = 120_000;
      if (p.name === 'kube-apiserver' || p.name === 'etcd')
        await waitFor(p.name, p, deadline, async () =>
          Boolean(await client.getObj({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } })),
        );
      else if (p.name === 'crossplane') await crossplaneReady({ ...xp, proc: p }, deadline);
      else await waitFor(p.name, p, deadline, async () => p.exited() === undefined, 1000);
    };

    const kubectlEnv = { ...process.env, KUBECONFIG: kubeconfig, KUBECACHEDIR: fileOf(dir, 'kubectl-cache') };
    return {
      dir,
      kubeconfig,
      client,
      api,
      registry,
      configuration: configurationName,
      ...(node ? { realNode: node } : {}),
      ...(objectStore ? { objectStore } : {}),
      functionPort,
      crossplaneMetricsPort: xp.metricsPort,
      timings,
      kubectl: async (args, o = {}) => {
        const r = await run('kubectl', args, { env: kubectlEnv, ...(o.input !== undefined ? { input: o.input } : {}) });
        if (r.code !== 0 && !o.allowFail) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
        return r;
      },
      killFunction,
      startFunction: async () => {
        await startFn(true);
        writeState();
      },
      component,
      kill: async (name, signal = 'SIGKILL') => {
        if (name === 'function' && signal !== 'SIGSTOP' && signal !== 'SIGCONT') return killFunction(signal);
        const p = component(name);
        if (!p) throw new Error(`no component ${name}`);
        if (p.exited() !== undefined) return;
        const gone = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
        p.child.kill(signal);
        if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await gone;
      },
      restart: async (name) => {
        if (name === 'function') {
          await startFn(true);
          writeState();
          return;
        }
        for (const list of [api!.processes, processes]) {
          const i = list.findIndex((p) => p.name === name);
          if (i < 0) continue;
          if (list[i]!.exited() === undefined) throw new Error(`${name} still runs (pid ${list[i]!.pid})`);
          const fresh = respawn(list[i]!);
          list[i] = fresh;
          writeState();
          await served(fresh);
          return;
        }
        throw new Error(`no component ${name}`);
      },
      functionLog: () => readFileSync(fnLog, 'utf8'),
      crossplaneLog: () => readFileSync(crossplane.log, 'utf8'),
      stop: stopAll,
    };
  } catch (e) {
    if (opts.keepOnFailure) {
      const records = [...(api?.processes ?? []), ...processes, ...(fn ? [fn] : [])].map(({ name, pid, bin, log }) => ({
        name,
        pid,
        bin,
        log,
      }));
      writeFileSync(
        fileOf(dir, 'state.json'),
        `${JSON.stringify({ dir, kubeconfig: api?.kubeconfigPath, processes: records, ...(node ? { realNode: node } : {}) }, null, 2)}\n`,
      );
    } else await stopAll();
    throw e;
  }
}

/**
 * Stops what state.json lists, newest first, then undoes what a real node
 * did to the machine; safe to repeat.
 */
export async function stopRecorded(dir: string): Promise<Array<{ name: string; pid: number; outcome: string }>> {
  const file = fileOf(dir, 'state.json');
  if (!existsSync(file)) return [];
  const state = JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneState;
  const out: Array<{ name: string; pid: number; outcome: string }> = [];
  for (const p of [...state.processes].reverse())
    out.push({ name: p.name, pid: p.pid, outcome: await stopPid(p, 10_000) });
  if (state.realNode)
    for (const line of await teardownRealNode(state.realNode))
      out.push({ name: 'real node', pid: state.realNode.holder.pid, outcome: line });
  rmSync(file);
  return out;
}

/** The node images of scripts/build-node-images.sh, as images.json lists them. */
function nodeImages(): Array<{ ref: string; file: string }> {
  const file = join(repoRoot, '.cache', 'node-images', 'images.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { images: Array<{ ref: string; file: string }> }).images;
}

/** The one node image whose reference starts with `prefix`. */
function nodeImage(prefix: string): string {
  const hit = nodeImages().find((i) => i.ref.startsWith(prefix));
  if (!hit) throw new Error(`no node image ${prefix}...: run scripts/build-node-images.sh`);
  return hit.ref;
}

/**
 * Pushes every node image to the local registry under its path, so that
 * containerd, sent there for docker.io and registry.k8s.io, finds
 * docker.io/library/postgres:17 as <registry>/library/postgres:17.
 */
async function pushNodeImages(registry: string): Promise<number> {
  const images = nodeImages();
  await Promise.all(
    images.map(async ({ ref, file }) => {
      const path = ref.slice(ref.indexOf('/') + 1);
      const r = await run(toolPath('crane'), [
        'push',
        join(repoRoot, '.cache', 'node-images', file),
        `${registry}/${path}`,
      ]);
      if (r.code !== 0) throw new Error(`crane push ${file} failed: ${r.stderr}`);
    }),
  );
  return images.length;
}

/**
 * The object store backups go to: moto's S3 API on `host` (loopback, or the
 * host's end of a real node's link, where pods reach it), with the bucket the
 * examples name; the Secret with its keys (namespace team-a, as
 * examples/database/cluster.yaml names it) and its endpoint are written into
 * the run's dir for a user. Any access key works with moto; these name
 * themselves as local (keys, not the placeholders a Database warns about).
 */
async function startObjectStore(
  host: string,
  dir: string,
  detached: boolean,
  keep: (p: Proc) => void,
): Promise<ObjectStore> {
  const bin = motoServerPath();
  if (!bin) throw new Error('no object store: moto is not installed (bash scripts/install-moto.sh)');
  const moto = await startMotoServer(bin, { host, logDir: fileOf(dir, 'logs'), detached });
  keep(moto.proc);
  const keys = {
    endpoint: moto.endpoint,
    region: 'us-east-1',
    bucket: EXAMPLE_BUCKET,
    accessKeyId: 'local-object-store',
    secretAccessKey: 'local-object-store-secret',
  };
  const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
  const s3 = new S3Client({
    endpoint: keys.endpoint,
    region: keys.region,
    forcePathStyle: true,
    credentials: { accessKeyId: keys.accessKeyId, secretAccessKey: keys.secretAccessKey },
  });
  await s3.send(new CreateBucketCommand({ Bucket: keys.bucket }));
  s3.destroy();
  const store: ObjectStore = {
    ...keys,
    secretFile: fileOf(dir, 'object-store.yaml'),
    endpointFile: fileOf(dir, 'object-store-endpoint'),
  };
  const secret = objectStoreSecret(store);
  writeFileSync(
    store.secretFile,
    `# The keys of the local object store (moto's S3 server at ${store.endpoint}), for examples/database/cluster.yaml.\n${stringify(
      { ...secret, metadata: { ...secret['metadata'], namespace: 'team-a' } },
    )}`,
  );
  writeFileSync(store.endpointFile, store.endpoint);
  return store;
}

/** `store` as a Database's spec.backup.objectStore names it: under prefix databases, with objectStoreSecret's keys. */
export function objectStoreSpec(store: Pick<ObjectStore, 'bucket' | 'region' | 'endpoint'>): Json {
  return {
    bucket: store.bucket,
    region: store.region,
    endpoint: store.endpoint,
    prefix: 'databases',
    credentialsSecretRef: { name: objectStoreSecret(store as ObjectStore)['metadata']['name'] },
  };
}

/** The Database Composition's step Input naming `store` as the platform's default object store. */
export function platformStoreInput(store: Pick<ObjectStore, 'bucket' | 'region' | 'endpoint'>): Json {
  return {
    apiVersion: 'platform.fn.example.com/v1beta1',
    kind: 'Input',
    defaults: { database: { backup: { objectStore: objectStoreSpec(store) } } },
  };
}

/**
 * A copy of the Configuration package root at `to` whose Database Composition
 * sets the platform's default store in its step's Input (comments kept).
 */
export function withPlatformStore(from: string, to: string, store: ObjectStore): string {
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true });
  const file = join(to, 'apis', 'database', 'composition.yaml');
  const doc = parseDocument(readFileSync(file, 'utf8'));
  doc.setIn(['spec', 'pipeline', 0, 'input'], doc.createNode(platformStoreInput(store)));
  writeFileSync(file, doc.toString({ lineWidth: 0 }));
  return to;
}

/** The YAML of objects, for kubectl apply -f -. */
export const manifest = (objs: Json[]): string => objs.map((o) => stringify(o)).join('---\n');
