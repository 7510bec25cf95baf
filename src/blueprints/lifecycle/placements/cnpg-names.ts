// What the objects of a highly available Database (CloudNativePG) are called,
// for the placement (cnpg.ts) and the drills of its backups (cnpg-drill.ts).
import { baseName, type DatabaseInput } from '../database.js';
import { dnsLabel } from '../../../names.js';

export const CNPG_KEYS = {
  cluster: 'cnpg-cluster',
  /** The dump volume of an earlier version's highly available Database: kept while it exists, never made. */
  backupVolume: 'backup-volume',
  objectStore: 'cnpg-object-store',
  /** A DatabaseBackup's CloudNativePG Backup. */
  backup: 'cnpg-backup',
} as const;

/** The Barman Cloud plugin: where CloudNativePG archives WAL and writes base backups. */
export const CNPG_PLUGIN = 'barman-cloud.cloudnative-pg.io';
/** The name a recovering Cluster gives the cluster it recovers from (its external cluster). */
export const RECOVERY_SOURCE = 'origin';

/** The Barman Cloud plugin's ObjectStore of a Database: where its clusters archive, whichever serves. */
export function objectStoreName(input: Pick<DatabaseInput, 'owner'>): string {
  return dnsLabel(baseName(input.owner), 'store');
}
