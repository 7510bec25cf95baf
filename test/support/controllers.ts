// The controllers a bare API server lacks, played for one step: each writes
// the status its real counterpart would, through the status subresource, for
// the generation the server assigned. Deployment and StatefulSet controllers,
// the PV binder, the disruption, HPA and ingress controllers, provider-upjet-aws
// (Ready with atProvider, and its connection Secret), provider-kubernetes
// (creates what an Object wraps and reports it back), the CloudNativePG
// operator, and the garbage collector finishing foreground deletions.
import { type Json, type KubeClient } from './apiserver.js';
import { RESOURCE_NAME_ANNOTATION } from '../../src/render.js';

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

/** Crossplane-runtime conditions: what a provider reports when the external resource is up. */
const managedReady = () => [
  { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: now() },
  { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: now() },
];

export interface ControllerOptions {
  /** Deployments get at most this many available replicas (a rollout in progress); default: all. */
  maxAvailable?: number;
  /** Leave these kinds alone (their controller is "down"). */
  skipKinds?: string[];
}

/** Writes the status of one object as its controller would; returns the stored object, or undefined if nothing to do. */
export async function settleObject(client: KubeClient, obj: Json, opts: ControllerOptions = {}): Promise<Json | undefined> {
  const kind = String(obj['kind']);
  const group = groupOf(String(obj['apiVersion']));
  if (opts.skipKinds?.includes(kind)) return undefined;
  const generation = obj['metadata']['generation'];
  const spec: Json = obj['spec'] ?? {};
  let status: Json | undefined;
  switch (`${group}/${kind}`) {
    case 'apps/Deployment': {
      const want = Number(spec['replicas'] ?? 1);
      const n = Math.min(want, opts.maxAvailable ?? want);
      status = {
        observedGeneration: generation,
        replicas: want,
        updatedReplicas: want,
        readyReplicas: n,
        availableReplicas: n,
        ...(want - n > 0 ? { unavailableReplicas: want - n } : {}),
        conditions: [
          { type: 'Available', status: n >= want ? 'True' : 'False', reason: n >= want ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable', message: `${n}/${want} available`, lastUpdateTime: now(), lastTransitionTime: now() },
          { type: 'Progressing', status: 'True', reason: n >= want ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated', message: 'rolling out', lastUpdateTime: now(), lastTransitionTime: now() },
        ],
      };
      break;
    }
    case 'apps/StatefulSet': {
      const want = Number(spec['replicas'] ?? 1);
      const revision = `${obj['metadata']['name']}-${generation}`;
      status = { observedGeneration: generation, replicas: want, readyReplicas: want, currentReplicas: want, updatedReplicas: want, availableReplicas: want, currentRevision: revision, updateRevision: revision, collisionCount: 0 };
      break;
    }
    case '/PersistentVolumeClaim':
      status = { phase: 'Bound', accessModes: spec['accessModes'] ?? ['ReadWriteOnce'], capacity: { storage: spec['resources']?.['requests']?.['storage'] ?? '1Gi' } };
      break;
    case 'policy/PodDisruptionBudget':
      status = { observedGeneration: generation, disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 };
      break;
    case 'autoscaling/HorizontalPodAutoscaler':
      status = {
        currentReplicas: Number(spec['minReplicas'] ?? 1),
        desiredReplicas: Number(spec['minReplicas'] ?? 1),
        conditions: [{ type: 'AbleToScale', status: 'True', reason: 'ReadyForNewScale', lastTransitionTime: now() }],
      };
      break;
    case 'networking.k8s.io/Ingress':
      status = { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } };
      break;
    case 'postgresql.cnpg.io/Cluster': {
      const instances = Number(spec['instances'] ?? 1);
      status = { phase: 'Cluster in healthy state', instances, readyInstances: instances, latestGeneratedNode: instances };
      break;
    }
    default:
      if (kind === 'Object' && (group === 'kubernetes.crossplane.io' || group === 'kubernetes.m.crossplane.io')) return provideKubernetesObject(client, obj, opts);
      if (group.endsWith('.upbound.io')) return provideManaged(client, obj);
      return undefined;
  }
  return client.mergeStatus(obj, status);
}

/** provider-upjet-aws: the external resource exists and is up. */
async function provideManaged(client: KubeClient, obj: Json): Promise<Json> {
  const name = String(obj['metadata']['annotations']?.['crossplane.io/external-name'] ?? obj['metadata']['name']);
  const forProvider: Json = obj['spec']?.['forProvider'] ?? {};
  const atProvider: Json = { id: name };
  const kind = String(obj['kind']);
  if (kind === 'Instance') {
    const region = String(forProvider['region'] ?? 'eu-west-1');
    const port = forProvider['engine'] === 'mysql' ? 3306 : 5432;
    const address = `${name}.c9akciq32.${region}.rds.amazonaws.com`;
    Object.assign(atProvider, {
      address,
      port,
      endpoint: `${address}:${port}`,
      status: 'available',
      engineVersionActual: `${String(forProvider['engineVersion'] ?? '17')}.6`,
      latestRestorableTime: now(),
      resourceId: 'db-ABCDEFGHIJKL',
    });
    // The connection Secret the provider writes (namespaced MRs: same namespace; legacy: the ref's namespace).
    const ref: Json | undefined = obj['spec']?.['writeConnectionSecretToRef'];
    const namespace = ref?.['namespace'] ?? obj['metadata']['namespace'];
    if (ref?.['name'] && namespace) {
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      await client.applyObj(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: ref['name'], namespace },
          type: 'connection.crossplane.io/v1alpha1',
          data: { address: b64(address), endpoint: b64(`${address}:${port}`), host: b64(address), port: b64(String(port)), username: b64('app'), password: b64('rds-generated-password-in-test') },
        },
        { fieldManager: 'provider-upjet-aws', force: true },
      );
    }
  }
  return client.mergeStatus(obj, { conditions: managedReady(), atProvider });
}

/** provider-kubernetes: apply the wrapped manifest, let its controller act, report the observed object back. */
async function provideKubernetesObject(client: KubeClient, obj: Json, opts: ControllerOptions): Promise<Json> {
  const manifest: Json = structuredClone(obj['spec']?.['forProvider']?.['manifest'] ?? {});
  let applied = await client.applyObj(manifest, { fieldManager: 'kubernetes.crossplane.io', force: true });
  applied = (await settleObject(client, applied, opts)) ?? applied;
  return client.mergeStatus(obj, { conditions: managedReady(), atProvider: { manifest: applied } });
}

/** Every controller, once, over the composed resources of one XR (by their resourceRefs). */
export async function settleComposed(client: KubeClient, composed: Iterable<Json>, opts: ControllerOptions = {}): Promise<void> {
  for (const obj of composed) {
    const fresh = await client.getObj(obj);
    if (fresh && !fresh['metadata']['deletionTimestamp']) await settleObject(client, fresh, opts);
  }
}

/**
 * The garbage collector's part of a foreground deletion: an object waiting
 * only on `foregroundDeletion` with no dependents left is released.
 */
export async function finishForegroundDeletion(client: KubeClient, obj: Json): Promise<boolean> {
  const fresh = await client.getObj(obj);
  if (!fresh) return true;
  const finalizers: string[] = fresh['metadata']['finalizers'] ?? [];
  if (!fresh['metadata']['deletionTimestamp'] || !finalizers.includes('foregroundDeletion')) return false;
  await client.raw('PATCH', fresh, 'patch', {
    body: { metadata: { finalizers: finalizers.filter((f) => f !== 'foregroundDeletion'), resourceVersion: fresh['metadata']['resourceVersion'] } },
    contentType: 'application/merge-patch+json',
  });
  return (await client.getObj(obj)) === undefined;
}

/** The composition-resource-name key of a composed object. */
export const keyOf = (o: Json): string | undefined => o['metadata']?.['annotations']?.[RESOURCE_NAME_ANNOTATION];
