// A real node for the local control plane (npm run cluster -- --real-nodes):
// kubelet and kube-proxy v1.35 (built by scripts/install-kube.sh), Debian's
// containerd and runc, CNI bridge networking, kube-proxy's iptables rules and
// CoreDNS, so pods really run: databases hold rows, Jobs dump and upload,
// Services carry traffic. scripts/install-node.sh installs what it needs.
//
// Everything the node does to the machine is kept in what the run creates:
// - a network namespace of its own, linked to the host by a veth pair
//   (10.250.K.1 on the host, 10.250.K.2 the node's address; K the first free
//   index): its bridge, pod network namespaces, iptables rules and routes go
//   when it goes;
// - a mount namespace of its own, in which /run, /var/lib and /var/log are
//   empty tmpfs (the kubelet's fixed paths, such as
//   /var/lib/kubelet/device-plugins and /var/log/containers, land there):
//   its mounts (container root filesystems, volumes) go when it goes;
// - a cgroup parent /fp-node-K in every hierarchy for the kubelet's pods;
// - the kernel settings the kubelet changes (vm.overcommit_memory,
//   kernel.panic, kernel.panic_on_oops), recorded and put back;
// - the data volumes, files under the run's directory mounted as XFS by the
//   volume provisioner stand-in (stand-ins.ts), under a mount point shared
//   into the node.
// teardownRealNode() undoes each of these and says what it could not.
//
// Host processes reach the node at 10.250.K.2; the node reaches the API
// server, the registry and the object store at 10.250.K.1 (they listen there).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { repoRoot } from '../../dev/infra/paths.js';
import { openPki } from '../../dev/infra/pki.js';
import { type Proc, type ProcessRecord, spawnLogged, stopPid, tail, waitFor } from '../../dev/infra/processes.js';
import type { ApiServer, Json, KubeClient } from './apiserver.js';
import { binDir, toolPath } from './tools.js';

export const NODE_NAME = 'real-node-1';
/** Pods' addresses (the CNI bridge's range) and the cluster's DNS Service. */
export const POD_CIDR = '10.244.0.0/24';
export const CLUSTER_DNS_IP = '10.96.0.10';
const CLUSTER_CIDR = '10.244.0.0/16';
const BRIDGE = 'fp0';
/** The kernel settings the kubelet sets at start; put back at teardown. */
const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops'];
const CNI_BIN = '/usr/lib/cni';

/** What the node's teardown needs, recorded in state.json. */
export interface RealNodeState {
  dir: string;
  index: number;
  hostIp: string;
  nodeIp: string;
  hostLink: string;
  cgroup: string;
  /** The process that holds the node's network and mount namespaces. */
  holder: ProcessRecord;
  /** Kernel settings before the kubelet changed them. */
  sysctls: Record<string, string>;
  /** The shared mount point the data volumes are mounted under. */
  volumes: string;
}

/** Why real nodes cannot run here, or undefined when they can. */
export function realNodeSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'a real node needs root (network and mount namespaces, cgroups, iptables)';
  const missing = ['kubelet', 'kube-proxy'].filter((t) => !existsSync(toolPath(t)));
  if (missing.length) return `${missing.join(', ')} not built: run \`bash scripts/install-kube.sh\``;
  for (const bin of ['/usr/bin/containerd', '/usr/sbin/runc', `${CNI_BIN}/bridge`, '/usr/sbin/iptables'])
    if (!existsSync(bin)) return `${bin} missing: run \`bash scripts/install-node.sh\``;
  if (!existsSync(join(binDir, '..', 'node-images', 'images.json')))
    return 'the node images are not built: run `bash scripts/install-node.sh`';
  if (!existsSync('/sys/fs/cgroup/memory')) return 'no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory';
  return undefined;
}

function sh(cmd: string, args: string[], input?: string): string {
  try {
    return execFileSync(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(input !== undefined ? { input } : {}) })
      .toString()
      .trim();
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${err.stderr?.toString().trim() || err.message}`);
  }
}

/** Runs a command in the node's namespaces (network and mount). */
export function inNode(state: Pick<RealNodeState, 'holder'>, cmd: string, args: string[], input?: string): string {
  return sh('nsenter', ['-t', String(state.holder.pid), '-n', '-m', '--', cmd, ...args], input);
}

/** The cgroup hierarchies mounted under /sys/fs/cgroup (v1 controllers, name=systemd, the unified one). */
function cgroupHierarchies(): string[] {
  return readdirSync('/sys/fs/cgroup')
    .map((d) => join('/sys/fs/cgroup', d))
    .filter((d) => existsSync(join(d, 'cgroup.procs')));
}

/**
 * The node's namespaces and link: a holder process in new network and mount
 * namespaces, the veth pair, the shared volumes mount point and the cgroup
 * parent. Before the API server starts: it listens on the host's end.
 */
export async function prepareRealNode(dir: string, opts: { detached: boolean }): Promise<RealNodeState> {
  const nodeDir = join(dir, 'node');
  mkdirSync(join(nodeDir, 'logs'), { recursive: true });
  const used = sh('ip', ['-o', '-4', 'addr', 'show']);
  let index = 1;
  while (index < 250 && (used.includes(` 10.250.${index}.1/`) || existsSync(`/sys/class/net/fph${index}`))) index++;
  if (index >= 250) throw new Error('no free 10.250.K.0/30 for the node link');
  const hostIp = `10.250.${index}.1`;
  const nodeIp = `10.250.${index}.2`;
  const hostLink = `fph${index}`;

  // The data volumes' mount point, shared, so the provisioner's mounts on the host appear in the node.
  const volumes = join(dir, 'volumes');
  mkdirSync(volumes, { recursive: true });
  sh('mount', ['--bind', volumes, volumes]);
  sh('mount', ['--make-shared', volumes]);

  // The holder: empty /run, /var/lib and /var/log for the node's fixed paths; then it waits.
  const script = [
    'set -e',
    'mount -t tmpfs -o mode=0755 fp-node-run /run',
    'mount -t tmpfs -o mode=0755 fp-node-var-lib /var/lib',
    'mount -t tmpfs -o mode=0755 fp-node-var-log /var/log',
    'echo namespaces-ready',
    'exec sleep infinity',
  ].join('\n');
  const holder = spawnLogged(
    'node-namespaces',
    'unshare',
    ['--net', '--mount', '--propagation', 'slave', '--', '/bin/sh', '-c', script],
    join(nodeDir, 'logs', 'namespaces.log'),
    { detached: opts.detached },
  );
  await waitFor('the node namespaces', holder, 10_000, async () =>
    readFileSync(holder.log, 'utf8').includes('namespaces-ready'),
  );
  const state: RealNodeState = {
    dir: nodeDir,
    index,
    hostIp,
    nodeIp,
    hostLink,
    cgroup: `fp-node-${index}`,
    // /proc/PID/cmdline of the holder, once it has exec'd: what stopPid checks.
    holder: { name: 'node-namespaces', pid: holder.pid, bin: 'sleep', log: holder.log },
    sysctls: Object.fromEntries(KUBELET_SYSCTLS.map((k) => [k, readFileSync(`/proc/sys/${k}`, 'utf8').trim()])),
    volumes,
  };
  writeFileSync(join(nodeDir, 'node-state.json'), `${JSON.stringify(state, null, 2)}\n`);
  sh('ip', ['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', `fpn${index}`, 'netns', String(holder.pid)]);
  sh('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostLink]);
  sh('ip', ['link', 'set', hostLink, 'up']);
  for (const args of [
    ['link', 'set', 'lo', 'up'],
    ['link', 'set', `fpn${index}`, 'name', 'eth0'],
    ['addr', 'add', `${nodeIp}/30`, 'dev', 'eth0'],
    ['link', 'set', 'eth0', 'up'],
    ['route', 'add', 'default', 'via', hostIp],
  ])
    inNode(state, 'ip', args);

  // The kubelet's cgroup parent: it must exist; cpuset's needs its parent's CPUs and memory nodes.
  for (const h of cgroupHierarchies()) {
    const cg = join(h, state.cgroup);
    mkdirSync(cg, { recursive: true });
    if (h.endsWith('/cpuset'))
      for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(cg, f), readFileSync(join(h, f)));
  }
  return state;
}

export interface RealNode {
  state: RealNodeState;
  processes: Proc[];
}

/** The CNI network of the node's pods: a bridge with masquerading, host-local addresses. */
function cniConfig(state: RealNodeState): Json {
  return {
    cniVersion: '0.4.0',
    name: 'fp-pods',
    plugins: [
      {
        type: 'bridge',
        bridge: BRIDGE,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(state.dir, 'cni-ipam'),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

function containerdConfig(state: RealNodeState, socket: string): string {
  const d = state.dir;
  return `version = 2
root = "${d}/containerd/root"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "${socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${d}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  # The kubelet asks for oom_score_adj below this process's; without CAP_SYS_RESOURCE only raising works.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${d}/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${d}/containerd/certs.d"
`;
}

/** containerd's registry hosts: every registry the product's images name is served by the local one (host:port). */
function registryHosts(state: RealNodeState, registry: string): void {
  for (const [named, upstream] of [
    ['docker.io', 'https://registry-1.docker.io'],
    ['registry.k8s.io', 'https://registry.k8s.io'],
    ['ghcr.io', 'https://ghcr.io'],
  ]) {
    const hostsDir = join(state.dir, 'containerd', 'certs.d', named!);
    mkdirSync(hostsDir, { recursive: true });
    writeFileSync(
      join(hostsDir, 'hosts.toml'),
      `server = "${upstream}"\n\n[host."http://${registry}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
  }
}

/** A kubeconfig for a client certificate of `subject`, signed by the API server's CA. */
function clientKubeconfig(api: ApiServer, dir: string, name: string, subject: string): string {
  const pki = openPki(api.pki.dir);
  const leaf = pki.sign(name, subject, 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n');
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server: api.url, 'certificate-authority': api.pki.ca } }],
      users: [{ name, user: { 'client-certificate': leaf.cert, 'client-key': leaf.key } }],
      contexts: [{ name: 'local', context: { cluster: 'local', user: name } }],
      'current-context': 'local',
    }),
    { mode: 0o600 },
  );
  return file;
}

/**
 * Starts the node's daemons in its namespaces (containerd, the kubelet,
 * kube-proxy) and waits for the Node to be Ready. The registry must be up:
 * the node pulls the pause image from it first.
 */
export async function startRealNode(
  api: ApiServer,
  state: RealNodeState,
  opts: { registry: string; detached: boolean; say?: (line: string) => void },
): Promise<RealNode> {
  const d = state.dir;
  const logs = join(d, 'logs');
  for (const sub of ['cni', 'containerd', 'kubelet', 'kubelet-pki', 'manifests', 'volume-plugins', 'pod-logs'])
    mkdirSync(join(d, sub), { recursive: true });
  writeFileSync(join(d, 'cni', '10-fp-pods.conflist'), JSON.stringify(cniConfig(state), null, 2));
  const socket = join(d, 'containerd', 'containerd.sock');
  writeFileSync(join(d, 'containerd', 'config.toml'), containerdConfig(state, socket));
  registryHosts(state, opts.registry);
  // What pods with dnsPolicy Default get: no resolver outside the cluster is reachable here.
  writeFileSync(join(d, 'resolv.conf'), `nameserver ${CLUSTER_DNS_IP}\n`);

  const processes: Proc[] = [];
  const start = (name: string, bin: string, args: string[]) => {
    const p = spawnLogged(
      name,
      'nsenter',
      ['-t', String(state.holder.pid), '-n', '-m', '--', bin, ...args],
      join(logs, `${name}.log`),
      { detached: opts.detached },
    );
    // nsenter execs the daemon in place: the PID runs `bin`.
    const proc = { ...p, bin };
    processes.push(proc);
    return proc;
  };
  const containerd = start('containerd', '/usr/bin/containerd', ['--config', join(d, 'containerd', 'config.toml')]);
  await waitFor('containerd', containerd, 30_000, async () => existsSync(socket));

  const kubeletKubeconfig = clientKubeconfig(api, d, 'kubelet', `/O=system:nodes/CN=system:node:${NODE_NAME}`);
  const kubeletConfig = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine has cgroup v1, which kubelet 1.35 refuses unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: true,
    cgroupRoot: `/${state.cgroup}`,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${socket}`,
    authentication: {
      anonymous: { enabled: true },
      webhook: { enabled: false },
      x509: { clientCAFile: api.pki.ca },
    },
    // The API server's kubectl exec and logs come unauthenticated; the node is reachable only from this host.
    authorization: { mode: 'AlwaysAllow' },
    address: state.nodeIp,
    healthzBindAddress: '127.0.0.1',
    readOnlyPort: 0,
    resolvConf: join(d, 'resolv.conf'),
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: 'cluster.local',
    staticPodPath: join(d, 'manifests'),
    volumePluginDir: join(d, 'volume-plugins'),
    podLogsDir: join(d, 'pod-logs'),
    serializeImagePulls: false,
    maxPods: 250,
    // Nothing evicts on a test machine's disk or memory pressure; images are never collected.
    evictionHard: {},
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    rotateCertificates: false,
    nodeStatusReportFrequency: '10s',
  };
  writeFileSync(join(d, 'kubelet-config.yaml'), stringify(kubeletConfig));
  start('kubelet', toolPath('kubelet'), [
    `--config=${join(d, 'kubelet-config.yaml')}`,
    `--kubeconfig=${kubeletKubeconfig}`,
    `--root-dir=${join(d, 'kubelet')}`,
    `--cert-dir=${join(d, 'kubelet-pki')}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${state.nodeIp}`,
    '--node-labels=node.function-platform.dev/real=true',
    '--v=1',
  ]);
  const proxyKubeconfig = clientKubeconfig(api, d, 'kube-proxy', '/CN=system:kube-proxy');
  writeFileSync(
    join(d, 'kube-proxy-config.yaml'),
    stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clusterCIDR: CLUSTER_CIDR,
      hostnameOverride: NODE_NAME,
      clientConnection: { kubeconfig: proxyKubeconfig },
      // No conntrack table sizing (a host setting) and no route_localnet for localhost node ports.
      conntrack: { maxPerCore: 0 },
      iptables: { localhostNodePorts: false },
      metricsBindAddress: '127.0.0.1:10249',
      healthzBindAddress: '127.0.0.1:10256',
    }),
  );
  start('kube-proxy', toolPath('kube-proxy'), [`--config=${join(d, 'kube-proxy-config.yaml')}`, '--v=1']);
  opts.say?.(`node ${NODE_NAME} at ${state.nodeIp}: containerd, kubelet and kube-proxy started`);
  await waitFor('the real node Ready', processes[1], 90_000, async () => {
    const node = await api.client.getObj({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE_NAME } });
    return (node?.['status']?.['conditions'] ?? []).some((c: Json) => c['type'] === 'Ready' && c['status'] === 'True');
  }).catch((e: Error) => {
    throw new Error(`${e.message}\ncontainerd:\n${tail(containerd.log, 20)}`);
  });
  return { state, processes };
}

/** CoreDNS in kube-system, as a cluster runs it, behind the kube-dns Service the kubelet names to pods. */
export function clusterDnsObjects(image: string): Json[] {
  const labels = { 'k8s-app': 'kube-dns' };
  const ns = 'kube-system';
  const corefile = [
    '.:53 {',
    '    errors',
    '    health :8080',
    '    ready :8181',
    '    kubernetes cluster.local in-addr.arpa ip6.arpa {',
    '        pods insecure',
    '        fallthrough in-addr.arpa ip6.arpa',
    '        ttl 5',
    '    }',
    '    cache 5',
    '    loadbalance',
    '}',
  ].join('\n');
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: ns }],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace: ns }, data: { Corefile: corefile } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            // Its own resolver is the node's, not itself.
            dnsPolicy: 'Default',
            containers: [
              {
                name: 'coredns',
                image,
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                resources: { requests: { cpu: '50m', memory: '70Mi' }, limits: { memory: '170Mi' } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: ns, labels },
      spec: {
        clusterIP: CLUSTER_DNS_IP,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
  ];
}

/** Waits until a Deployment has all its replicas available. */
export async function deploymentAvailable(client: KubeClient, namespace: string, name: string, timeoutMs: number) {
  await waitFor(`Deployment ${namespace}/${name} available`, undefined, timeoutMs, async () => {
    const d = await client.getObj({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace } });
    const want = d?.['spec']?.['replicas'] ?? 1;
    return (d?.['status']?.['availableReplicas'] ?? 0) >= want;
  });
}

/** The PIDs whose network namespace is the node's (its daemons, containerd's shims). */
function pidsInNamespace(holderPid: number): number[] {
  let ns: string;
  try {
    ns = readlinkSync(`/proc/${holderPid}/ns/net`);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === ns) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Every PID in the cgroup subtree `dir` (the pods' containers), depth first. */
function pidsInCgroup(dir: string): number[] {
  if (!existsSync(dir)) return [];
  const out: number[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) out.push(...pidsInCgroup(join(dir, e.name)));
  try {
    out.push(...readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number));
  } catch {
    // Removed meanwhile.
  }
  return out;
}

function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroupTree(join(dir, e.name));
  rmdirSync(dir);
}

const kill = (pid: number) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
};

/** The mounts under `dir` on the host, deepest first. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/**
 * Undoes what prepareRealNode and the node did: every process in the node's
 * namespaces and cgroups killed (the holder last, so its namespaces and their
 * mounts, bridge, pod networks and iptables rules go), the cgroups removed,
 * the veth gone, the volumes unmounted, the kernel settings put back.
 * Returns what was done and what could not be, one line each; safe to repeat.
 */
export async function teardownRealNode(state: RealNodeState): Promise<string[]> {
  const said: string[] = [];
  const pods = cgroupHierarchies().map((h) => join(h, state.cgroup));
  for (let round = 0; round < 50; round++) {
    const pids = [...new Set([...pods.flatMap(pidsInCgroup), ...pidsInNamespace(state.holder.pid)])].filter(
      (p) => p !== state.holder.pid,
    );
    if (pids.length === 0) break;
    if (round === 0) said.push(`killed ${pids.length} processes of the node (containers, shims, daemons)`);
    pids.forEach(kill);
    await sleep(100);
  }
  said.push(`node namespaces holder: ${await stopPid(state.holder, 2000)}`);
  for (const cg of pods) {
    for (let i = 0; i < 20 && existsSync(cg); i++) {
      try {
        removeCgroupTree(cg);
      } catch {
        await sleep(100);
      }
    }
    if (existsSync(cg)) said.push(`could not remove cgroup ${cg}`);
  }
  if (existsSync(`/sys/class/net/${state.hostLink}`)) {
    try {
      sh('ip', ['link', 'del', state.hostLink]);
    } catch (e) {
      // Gone meanwhile: it goes with the node's network namespace.
      if (!/Cannot find device/.test((e as Error).message))
        said.push(`could not remove link ${state.hostLink}: ${(e as Error).message}`);
    }
  }
  for (const m of mountsUnder(state.volumes)) {
    try {
      sh('umount', [m]);
    } catch {
      try {
        sh('umount', ['-l', m]);
      } catch (e) {
        said.push(`could not unmount ${m}: ${(e as Error).message}`);
      }
    }
  }
  for (const [key, value] of Object.entries(state.sysctls)) {
    const now = readFileSync(`/proc/sys/${key}`, 'utf8').trim();
    if (now === value) continue;
    writeFileSync(`/proc/sys/${key}`, value);
    said.push(`${key.replace(/\//g, '.')} put back: ${now} -> ${value}`);
  }
  return said;
}

/** One answer the traffic client saw (traffic-client.ts). */
export interface Sample {
  t: number;
  ok: boolean;
  pod?: string;
  status?: number;
  error?: string;
  ms: number;
}

/**
 * Requests to `url` without pause from inside the node (where ClusterIPs are
 * routed), until stopped; stop() returns every answer in order.
 */
export function startTraffic(
  state: Pick<RealNodeState, 'holder'>,
  url: string,
): { sofar(): readonly Sample[]; stop(): Promise<Sample[]> } {
  const samples: Sample[] = [];
  const child = spawn(
    'nsenter',
    [
      '-t',
      String(state.holder.pid),
      '-n',
      '--',
      process.execPath,
      join(repoRoot, 'dist', 'test', 'support', 'traffic-client.js'),
      url,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let rest = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) if (l.trim()) samples.push(JSON.parse(l) as Sample);
  });
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    sofar: () => samples,
    stop: async () => {
      child.kill('SIGTERM');
      await ended;
      return samples;
    },
  };
}

/**
 * The host PIDs of a pod's container processes (the container's main process
 * first): found by the pod's UID in their cgroup path, as the kubelet names it.
 */
export function containerPids(podUid: string): number[] {
  const marker = `pod${podUid}`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      // The sandbox's pause is in the pod's cgroup too: not a container of the pod's spec.
      if (cgroup.includes(marker) && !cmd.startsWith('/pause')) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids.sort((a, b) => a - b);
}
