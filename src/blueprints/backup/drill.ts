// A DatabaseBackup's restore drill: asked by a new spec.verification.requested
// (the Database sets it on its verify schedule; a user may too), run by a Job
// that downloads the stored dump and restores it into a scratch server inside
// its own pod (jobs.ts: verifyJob), and recorded in status.verification. Like
// the dump, the Job goes once its outcome is recorded, and with it the pod
// that held the scratch server: nothing of the drill outlives it.
import { jobOf } from '../../kinds/batch.js';
import { list, num, type Obj, record, str } from '../../kube.js';
import type { Desired, Requirement } from '../blueprint.js';
import { podLabels, verifyJob, verifyJobName } from '../lifecycle/jobs.js';
import { POD, podOfJob } from '../lifecycle/placements/backup-methods.js';
import type { BackupCall } from '../lifecycle/placements/placement.js';

/** The drill Job's composition-resource key. */
export const VERIFY_KEY = 'verify';

export type DrillResult = 'Running' | 'Passed' | 'Failed' | 'Incomplete';

/**
 * The exit codes that judge the backup itself, by step: the download's
 * checksum mismatch; the restore step's unreadable archive, failed restore and
 * missing tables (commands.ts). Any other end (no room to schedule, a
 * deadline, the store unreachable, memory) says nothing of the backup: the
 * drill is Incomplete.
 */
const VERDICTS: Record<string, number[]> = { download: [5], verify: [2, 4, 7] };

export interface Drill {
  resources: Desired[];
  requirements: Record<string, Requirement>;
  /** status.verification: the drill of this request as it stands, else the last one recorded. */
  status?: Obj;
  warnings: Array<{ reason: string; message: string }>;
}

/** What the drill's pod said: the counts, or the first step that failed, its last words, and whether they judge the backup. */
function drillOutcome(pod: Obj | undefined): { counts?: Obj; failed?: string; verdict?: boolean } {
  const statuses = [...list(pod, 'status', 'initContainerStatuses'), ...list(pod, 'status', 'containerStatuses')];
  for (const s of statuses) {
    const terminated = record(s, 'state', 'terminated') ?? record(s, 'lastState', 'terminated');
    if (!terminated) continue;
    const message = (str(terminated, 'message') ?? '').trim();
    const exitCode = Number(terminated['exitCode'] ?? 0);
    if (exitCode !== 0 || str(terminated, 'reason') === 'OOMKilled') {
      const said = message.split('\n').filter(Boolean).slice(-2).join(' ').slice(0, 400);
      const container = str(s, 'name') ?? '';
      const step = container === 'download' ? 'the download' : 'the restore into a scratch server';
      const oom = str(terminated, 'reason') === 'OOMKilled';
      return {
        failed: `${step} failed (${oom ? 'killed for memory' : `exit code ${exitCode}`})${said ? `: ${said}` : ''}`,
        verdict: !oom && (VERDICTS[container] ?? []).includes(exitCode),
      };
    }
    if (str(s, 'name') === 'verify') {
      try {
        return { counts: JSON.parse(message) as Obj };
      } catch {
        // Not the counts: said below as a drill that reported nothing.
      }
    }
  }
  return {};
}

/** The drill of this call, from the request, what was recorded, the backup's phase and its Job as observed. */
export function planDrill(call: BackupCall, phase: string | undefined, location: string | undefined): Drill {
  const { input, target, previous } = call;
  const out: Drill = { resources: [], requirements: {}, warnings: [] };
  const recorded = record(previous, 'verification');
  const request = input.spec.verification?.requested;
  if (!request || str(recorded, 'request') === request) {
    // Asked nothing new. A drill recorded as running goes on; one that ended stays as recorded.
    if (!request || str(recorded, 'result') !== 'Running') {
      if (recorded) out.status = recorded;
      return out;
    }
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
  if (phase !== 'Completed' || !location) return out;
  const startedAt = str(recorded, 'request') === request ? str(recorded, 'startedAt') : undefined;
  const name = verifyJobName(input.owner, request);
  const observedJob = input.observed.get(VERIFY_KEY);
  const job = jobOf(observedJob);
  // A drill Job of an earlier request is still there: it goes first (Crossplane deletes what is left out), and
  // this request's Job is made once it has.
  const observedName = str(observedJob, 'metadata', 'name');
  if (observedName && observedName !== name) {
    out.status = { request, result: 'Running', startedAt: startedAt ?? input.now.toISOString() };
    return out;
  }
  const since = startedAt ?? job?.startTime ?? input.now.toISOString();
  const running = { request, result: 'Running', startedAt: since };
  // The drill's pod is read whenever its Job exists: the same requirement on every call of a reconcile, whatever
  // its answer decides (Crossplane asks again until the requirements settle).
  out.requirements[POD] = {
    apiVersion: 'v1',
    kind: 'Pod',
    matchLabels: podLabels(input.owner),
    namespace: input.owner.namespace,
  };
  const compose = () => {
    const size = num(previous, 'sizeBytes');
    out.resources.push({ key: VERIFY_KEY, object: verifyJob(input.owner, target, location, request, size) });
    out.status = running;
    return out;
  };
  // Ended, but its pod not read yet (the first call of a reconcile): judged on the next call.
  if ((job?.complete || job?.failed) && input.required.get(POD) === undefined) return compose();
  if (job?.complete || job?.failed) {
    const outcome = drillOutcome(podOfJob(input, name));
    const ended = job.completionTime ?? (job.complete ?? job.failed)?.lastTransitionTime ?? input.now.toISOString();
    // Timed by the Job's own clock (the API server's), start to end.
    const seconds = Math.max(0, Math.round((Date.parse(ended) - Date.parse(job.startTime ?? since)) / 1000));
    const tables = num(outcome.counts, 'tables');
    const rows = num(outcome.counts, 'rows');
    if (job.complete && tables !== undefined && rows !== undefined) {
      // Recorded: the Job (and the scratch server in its pod) goes.
      out.status = {
        request,
        result: 'Passed',
        startedAt: since,
        verifiedAt: ended,
        tables,
        rows,
        durationSeconds: seconds,
      };
      return out;
    }
    const reason =
      outcome.failed ??
      (job.failed
        ? `the drill Job failed: ${job.failed.message ?? job.failed.reason ?? 'no reason given'}`
        : 'the drill ended without its counts');
    // Failed is a verdict on the backup; anything else stopped the drill before it could give one.
    const result: DrillResult = outcome.verdict ? 'Failed' : 'Incomplete';
    out.status = { request, result, startedAt: since, verifiedAt: ended, durationSeconds: seconds, reason };
    out.warnings.push({
      reason: result === 'Failed' ? 'VerificationFailed' : 'VerificationIncomplete',
      message: `restore drill of DatabaseBackup ${input.owner.name}: ${reason}`,
    });
    return out;
  }
  return compose();
}
