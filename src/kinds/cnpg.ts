// CloudNativePG: a Cluster is healthy by its phase (instance counts rise before recovery ends);
// its Backups and the Barman Cloud plugin's ObjectStore.
import { str, type Obj } from '../kube.js';
import type { Family } from './kind.js';
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
