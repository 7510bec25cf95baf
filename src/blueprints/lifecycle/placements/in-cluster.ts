// What the two in-cluster placements (a StatefulSet, a CloudNativePG Cluster)
// share: their pods' resources, the credentials Secret the server reads its
// account from (its password generated once, and kept with the data under
// Retain), the connection Secret built from it, and whether their volumes were
// said to have been grown.
import type {
  V1LabelSelector,
  V1NetworkPolicyIngressRule,
  V1NetworkPolicyPeer,
  V1NetworkPolicySpec,
} from '@kubernetes/client-node';
import { claimOf } from '../../../kinds/core.js';
import type { KubernetesObject } from '../../../kinds/provider-kubernetes.js';
import { condition, type Obj } from '../../../kube.js';
import type { Desired, Requirement } from '../../blueprint.js';
import {
  APP_USER,
  baseName,
  connectionSecret,
  type DatabaseInput,
  dbname,
  meta,
  names,
  type ResolvedSpec,
  secret,
  secretValue,
  stablePassword,
} from '../database.js';
import { POD_RESOURCES } from '../engine.js';
import { CONNECTION_KEY, hasInstance, instanceName } from '../instances.js';
import type { ComposeCall, DatabaseCall, Deletion, LastBackup, Placement } from './placement.js';

/** The credentials Secret's key: the server's account, and the password the connection Secret repeats. */
export const CREDENTIALS_KEY = 'credentials';

/**
 * Under Retain, the credentials Secret outlives the Database with the volume
 * whose data it opens: besides Crossplane's controller reference to the
 * Database it carries an owner reference to the StatefulSet's data claim, and
 * the garbage collector deletes an object only when all its owners are gone.
 * A Database created again on that volume reads the kept Secret back instead
 * of generating a password the data does not know.
 */
export const KEPT_CREDENTIALS = 'kept-credentials';

export const gi = (gb: number) => `${gb}Gi`;

/** Whether the Database already said how a resize of its volumes went (its StorageResized condition). */
export function resizedBefore(input: DatabaseInput): boolean {
  return condition(input.xr, 'StorageResized') !== undefined;
}

/**
 * A plain Kubernetes object that must outlive the Database under Retain goes
 * through a provider-kubernetes Object: the Object's management policies (no
 * Delete) orphan it, where a directly composed object would be garbage
 * collected with its owner. Delete lets the Object take it along.
 */
export function lasting<M>(input: DatabaseCall, name: string, manifest: M, keep = false): KubernetesObject<M> {
  return {
    apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
    kind: 'Object',
    metadata: meta(input.owner, input.spec, name),
    spec: {
      managementPolicies:
        keep || input.spec.deletionPolicy === 'Retain' ? ['Observe', 'Create', 'Update', 'LateInitialize'] : ['*'],
      forProvider: { manifest },
    },
  };
}

/**
 * What an in-cluster placement is known by: spec.placement cluster asks for
 * it, its instances are named after the Database, and it exists once its
 * instance or the credentials Secret does.
 */
export function inClusterIdentity(
  instanceKey: string,
): Pick<Placement, 'asked' | 'instanceKey' | 'instanceName' | 'existsIn'> {
  return {
    asked: 'cluster',
    instanceKey,
    instanceName: (input, generation) => instanceName(input.owner, generation),
    existsIn: (observed) => hasInstance(observed, instanceKey) || observed.has(CREDENTIALS_KEY),
  };
}

/** Pod resources: requests, with memory also the limit. */
export function podResources(spec: ResolvedSpec): Obj {
  const r = POD_RESOURCES[spec.size];
  return { requests: { cpu: r.cpu, memory: r.memory }, limits: { memory: r.memory } };
}

/**
 * The credentials Secret (asking for a kept one first) and the connection
 * Secret of an in-cluster Database serving at `endpoint`. `dataClaim` is the
 * required resource of the claim whose data the password opens, when the
 * Secret is to be kept with it; `claimName` the name it must have.
 */
export function inClusterSecrets(
  call: ComposeCall,
  endpoint: { host: string; port: number; tls?: boolean },
  readOnly: { host: string; port: number } | undefined,
  keepWith?: { requirement: string; claimName: string },
): { resources: Desired[]; requirements: Record<string, Requirement>; connection?: Desired } {
  const { input } = call;
  const { owner, spec } = input;
  const requirements: Record<string, Requirement> = {};
  // A new Database may open a volume a deleted one of its name left under Retain: it reads that one's password.
  if (!input.observed.has(CREDENTIALS_KEY)) {
    requirements[KEPT_CREDENTIALS] = {
      apiVersion: 'v1',
      kind: 'Secret',
      matchName: names.credentials(owner),
      namespace: owner.namespace,
    };
  }
  const keptSecret = input.required.get(KEPT_CREDENTIALS)?.[0];
  const password =
    stablePassword(input, CREDENTIALS_KEY, CONNECTION_KEY) ??
    secretValue(keptSecret, 'password') ??
    input.newPassword();
  // basic-auth, the type CloudNativePG's initdb wants; the StatefulSet reads the same keys.
  const credentials = secret(
    owner,
    spec,
    names.credentials(owner),
    { username: APP_USER, password },
    'kubernetes.io/basic-auth',
  );
  const claim = keepWith ? input.required.get(keepWith.requirement)?.[0] : undefined;
  const { uid: claimUid, name: claimName } = claimOf(claim) ?? {};
  if (keepWith && claimUid && claimName === keepWith.claimName) {
    credentials.metadata.ownerReferences = [
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: keepWith.claimName, uid: claimUid },
    ];
  }
  // In claims mode the Secret travels in an Object, which would delete it with the claim: kept with the data, the
  // Object may not delete (it orphans the Secret, and the owner reference above lets it go with its data).
  const resources: Desired[] = [
    {
      key: CREDENTIALS_KEY,
      object: owner.claim && keepWith ? lasting(input, names.credentials(owner), credentials) : credentials,
    },
  ];
  if (!call.restore.connect) return { resources, requirements };
  const connection = {
    key: CONNECTION_KEY,
    object: connectionSecret(input, spec, {
      ...endpoint,
      username: APP_USER,
      password,
      dbname: call.restore.database ?? dbname(owner),
      ...(readOnly ? { readOnly } : {}),
    }),
  };
  return { resources, requirements, connection };
}

/** The NetworkPolicy's key: one per Database in the cluster. */
export const NETWORK_POLICY_KEY = 'network-policy';
/** An ingress rule as the API spells it (the client's model renames `from`, a reserved word, to `_from`). */
export type IngressRule = Omit<V1NetworkPolicyIngressRule, '_from'> & { from?: V1NetworkPolicyPeer[] };
/** The label the API server puts on every namespace: its name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * Closed by default: the database's pods admit connections to `port` from
 * pods of their own namespace only (the applications beside it, and its own
 * backup, restore and removal Jobs, which run there), and from the namespaces
 * the platform lists (defaults.database.network.allowNamespaces); `more` are
 * a placement's own needs (an operator that must reach its instances). Only
 * ingress is restricted: the server's own way out (S3, the API server) is not.
 * It holds no data, so it goes with the Database like any other object.
 */
export function networkPolicy(
  input: DatabaseCall,
  pods: V1LabelSelector,
  port: number,
  more: IngressRule[] = [],
): Desired {
  const ports = [{ protocol: 'TCP', port }];
  const allowed = [...new Set(input.defaults?.database?.network?.allowNamespaces ?? [])]
    .filter((ns) => ns !== input.owner.namespace)
    .sort();
  const ingress: IngressRule[] = [
    { from: [{ podSelector: {} }], ports },
    ...(allowed.length > 0
      ? [
          {
            from: [
              {
                namespaceSelector: {
                  matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'In', values: allowed }],
                },
              },
            ],
            ports,
          },
        ]
      : []),
    ...more,
  ];
  const spec: Omit<V1NetworkPolicySpec, 'ingress'> & { ingress: IngressRule[] } = {
    podSelector: pods,
    policyTypes: ['Ingress'],
    ingress,
  };
  const policy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(input.owner, input.spec, baseName(input.owner)),
    spec,
  };
  return { key: NETWORK_POLICY_KEY, object: policy as Obj };
}

/** The namespace of the CloudNativePG operator, whose pods reach every instance: the platform's word, else its default. */
export function cnpgOperatorNamespace(input: DatabaseCall): string {
  return input.defaults?.database?.network?.cnpgOperatorNamespace ?? 'cnpg-system';
}

/** Namespace-selector peer for one namespace by name. */
export function namespaceNamed(name: string): { [NAMESPACE_NAME_LABEL]: string } {
  return { [NAMESPACE_NAME_LABEL]: name };
}

/**
 * What deleting an in-cluster Database under Delete keeps. Crossplane (v2.2,
 * v2.3) runs no function while a composite is deleted; it removes its
 * finalizer and Kubernetes' garbage collector deletes what it composed
 * (function-controlled deletion is a draft, crossplane/crossplane#7242). So a
 * last dump is possible only when set up beforehand (`lastDump`: a waiting
 * pod and Usages, statefulset-last-dump.ts); without one, what is kept is what
 * is already in the store: deleting a DatabaseBackup record removes no stored
 * object (only retention does, while the Database lives, and never the
 * newest), so the backups stay there. Said outright, with the newest one by
 * name and how to keep later data.
 */
export function inClusterDeletion(
  input: DatabaseCall,
  goes: string,
  stays: string,
  lastBackup: LastBackup | undefined,
  lastDump?: Deletion['lastDump'] & { waiting?: string },
  noDump = 'Crossplane runs no function while a Database is deleted',
): Deletion {
  const { spec } = input;
  const store = spec.backup.objectStore;
  if (!spec.backup.enabled || !store)
    return {
      keeps: `Delete: deleting this Database deletes ${goes}; ${spec.backup.enabled ? 'backups have nowhere to go' : 'backups are off'}, so nothing of its data is kept`,
    };
  const where = `bucket ${store.bucket}${store.prefix ? ` (prefix ${store.prefix})` : ''}`;
  if (spec.backup.finalSnapshot === false)
    return {
      keeps: `Delete with spec.backup.finalSnapshot false: deleting this Database deletes ${goes}; no last copy is kept on purpose, and ${stays} already in ${where} are not removed by the deletion (nothing runs then): they stay until the store's own lifecycle expires them`,
    };
  // The newest one by name is in status.deletion.lastBackup: the sentence stays the same from one backup to the next.
  const newest = lastBackup
    ? 'the newest of them is status.deletion.lastBackup'
    : 'none has completed yet, so nothing would be kept now';
  if (lastDump) {
    const dump = lastDump.standing
      ? `pod ${lastDump.pod} first takes a last dump to ${lastDump.location} (status.deletion.lastDump), and Crossplane's Usages keep the server up until it is uploaded`
      : `pod ${lastDump.pod} takes a last dump when it is deleted, but ${lastDump.waiting}: deleting now takes none`;
    const { location, pod, standing } = lastDump;
    return {
      keeps: `Delete: deleting this Database deletes ${goes}; ${dump}. ${stays.charAt(0).toUpperCase()}${stays.slice(1)} in ${where} stay too: ${newest}. The DatabaseBackup records this Database composed go with it; what they stored stays`,
      ...(lastBackup ? { lastBackup } : {}),
      lastDump: { location, pod, standing },
    };
  }
  return {
    keeps: `Delete: deleting this Database deletes ${goes}; no backup is taken at that moment (${noDump}), and ${stays} in ${where} stay: ${newest}. Data written after it is not kept: make a DatabaseBackup just before deleting, and wait for it to complete. The DatabaseBackup records this Database composed go with it; what they stored stays`,
    ...(lastBackup ? { lastBackup } : {}),
  };
}
