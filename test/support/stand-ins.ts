// The stand-ins of the local control plane: the parts of a cluster it has no
// real component for, played by this process and named as what they stand in
// for. Nothing else in the control plane is imitated.
//
// - External package runtime (Crossplane runs with --package-runtime=External):
//   for each active FunctionRevision it writes the function's server TLS
//   Secret (the name the revision asks for), the endpoint Crossplane dials,
//   and RuntimeHealthy=True, as the Deployment runtime would after rolling out.
//   For each active ProviderRevision (the stand-in provider packages of
//   stand-in-packages.ts) it writes the TLS Secret whose certificate the
//   package manager puts into conversion webhooks (never called: objects are
//   written in their storage version) and RuntimeHealthy=True; nothing runs.
// - Volume provisioner (stand-in for a CSI driver): binds every Pending
//   PersistentVolumeClaim of a StorageClass it serves to a PersistentVolume
//   it creates, with the capacity asked for. On kwok nodes the volume is a
//   name only (nothing mounts it). With --volumes=DIR --node=NAME (a real
//   node) it is real: a file under DIR of the size asked, formatted XFS and
//   mounted at DIR/<volume> (a local volume of that node), so the kubelet
//   mounts it into pods and reports its use. As a CSI driver's resizer and
//   node plugin together, it grows a bound volume whose claim asks for more:
//   the file, then the mounted file system online (xfs_growfs), then the
//   volume's and the claim's capacity. (XFS, not ext4: growing a mounted
//   ext4 needs CAP_SYS_RESOURCE, which this machine does not give.)
//
// All of it runs in passes woken by watches of the revisions, the claims and
// the StorageClasses (a claim asking for more wakes the resizer), with a pass
// at least every 30 s, as a controller's resync.
//
//   node dist/test/support/stand-ins.js --kubeconfig=F --function-endpoint=HOST:PORT --function-certs=DIR
//     [--function-endpoint-for=PACKAGE=HOST:PORT ...]   (another function, by its package's name)
//                                       [--volumes=DIR --node=NAME]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { ApiError, type Json, KubeClient } from './apiserver.js';
import { CROSSPLANE_NAMESPACE, STAND_IN_PROVISIONER } from './control-plane.js';
import { watchPath } from './watch.js';

const FIELD_MANAGER = 'function-platform-stand-ins';

const say = (what: string, detail: Json = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), what, ...detail })}\n`);

interface Options {
  kubeconfig: string;
  functionEndpoint: string;
  /** Other functions' endpoints, by package name (bench:scale runs function-patch-and-transform beside ours). */
  endpointsByPackage: Map<string, string>;
  functionCerts: string;
  /** Real volumes: where their files and mounts go, and the node that has them. */
  real?: { volumes: string; node: string };
}

function options(argv: string[]): Options {
  const find = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const get = (name: string) => {
    const hit = find(name);
    if (hit === undefined) throw new Error(`--${name}= is required`);
    return hit;
  };
  const volumes = find('volumes');
  return {
    kubeconfig: get('kubeconfig'),
    functionEndpoint: get('function-endpoint'),
    endpointsByPackage: new Map(
      argv
        .filter((a) => a.startsWith('--function-endpoint-for='))
        .map((a) => {
          const [pkg, endpoint] = a.slice('--function-endpoint-for='.length).split('=');
          return [pkg!, endpoint!] as const;
        }),
    ),
    functionCerts: get('function-certs'),
    ...(volumes ? { real: { volumes, node: get('node') } } : {}),
  };
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Bytes of a quantity as claims write it (Gi, Mi, G, M, Ki, k or plain). */
function bytes(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) throw new Error(`quantity ${quantity}: not a whole number of bytes with a unit`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

/** A real volume: DIR/<name>.img of `size`, XFS, mounted at DIR/<name>. Idempotent. */
function makeVolume(dir: string, name: string, size: string): string {
  const img = `${dir}/${name}.img`;
  const mnt = `${dir}/${name}`;
  if (!existsSync(img)) {
    run('truncate', ['-s', String(bytes(size)), `${img}.tmp`]);
    run('mkfs.xfs', ['-q', '-f', `${img}.tmp`]);
    run('mv', [`${img}.tmp`, img]);
  }
  mkdirSync(mnt, { recursive: true });
  if (!readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${mnt} `)) run('mount', ['-o', 'loop', img, mnt]);
  return mnt;
}

/** Grows the volume's file and its mounted file system to `size`, online. */
function growVolume(dir: string, name: string, size: string): void {
  const img = `${dir}/${name}.img`;
  run('truncate', ['-s', String(bytes(size)), img]);
  const loop = run('losetup', ['-j', img]).split(':')[0]?.trim();
  if (!loop) throw new Error(`${img} is not attached to a loop device`);
  run('losetup', ['-c', loop]);
  run('xfs_growfs', [`${dir}/${name}`]);
}

/** The external package runtime: one pass over the FunctionRevisions and ProviderRevisions. */
async function packageRuntime(client: KubeClient, o: Options, certs: Record<string, string>): Promise<void> {
  const revisions = [
    ...(await client.listObjs('pkg.crossplane.io/v1', 'FunctionRevision')).map((rev) => ({ rev, isFunction: true })),
    ...(await client.listObjs('pkg.crossplane.io/v1', 'ProviderRevision')).map((rev) => ({ rev, isFunction: false })),
  ];
  for (const { rev, isFunction } of revisions) {
    if (rev['spec']?.['desiredState'] !== 'Active') continue;
    const name = String(rev['metadata']['name']);
    // The name Crossplane's own runtime gives it (GetTLSServerSecretName: the package's name + "-tls-server").
    const pkg = rev['metadata']?.['labels']?.['pkg.crossplane.io/package'] as string | undefined;
    const endpoint = isFunction ? ((pkg && o.endpointsByPackage.get(pkg)) ?? o.functionEndpoint) : undefined;
    const secretName =
      (rev['spec']?.['tlsServerSecretName'] as string | undefined) ?? (pkg ? `${pkg}-tls-server` : undefined);
    if (!secretName) continue;
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace: CROSSPLANE_NAMESPACE },
      type: 'Opaque',
      data: certs,
    };
    const have = await client.getObj(secret);
    // Key by key: the API server returns the keys sorted, not in the order written.
    if (!have || Object.entries(certs).some(([k, v]) => have['data']?.[k] !== v)) {
      await client.applyObj(secret, { fieldManager: FIELD_MANAGER, force: true });
      say('wrote the server TLS Secret', { revision: name, secret: secretName });
    }
    const status = rev['status'] ?? {};
    const conditions: Json[] = status['conditions'] ?? [];
    const healthy = conditions.find((c) => c['type'] === 'RuntimeHealthy');
    if (
      status['endpoint'] === endpoint &&
      status['tlsServerSecretName'] === secretName &&
      healthy?.['status'] === 'True'
    )
      continue;
    const runtimeHealthy = {
      type: 'RuntimeHealthy',
      status: 'True',
      reason: 'HealthyPackageRuntime',
      message: isFunction
        ? 'stand-in external runtime: the function runs as a local process'
        : 'stand-in external runtime: a stand-in provider package, nothing runs it',
      lastTransitionTime: new Date().toISOString(),
    };
    try {
      await client.raw('PUT', rev, 'replace', {
        subresource: 'status',
        body: {
          ...rev,
          status: {
            ...status,
            ...(endpoint ? { endpoint } : {}),
            tlsServerSecretName: secretName,
            conditions: [...conditions.filter((c) => c['type'] !== 'RuntimeHealthy'), runtimeHealthy],
          },
        },
      });
      say('set the revision endpoint and RuntimeHealthy', { revision: name, endpoint });
    } catch (e) {
      // Crossplane wrote the revision meanwhile: the next pass reads it again.
      if (!(e instanceof ApiError && e.code === 409)) throw e;
    }
  }
}

/** The volume provisioner: a PersistentVolume for each Pending claim of a class it serves. */
async function provisioner(client: KubeClient, real: Options['real']): Promise<void> {
  const classes = new Map<string, Json>();
  let defaultClass: string | undefined;
  for (const sc of await client.listObjs('storage.k8s.io/v1', 'StorageClass')) {
    if (sc['provisioner'] !== STAND_IN_PROVISIONER) continue;
    classes.set(String(sc['metadata']['name']), sc);
    if (sc['metadata']?.['annotations']?.['storageclass.kubernetes.io/is-default-class'] === 'true')
      defaultClass = String(sc['metadata']['name']);
  }
  for (const pvc of await client.listObjs('v1', 'PersistentVolumeClaim')) {
    if (pvc['status']?.['phase'] !== 'Pending' || pvc['spec']?.['volumeName'] || pvc['metadata']?.['deletionTimestamp'])
      continue;
    const className = (pvc['spec']?.['storageClassName'] as string | undefined) ?? defaultClass;
    if (!className || !classes.has(className)) continue;
    const uid = String(pvc['metadata']['uid']);
    const size = String(pvc['spec']?.['resources']?.['requests']?.['storage'] ?? '1Gi');
    const name = `pv-${uid}`;
    const source = real
      ? {
          local: { path: makeVolume(real.volumes, name, size) },
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [real.node] }] },
              ],
            },
          },
        }
      : // Nothing mounts it: kwok runs no containers.
        { hostPath: { path: `/stand-in/volumes/${uid}` } };
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': STAND_IN_PROVISIONER } },
      spec: {
        capacity: { storage: size },
        accessModes: pvc['spec']?.['accessModes'] ?? ['ReadWriteOnce'],
        volumeMode: pvc['spec']?.['volumeMode'] ?? 'Filesystem',
        persistentVolumeReclaimPolicy: String(classes.get(className)!['reclaimPolicy'] ?? 'Delete'),
        storageClassName: className,
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: pvc['metadata']['namespace'],
          name: pvc['metadata']['name'],
          uid,
        },
        ...source,
      },
    };
    if (await client.getObj(pv)) continue;
    await client.createObj(pv, { fieldManager: FIELD_MANAGER });
    say('provisioned a volume', {
      claim: `${pvc['metadata']['namespace']}/${pvc['metadata']['name']}`,
      size,
      class: className,
    });
  }
}

/**
 * The resizer of real volumes, run in every pass (a claim asking for more is a
 * change of the claims watched): a bound claim of ours asking for more than its
 * volume has gets it, the file system grown online, and then the volume and
 * the claim say the new capacity (what the external resizer and the kubelet's
 * node expansion write).
 */
async function resizer(client: KubeClient, real: NonNullable<Options['real']>): Promise<void> {
  for (const pvc of await client.listObjs('v1', 'PersistentVolumeClaim')) {
    const volume = pvc['spec']?.['volumeName'] as string | undefined;
    const want = pvc['spec']?.['resources']?.['requests']?.['storage'] as string | undefined;
    if (!volume || !want || pvc['status']?.['phase'] !== 'Bound') continue;
    const pv = await client.getObj({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: volume } });
    if (pv?.['metadata']?.['annotations']?.['pv.kubernetes.io/provisioned-by'] !== STAND_IN_PROVISIONER) continue;
    const has = String(pv['spec']?.['capacity']?.['storage'] ?? '0');
    const claimHas = String(pvc['status']?.['capacity']?.['storage'] ?? '0');
    if (bytes(want) > bytes(has)) {
      growVolume(real.volumes, volume, want);
      await client.updateObj({ ...pv, spec: { ...pv['spec'], capacity: { storage: want } } });
      say('grew a volume', { volume, from: has, to: want });
    }
    if (bytes(want) > bytes(claimHas)) {
      await client.mergeStatus(pvc, {
        capacity: { storage: want },
        allocatedResources: { storage: want },
        conditions: [],
        allocatedResourceStatuses: null,
      });
      say('the claim has its new capacity', {
        claim: `${pvc['metadata']['namespace']}/${pvc['metadata']['name']}`,
        to: want,
      });
    }
  }
}

/** The collections whose changes call for a pass. */
const WATCHED = [
  '/apis/pkg.crossplane.io/v1/functionrevisions',
  '/apis/pkg.crossplane.io/v1/providerrevisions',
  '/api/v1/persistentvolumeclaims',
  '/apis/storage.k8s.io/v1/storageclasses',
];
/** A pass runs at least this often, whatever the watches say (a missed event costs at most this). */
const SAFETY_PASS_MS = 30_000;

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfig);
  const client = KubeClient.fromKubeConfig(kc);
  const certs = Object.fromEntries(
    ['tls.crt', 'tls.key', 'ca.crt'].map((f) => [f, readFileSync(join(o.functionCerts, f)).toString('base64')]),
  );
  say('started', { endpoint: o.functionEndpoint });
  // Woken by watches, as a controller is: a poll every 300 ms was most of the API server's requests at rest
  // (about 18 a second), load a real package runtime or provisioner does not put on a cluster.
  let dirty = true;
  let wake: (() => void) | undefined;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const watches = WATCHED.map((path) =>
    watchPath(kc, path, poke, { onError: (e) => say('watch ended; starting again', { path, error: String(e) }) }),
  );
  /** Wait until a watch wakes the loop, or `ms` pass (then a pass runs anyway). */
  const until = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        dirty = true;
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });
  let stopping = false;
  process.on('SIGTERM', () => {
    stopping = true;
    poke();
  });
  // After a failed pass (the API server restarting, say), wait longer each time before the next: a controller
  // backs off rather than hammer a server that is down. 100 ms, doubling up to 30 s; a pass that works resets it.
  let backoff = 0;
  const nextBackoff = (ms: number) => Math.min(30_000, (ms || 50) * 2);
  while (!stopping) {
    if (dirty) {
      dirty = false;
      const passes = [() => packageRuntime(client, o, certs), () => provisioner(client, o.real)];
      if (o.real) passes.push(() => resizer(client, o.real!));
      let failed = false;
      for (const pass of passes) {
        try {
          await pass();
        } catch (e) {
          say('pass failed; retrying', { error: (e as Error).message, inMs: nextBackoff(backoff) });
          failed = true;
          dirty = true;
        }
      }
      backoff = failed ? nextBackoff(backoff) : 0;
      // Changes close together are taken in one pass. A back-off ends early on a watch event or SIGTERM.
      if (failed) await until(backoff);
      else await sleep(100);
      continue;
    }
    await until(SAFETY_PASS_MS);
  }
  for (const w of watches) w.stop();
  say('stopped');
}

await main();
