// Kinds of this platform's own API that a blueprint composes: a Database
// composes its scheduled DatabaseBackups (as independent resources: a backup
// in flight or failed does not hold up the Database's readiness; its
// BackupHealthy condition tells how backups go).
import { str } from '../kube.js';
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
