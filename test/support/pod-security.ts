// The restricted Pod Security Standard's checks on a pod spec, as the API
// server's PodSecurity admission applies them (policy version latest):
// what a namespace labelled pod-security.kubernetes.io/enforce=restricted
// refuses. Each violation names the field, as the admission message does.
import type { Obj } from '../../src/kube.js';

const ALLOWED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

const obj = (v: unknown): Obj => (v && typeof v === 'object' ? (v as Obj) : {});

/** Every way `pod` (a PodSpec) breaks the restricted profile; empty when it is admitted. */
export function restrictedViolations(pod: Obj): string[] {
  const out: string[] = [];
  const podSc = obj(pod['securityContext']);
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC'] as const)
    if (pod[host] === true) out.push(`spec.${host}=true`);
  for (const v of (pod['volumes'] ?? []) as Obj[]) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (!type || !ALLOWED_VOLUMES.has(type)) out.push(`volume ${String(v['name'])} is ${type}`);
  }
  for (const s of (obj(podSc)['sysctls'] ?? []) as Obj[])
    if (!SAFE_SYSCTLS.has(String(s['name']))) out.push(`sysctl ${String(s['name'])}`);
  if (podSc['runAsUser'] === 0) out.push('spec.securityContext.runAsUser=0');
  if (podSc['runAsGroup'] === 0) out.push('spec.securityContext.runAsGroup=0');
  const podSeccomp = obj(podSc['seccompProfile'])['type'];
  if (podSeccomp !== undefined && podSeccomp !== 'RuntimeDefault' && podSeccomp !== 'Localhost')
    out.push(`spec.securityContext.seccompProfile.type=${String(podSeccomp)}`);
  const containers = [
    ...((pod['initContainers'] ?? []) as Obj[]),
    ...((pod['containers'] ?? []) as Obj[]),
    ...((pod['ephemeralContainers'] ?? []) as Obj[]),
  ];
  for (const c of containers) {
    const name = `container ${String(c['name'])}`;
    const sc = obj(c['securityContext']);
    if (sc['privileged'] === true) out.push(`${name}: privileged`);
    if (sc['allowPrivilegeEscalation'] !== false) out.push(`${name}: allowPrivilegeEscalation != false`);
    const caps = obj(sc['capabilities']);
    if (!((caps['drop'] ?? []) as string[]).includes('ALL')) out.push(`${name}: capabilities.drop lacks ALL`);
    for (const add of (caps['add'] ?? []) as string[])
      if (add !== 'NET_BIND_SERVICE') out.push(`${name}: capabilities.add ${add}`);
    const nonRoot = sc['runAsNonRoot'] ?? podSc['runAsNonRoot'];
    if (nonRoot !== true) out.push(`${name}: runAsNonRoot != true`);
    if (sc['runAsUser'] === 0) out.push(`${name}: runAsUser=0`);
    const seccomp = obj(sc['seccompProfile'])['type'] ?? podSeccomp;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') out.push(`${name}: seccompProfile.type unset`);
    for (const p of (c['ports'] ?? []) as Obj[])
      if (p['hostPort'] !== undefined && p['hostPort'] !== 0) out.push(`${name}: hostPort ${String(p['hostPort'])}`);
    if (sc['procMount'] !== undefined && sc['procMount'] !== 'Default') out.push(`${name}: procMount`);
    const se = obj(sc['seLinuxOptions']);
    if (se['user'] !== undefined || se['role'] !== undefined) out.push(`${name}: seLinuxOptions user/role`);
  }
  return out;
}
