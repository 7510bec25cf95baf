// Observed states made the way a cluster makes them, for the generators that
// replay a history through the function (test/support/fuzz-requests.ts,
// test/unit/nothing-lost.test.ts): an answer applied as Crossplane applies
// it, and what controllers and providers report for an object that is up and
// well, whatever its kind: every replica ready and updated, Ready, Available
// and AbleToScale True, a bound claim, a load balancer address, an available
// RDS instance, and a healthy CloudNativePG Cluster inside an Object.
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { kindOf, num, type Obj, record, str } from '../../src/kube.js';
import { RESOURCE_NAME_ANNOTATION } from '../../src/render.js';

/**
 * Crossplane's side of a call: what is not desired is deleted from `world`;
 * each desired object (by key, in sorted order) is written back with its
 * composition-resource-name annotation, once `observe` has given it what the
 * API server and its controllers add (uid, generation, status). `observe`
 * returns false for an object not observed (its creation failed). A Service
 * gets a cluster IP, as the API server allocates one.
 */
export function applyDesired(
  world: Map<string, Obj>,
  rsp: RunFunctionResponse,
  observe: (obj: Obj, before: Obj | undefined, key: string, index: number) => boolean,
): void {
  const desired = rsp.desired?.resources ?? {};
  for (const key of [...world.keys()]) if (!(key in desired)) world.delete(key);
  Object.keys(desired)
    .sort()
    .forEach((key, i) => {
      const before = world.get(key);
      const obj = structuredClone(desired[key]!.resource ?? {}) as Obj;
      const meta = (record(obj, 'metadata') ?? {}) as Obj;
      obj['metadata'] = {
        ...meta,
        annotations: { ...(record(meta, 'annotations') ?? {}), [RESOURCE_NAME_ANNOTATION]: key },
      };
      const observed = observe(obj, before, key, i);
      if (kindOf(obj) === 'Service' && str(obj, 'spec', 'clusterIP') === undefined)
        obj['spec'] = { ...(record(obj, 'spec') ?? {}), clusterIP: '10.0.0.1' };
      if (observed) world.set(key, obj);
    });
}

/** The status of `obj` when all is well; `extraGB` more storage than asked for (RDS storage autoscaling grew it). */
export function healthyStatus(obj: Obj, extraGB = 0): Obj {
  const generation = num(obj, 'metadata', 'generation') ?? 1;
  const replicas = num(obj, 'spec', 'replicas') ?? 1;
  const allocated = num(obj, 'spec', 'forProvider', 'allocatedStorage');
  const manifest = record(obj, 'spec', 'forProvider', 'manifest');
  return {
    observedGeneration: generation,
    replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    updatedReplicas: replicas,
    currentRevision: 'r1',
    updateRevision: 'r1',
    currentReplicas: replicas,
    phase: 'Bound',
    loadBalancer: { ingress: [{ ip: '192.0.2.10' }] },
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Available' },
      { type: 'Available', status: 'True' },
      { type: 'AbleToScale', status: 'True' },
    ],
    atProvider: {
      address: 'db.abc.eu-west-1.rds.amazonaws.com',
      port: 5432,
      status: 'available',
      ...(allocated !== undefined ? { allocatedStorage: allocated + extraGB } : {}),
      ...(manifest
        ? {
            manifest: {
              ...manifest,
              status: { phase: kindOf(manifest) === 'Cluster' ? 'Cluster in healthy state' : 'Bound' },
            },
          }
        : {}),
    },
  };
}
