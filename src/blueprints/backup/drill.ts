// A DatabaseBackup's restore drill: asked by a new spec.verification.requested
// (the Database sets it on its verify schedule; a user may too), run by its
// placement's backup method once the backup is Completed (a dump restored
// into a scratch server in a Job's pod; a CloudNativePG backup recovered into
// a scratch Cluster and counted), and recorded in status.verification. What a
// drill composes goes once its outcome is recorded: nothing of it outlives it.
import { record, str } from '../../kube.js';
import { drillEnded } from '../lifecycle/placements/backup-methods.js';
import type { BackupCall, Drill } from '../lifecycle/placements/placement.js';

/** The drill of this call, from the request, what was recorded and the backup's recorded phase. */
export function planDrill(call: BackupCall): Drill {
  const { input, target, previous } = call;
  const phase = str(previous, 'phase');
  const out: Drill = { resources: [], requirements: {}, warnings: [] };
  const recorded = record(previous, 'verification');
  const request = input.spec.verification?.requested;
  if (!request && str(recorded, 'result') === 'Running') {
    // The request withdrawn mid-drill: nothing composes what the drill made now, so it goes; the record says so
    // (Incomplete: nothing was judged), without a warning, as someone meant it.
    const why =
      'spec.verification.requested was removed: the drill stopped, and what it made was removed (set a new value to drill again)';
    const since = str(recorded, 'startedAt') ?? input.now.toISOString();
    return { ...drillEnded(input, str(recorded, 'request') ?? '', since, 'Incomplete', why), warnings: [] };
  }
  if (!request || str(recorded, 'request') === request) {
    // Asked nothing new. A drill recorded as running goes on; one that ended stays as recorded.
    if (!request || str(recorded, 'result') !== 'Running') {
      if (recorded) out.status = recorded;
      return out;
    }
  }
  const method = target.placement.backup;
  if (!method.drill) {
    // Said, not failed: nothing is known of the backup.
    out.status = {
      request,
      reason: `not verified: a ${method.name} backup has no restore drill`,
    };
    return out;
  }
  if (phase === 'Failed') {
    out.status = {
      request,
      result: 'Failed',
      verifiedAt: input.now.toISOString(),
      reason: 'the backup itself failed: there is nothing to restore',
    };
    return out;
  }
  // Not Completed yet: the drill waits for the backup.
  if (phase !== 'Completed') return out;
  return method.drill(call, request, str(recorded, 'request') === request ? str(recorded, 'startedAt') : undefined);
}
