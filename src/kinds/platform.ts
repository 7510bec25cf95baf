// Kinds of this platform's own API that a blueprint composes: a Database
// composes its scheduled DatabaseBackups (as independent resources: a backup
// in flight or failed does not hold up the Database's readiness; its
// BackupHealthy condition tells how backups go).
import { type Composed, numbers, record, str, strings } from '../kube.js';
import { accessor, type Family } from './kind.js';
import { failed, progressing, ready } from './verdict.js';

export const PLATFORM: Family = [
  {
    group: 'example.com',
    kind: 'DatabaseBackup',
    judge: (obj) => {
      const phase = str(obj, 'status', 'phase');
      if (phase === 'Completed') return ready('completed');
      if (phase === 'Failed') return failed(str(obj, 'status', 'failureReason') ?? 'failed');
      return progressing(phase?.toLowerCase() ?? 'pending');
    },
    // It stands for a stored backup; only retention may let one go (src/safety.ts).
    holdsData: true,
  },
];

/**
 * An observed DatabaseBackup: what it backs up and whether it is pinned, and
 * how it went (phase, method, engine and version, location, completion,
 * size, whether it can be restored, why it failed).
 */
export const databaseBackupOf = accessor((obj) => ({
  name: str(obj, 'metadata', 'name'),
  database: str(obj, 'spec', 'databaseRef', 'name'),
  pinned: record(obj, 'spec')?.['pinned'] === true,
  ...strings(obj, ['status'], ['phase', 'method', 'engine', 'version', 'location', 'completedAt', 'instance']),
  ...strings(obj, ['status'], ['failureReason', 'message']),
  ...numbers(obj, ['status'], ['sizeBytes']),
  restorable: record(obj, 'status')?.['restorable'] === true,
}));
export type DatabaseBackupView = NonNullable<ReturnType<typeof databaseBackupOf>>;

/** A DatabaseBackup as a Database composes it (scheduled, or before an upgrade). */
export type DatabaseBackup = Composed<'DatabaseBackup', { databaseRef: { name: string }; pinned?: boolean }>;

/** An observed DatabaseRestore: which Database it restores, what it asks (its spec as written), and how far it is. */
export const databaseRestoreOf = accessor((obj) => ({
  ...strings(obj, ['metadata'], ['name', 'uid', 'creationTimestamp', 'deletionTimestamp']),
  database: str(obj, 'spec', 'databaseRef', 'name'),
  spec: record(obj, 'spec') ?? {},
  phase: str(obj, 'status', 'phase'),
}));
