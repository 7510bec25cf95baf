// CloudNativePG: a Cluster is healthy by its phase (instance counts rise before recovery ends);
// its Backups and the Barman Cloud plugin's ObjectStore.
import { type Composed, list, num, str, strings, type Obj } from '../kube.js';
import { accessor, type Family } from './kind.js';
import { failed, progressing, ready, type Verdict } from './verdict.js';

export const CNPG_HEALTHY = 'Cluster in healthy state';

function cluster(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase');
  if (phase === CNPG_HEALTHY) return ready('healthy');
  return progressing(phase ? `phase "${phase}"` : 'waiting for the CloudNativePG operator');
}

/** A Backup is done when CloudNativePG says completed (its phases are lower case). */
function backup(obj: Obj): Verdict {
  const phase = str(obj, 'status', 'phase');
  if (phase === 'completed') return ready('completed');
  if (phase === 'failed') return failed(`failed: ${str(obj, 'status', 'error') ?? 'no reason given'}`);
  return progressing(phase ? `phase "${phase}"` : 'waiting for the CloudNativePG operator');
}

export const CNPG: Family = [
  { group: 'postgresql.cnpg.io', kind: 'Cluster', judge: cluster, holdsData: true },
  { group: 'postgresql.cnpg.io', kind: 'Backup', judge: backup },
  // The Barman Cloud plugin's ObjectStore is configuration: it reports no readiness of its own.
  { group: 'barmancloud.cnpg.io', kind: 'ObjectStore', judge: () => ready('configured') },
];

/**
 * An observed Cluster: its name, the image it is set to run and the one it
 * runs, its storage, its current primary and since when, and where it was
 * recovered from as composed (the ObjectStore and server of its first
 * external cluster, the target time).
 */
export const cnpgClusterOf = accessor((obj) => {
  const origin = list(obj, 'spec', 'externalClusters')[0];
  return {
    ...strings(obj, ['metadata'], ['name', 'namespace']),
    imageName: str(obj, 'spec', 'imageName'),
    storageSize: str(obj, 'spec', 'storage', 'size'),
    storageClass: str(obj, 'spec', 'storage', 'storageClass'),
    ...strings(obj, ['status'], ['image', 'currentPrimary', 'currentPrimaryTimestamp', 'phase', 'phaseReason']),
    recovery: {
      store: str(origin, 'plugin', 'parameters', 'barmanObjectName'),
      server: str(origin, 'plugin', 'parameters', 'serverName'),
      targetTime: str(obj, 'spec', 'bootstrap', 'recovery', 'recoveryTarget', 'targetTime'),
    },
  };
});

/** An observed Backup: its name, and its phase (lower case), times, destination, error and the backup's ID in the store. */
export const cnpgBackupOf = accessor((obj) => ({
  name: str(obj, 'metadata', 'name'),
  cluster: str(obj, 'spec', 'cluster', 'name'),
  ...strings(obj, ['status'], ['phase', 'startedAt', 'stoppedAt', 'destinationPath', 'error', 'backupId']),
  majorVersion: num(obj, 'status', 'majorVersion'),
}));

/** CloudNativePG's phase of a Cluster it gave up on (an instance lost with its volumes, none alive). */
export const CNPG_UNRECOVERABLE = 'Cluster is unrecoverable and needs manual intervention';

/** The first point a server archived in an observed Barman Cloud ObjectStore can be recovered to, if it says. */
export function firstRecoverabilityPoint(store: Obj | undefined, server: string): string | undefined {
  return str(store, 'status', 'serverRecoveryWindow', server, 'firstRecoverabilityPoint');
}

/** A CloudNativePG Cluster as the function composes it (inside a provider-kubernetes Object). */
export type CnpgCluster = Composed<
  'Cluster',
  {
    instances: number;
    imageName: string;
    primaryUpdateStrategy: string;
    storage: { size: string };
    resources: unknown;
    affinity: { enablePodAntiAffinity: boolean; topologyKey: string };
    bootstrap: unknown;
    externalClusters?: unknown;
    plugins?: Array<{ name: string; isWALArchiver: boolean; parameters: Record<string, string> }>;
  }
>;

/** The Barman Cloud plugin's ObjectStore as the function composes it. */
export type CnpgObjectStore = Composed<
  'ObjectStore',
  {
    retentionPolicy: string;
    configuration: {
      destinationPath: string;
      endpointURL?: string;
      s3Credentials: Record<string, { name: string; key: string }>;
      wal: { compression: string };
      data: { compression: string };
    };
  }
>;
