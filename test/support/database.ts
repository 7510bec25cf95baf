// Helpers for Database tests: XRs, calls with required resources answered,
// and the step Crossplane takes between calls (desired becomes observed).
import {
  type RunFunctionRequest,
  type RunFunctionResponse,
  Ready,
  Severity,
} from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';

export const NAMESPACE = 'team-a';

/** The keys of a Database's connection Secret, whatever the placement, sorted. */
export const CONNECTION_KEYS = [
  'dbname',
  'host',
  'jdbc-uri',
  'password',
  'port',
  'ro-host',
  'ro-port',
  'ro-uri',
  'uri',
  'username',
];

/** The object store the tests' in-cluster Databases back up to. */
export const OBJECT_STORE = {
  bucket: 'team-a-backups',
  region: 'eu-west-1',
  credentialsSecretRef: { name: 'backup-store' },
};

/** OBJECT_STORE's credentials Secret as the cluster holds it (keys of the store, not placeholders). */
export function storeCredentials(values: Record<string, string> = {}): Obj {
  const data = {
    AWS_ACCESS_KEY_ID: 'AKIAEXAMPLESTORE01',
    AWS_SECRET_ACCESS_KEY: 'k3y-of-the-store-0123456789',
    ...values,
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: OBJECT_STORE.credentialsSecretRef.name, namespace: NAMESPACE },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

/**
 * An in-cluster spec with backups gets OBJECT_STORE unless it names one (an
 * in-cluster Database without one is not Ready: its backups have nowhere to go).
 */
export function withObjectStore(spec: unknown): unknown {
  if (!spec || typeof spec !== 'object') return spec;
  const s = spec as Obj;
  const backup = (s['backup'] ?? {}) as Obj;
  if (s['placement'] === 'aws' || 'objectStore' in backup) return spec;
  return { ...s, backup: { ...backup, objectStore: OBJECT_STORE } };
}

/** A namespaced Database XR (in the cluster: with OBJECT_STORE unless `bare`). */
export function databaseXr(
  spec: unknown,
  opts: { name?: string; namespace?: string; uid?: string; status?: Obj; bare?: boolean } = {},
): Obj {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: {
      name: opts.name ?? 'orders',
      namespace: opts.namespace ?? NAMESPACE,
      uid: opts.uid ?? `uid-${opts.name ?? 'orders'}`,
    },
    spec: opts.bare ? spec : withObjectStore(spec),
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** The CRD of Crossplane's Usages as Crossplane returns it for the `usage-crd` requirement: Usages are served. */
export const USAGE_CRD_OBJECT: Obj = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'usages.protection.crossplane.io' },
};

/** The CloudNativePG CRD as Crossplane would return it for the `cnpg-crd` requirement. */
export const CNPG_CRD_OBJECT: Obj = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clusters.postgresql.cnpg.io' },
};

export type Required = NonNullable<RunFunctionRequest['requiredResources']>;

/** A required-resources answer: name → objects (an empty list is "looked, found nothing"). */
export function answered(entries: Record<string, Obj[]>): Required {
  const out: Required = {};
  for (const [name, objects] of Object.entries(entries)) {
    out[name] = {
      items: objects.map((resource) => ({ resource, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED })),
    };
  }
  return out;
}

/** One call of the function. */
export function call(xr: Obj, observed: Obj[] = [], required: Required = {}): RunFunctionResponse {
  return runFunction(buildRequest(xr, observed, [], undefined, required));
}

/** The desired composed resources as Crossplane would observe them next time: annotated with their key. */
export function asObserved(
  rsp: RunFunctionResponse,
  status: (key: string, obj: Obj) => unknown = () => undefined,
): Obj[] {
  return Object.entries(rsp.desired?.resources ?? {}).map(([key, res]) => {
    const obj = structuredClone(res.resource ?? {}) as Obj;
    const meta = (obj['metadata'] ?? {}) as Obj;
    obj['metadata'] = {
      ...meta,
      annotations: { ...((meta['annotations'] as Obj | undefined) ?? {}), [RESOURCE_NAME_ANNOTATION]: key },
    };
    const s = status(key, obj);
    if (s !== undefined) obj['status'] = s;
    return obj;
  });
}

export function fatalOf(rsp: RunFunctionResponse) {
  return rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
}

export function desiredOf(rsp: RunFunctionResponse, key: string): Obj | undefined {
  return rsp.desired?.resources[key]?.resource as Obj | undefined;
}

export function statusOf(rsp: RunFunctionResponse): Obj {
  return ((rsp.desired?.composite?.resource as Obj | undefined)?.['status'] ?? {}) as Obj;
}

/** A Secret's data, decoded. */
export function secretData(secret: Obj | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((secret?.['data'] ?? {}) as Record<string, string>))
    out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** A Secret as the API server returns it (data base64). */
export function k8sSecret(name: string, namespace: string, values: Record<string, string>): Obj {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) data[k] = Buffer.from(v, 'utf8').toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'connection.crossplane.io/v1alpha1',
    data,
  };
}

/** The pinned DatabaseBackup orders-before-migration of Database orders (examples/databasebackup), with `status`. */
export function beforeMigrationBackup(status?: Obj): Obj {
  return {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: { name: 'orders-before-migration', namespace: NAMESPACE, uid: 'uid-backup' },
    spec: { databaseRef: { name: 'orders' }, pinned: true },
    ...(status ? { status } : {}),
  };
}

/** A Completed, restorable dump of `database`, as its DatabaseBackup reports it (and Crossplane returns it). */
export function completedBackup(name = 'orders-db-202612020300', database = 'orders', status: Obj = {}): Obj {
  return {
    apiVersion: 'example.com/v1',
    kind: 'DatabaseBackup',
    metadata: { name, namespace: NAMESPACE },
    spec: { databaseRef: { name: database } },
    status: {
      phase: 'Completed',
      method: 'dump',
      engine: 'postgres',
      version: '17',
      completedAt: '2026-12-02T03:01:12Z',
      location: `s3://team-a-backups/${database}/${name}.dump`,
      sizeBytes: 48211,
      restorable: true,
      ...status,
    },
  };
}

/** A cluster-scoped composite made from a Database claim (claims mode). */
export function claimXr(spec: unknown, opts: { claim?: string; namespace?: string; bare?: boolean } = {}): Obj {
  const claim = opts.claim ?? 'orders';
  return {
    apiVersion: 'example.com/v1',
    kind: 'XDatabase',
    metadata: {
      name: `${claim}-x7k2p`,
      uid: `uid-x-${claim}`,
      labels: { 'crossplane.io/claim-name': claim, 'crossplane.io/claim-namespace': opts.namespace ?? NAMESPACE },
    },
    spec: opts.bare ? spec : withObjectStore(spec),
  };
}

/** What a provider-kubernetes Object carries, or the object itself. */
export function inner(obj: Obj | undefined): Obj | undefined {
  if (obj?.['kind'] !== 'Object') return obj;
  return ((obj['spec'] as Obj | undefined)?.['forProvider'] as Obj | undefined)?.['manifest'] as Obj | undefined;
}

/** As provider-kubernetes reports an Object it has applied: ready, with the object it observed. */
export function observedObjectStatus(obj: Obj): Obj | undefined {
  const manifest = inner(obj);
  if (obj['kind'] !== 'Object' || !manifest) return undefined;
  return {
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Available' },
      { type: 'Synced', status: 'True' },
    ],
    atProvider: { manifest },
  };
}

/** The S3 bucket an earlier version composed for a Database on AWS, as Crossplane observes it. */
export function earlierVersionBucket(name = 'orders-db-backups-0a1b2c3d4e'): Obj {
  return {
    apiVersion: 's3.aws.m.upbound.io/v1beta1',
    kind: 'Bucket',
    metadata: {
      name,
      namespace: NAMESPACE,
      annotations: { [RESOURCE_NAME_ANNOTATION]: 'backup-bucket', 'crossplane.io/external-name': name },
    },
    spec: { forProvider: { region: 'eu-west-1' } },
  };
}

/** The dump volume an earlier version composed for a highly available Database, as Crossplane observes it. */
export function earlierVersionBackupVolume(gb: number): Obj {
  return {
    apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
    kind: 'Object',
    metadata: {
      name: 'orders-db-backup',
      namespace: NAMESPACE,
      annotations: { [RESOURCE_NAME_ANNOTATION]: 'backup-volume' },
    },
    spec: {
      forProvider: {
        manifest: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'orders-db-backup', namespace: NAMESPACE },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${gb}Gi` } } },
        },
      },
    },
  };
}
