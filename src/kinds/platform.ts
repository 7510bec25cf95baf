// Kinds of this platform's own API that a blueprint composes: a Database
// composes its scheduled DatabaseBackups (as independent resources: a backup
// in flight or failed does not hold up the Database's readiness; its
// BackupHealthy condition tells how backups go).
import { type Composed, num, type Obj, record, str } from '../kube.js';
import type { Family } from './kind.js';
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

/** What the function reads of an observed DatabaseBackup: what it backs up, and how it went. */
export interface DatabaseBackupView {
  name?: string;
  database?: string;
  pinned: boolean;
  phase?: string;
  method?: string;
  engine?: string;
  version?: string;
  location?: string;
  completedAt?: string;
  sizeBytes?: number;
  restorable: boolean;
  failureReason?: string;
  message?: string;
}

/** An observed DatabaseBackup, read defensively; undefined when there is none. */
export function databaseBackupOf(obj: Obj | undefined): DatabaseBackupView | undefined {
  if (!obj) return undefined;
  return {
    name: str(obj, 'metadata', 'name'),
    database: str(obj, 'spec', 'databaseRef', 'name'),
    pinned: record(obj, 'spec')?.['pinned'] === true,
    phase: str(obj, 'status', 'phase'),
    method: str(obj, 'status', 'method'),
    engine: str(obj, 'status', 'engine'),
    version: str(obj, 'status', 'version'),
    location: str(obj, 'status', 'location'),
    completedAt: str(obj, 'status', 'completedAt'),
    sizeBytes: num(obj, 'status', 'sizeBytes'),
    restorable: record(obj, 'status')?.['restorable'] === true,
    failureReason: str(obj, 'status', 'failureReason'),
    message: str(obj, 'status', 'message'),
  };
}

/** A DatabaseBackup as a Database composes it (scheduled, or before an upgrade). */
export type DatabaseBackup = Composed<'DatabaseBackup', { databaseRef: { name: string }; pinned?: boolean }>;
