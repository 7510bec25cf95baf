// The placements' backup methods, and how a DatabaseBackup's outcome is said
// whatever took it; and the dump: the backup method of a Database whose server
// runs in a pod of ours (a StatefulSet), a Job per attempt that dumps the Database and ships the dump
// to its object store (jobs.ts), retried with twice the memory when killed
// for it, three times at most. A finished dump's outcome is kept in the
// DatabaseBackup's status: the Job goes once it is recorded.
import { jobOf } from '../../../kinds/batch.js';
import { num, str, type Obj } from '../../../kube.js';
import type { BlueprintInput, Requirement, Summary } from '../../blueprint.js';
import type { DatabaseBackupSpec } from '../../../generated/schemas.js';
import {
  attemptKey,
  countJob,
  describeFailure,
  dumpJob,
  dumpLocation,
  endedContainers,
  JOB_NAME_LABEL,
  jobName,
  lastWords,
  MAX_ATTEMPTS,
  memoryFor,
  podLabels,
  podOutcome,
  type ScratchServer,
  verifyJob,
  verifyJobName,
} from '../jobs.js';
import type { BackupCall, BackupMethod, Drill, DrillResult } from './placement.js';

export type BackupPhase = 'Pending' | 'Running' | 'Completed' | 'Failed';

/** The phases after which a backup's outcome is its record. */
export const TERMINAL = new Set(['Completed', 'Failed']);

/**
 * The required resource that is the pods of a backup's Jobs: every
 * attempt's, by labels that do not change between attempts. Crossplane asks
 * again within one reconcile while the requirements change, so they must not
 * depend on what their own answer decides (the attempt).
 */
export const POD = 'pod';

/** A DatabaseBackup's answer: ready once Completed. */
export function backupSummary(
  phase: BackupPhase,
  message: string,
  fields: Obj,
  warnings: Summary['warnings'] = [],
): Summary {
  const ready = phase === 'Completed';
  return {
    ready,
    message,
    reason: phase === 'Failed' ? 'BackupFailed' : phase,
    status: { phase, ...fields },
    warnings,
  };
}

/**
 * What a DatabaseBackup composes when its backup is one object (a
 * CloudNativePG Backup, an RDS Snapshot): named as the DatabaseBackup, in its
 * namespace, under `key`.
 */
export function oneObject(
  { input }: BackupCall,
  key: string,
  apiVersion: string,
  kind: string,
  spec: Obj,
): ReturnType<BackupMethod['take']> {
  const object = { apiVersion, kind, metadata: { name: input.owner.name, namespace: input.owner.namespace }, spec };
  return { resources: [{ key, object }], requirements: {} };
}

/**
 * The instance a backup is taken of: as it was composed at `path` of the
 * object under `key` (it stays so, whichever instance serves the Database
 * later), else the one that serves now, else `first`.
 */
export function backedUp({ input, target }: BackupCall, key: string, path: string[], first: string): string {
  return str(input.observed.get(key), ...path) ?? target.instance ?? first;
}

/** The pod of one attempt's Job, among the backup's pods. */
function podOf(input: BlueprintInput<DatabaseBackupSpec>, attempt: number): Obj | undefined {
  return podOfJob(input, jobName(input.owner, attempt));
}

/** The pod of the backup's Job `job` (an attempt's, a drill's), among the backup's pods. */
export function podOfJob(input: BlueprintInput<DatabaseBackupSpec>, job: string): Obj | undefined {
  return input.required.get(POD)?.find((p) => str(p, 'metadata', 'labels', JOB_NAME_LABEL) === job);
}

/** The dump attempt now: the newest one composed, the next after one killed for memory. */
export function currentAttempt(input: BlueprintInput<DatabaseBackupSpec>, previous: Obj): number {
  let attempt = Math.max(1, num(previous, 'attempts') ?? 1);
  while (input.observed.has(attemptKey(attempt + 1))) attempt++;
  const job = jobOf(input.observed.get(attemptKey(attempt)));
  if (job?.failed && attempt < MAX_ATTEMPTS) {
    const failed = podOutcome(podOf(input, attempt)).failed;
    if (failed?.reason === 'OOMKilled') return attempt + 1;
  }
  return attempt;
}

function take({ input, target, previous, attempt }: BackupCall): ReturnType<BackupMethod['take']> {
  const owner = input.owner;
  // Recorded as finished: the Job has done its part.
  if (TERMINAL.has(str(previous, 'phase') ?? '')) return { resources: [], requirements: {} };
  return {
    resources: [{ key: attemptKey(attempt), object: dumpJob(owner, target, attempt) }],
    requirements: {
      [POD]: { apiVersion: 'v1', kind: 'Pod', matchLabels: podLabels(owner), namespace: owner.namespace },
    },
  };
}

function read({ input, target, previous, attempt }: BackupCall, base: Obj): Summary {
  const phase = str(previous, 'phase');
  if (phase && TERMINAL.has(phase)) {
    // What was recorded stays: the composite's own status is the record.
    const { ready: _ready, message, ...kept } = previous;
    return backupSummary(phase as BackupPhase, typeof message === 'string' ? message : phase, { ...kept, ...base });
  }
  const job = jobOf(input.observed.get(attemptKey(attempt)));
  const location = dumpLocation(input.owner, target).url;
  const fields = { ...base, attempts: attempt, location, restorable: false };
  if (!job)
    return backupSummary(
      'Pending',
      `starting the dump of Database ${input.spec.databaseRef.name} (attempt ${attempt} of ${MAX_ATTEMPTS}, ${memoryFor(attempt)})`,
      fields,
    );
  const startedAt = job.startTime;
  const outcome = podOutcome(podOf(input, attempt));
  if (job.complete) {
    const size = outcome.report?.sizeBytes;
    return backupSummary(
      'Completed',
      `dumped Database ${input.spec.databaseRef.name} to ${location}${size !== undefined ? ` (${size} bytes)` : ''}`,
      {
        ...fields,
        ...(startedAt ? { startedAt } : {}),
        completedAt: job.completionTime ?? job.complete.lastTransitionTime ?? startedAt,
        ...(size !== undefined ? { sizeBytes: size } : {}),
        restorable: true,
      },
    );
  }
  if (job.failed) {
    const why = outcome.failed
      ? describeFailure(outcome.failed, memoryFor(attempt))
      : `the Job failed: ${job.failed.message ?? job.failed.reason ?? 'no reason given'}`;
    const message = `attempt ${attempt} of ${MAX_ATTEMPTS}: ${why}`;
    return backupSummary(
      'Failed',
      message,
      {
        ...fields,
        ...(startedAt ? { startedAt } : {}),
        completedAt: job.failed.lastTransitionTime ?? startedAt,
        failureReason: why,
      },
      [{ reason: 'BackupFailed', message }],
    );
  }
  const retry =
    attempt > 1
      ? ` (attempt ${attempt} of ${MAX_ATTEMPTS}, with ${memoryFor(attempt)} after the last was killed for memory)`
      : '';
  // The Job to look at, and its pod as the kubelet reports it (on fake nodes it runs forever: nothing runs in it).
  const running = jobName(input.owner, attempt);
  const pod = podOf(input, attempt);
  const podName = str(pod, 'metadata', 'name');
  const watch = `; Job ${running} runs it${podName ? ` (pod ${podName}: ${str(pod, 'status', 'phase') ?? 'Pending'})` : ''}, its logs: kubectl logs -n ${input.owner.namespace} job/${running} --all-containers`;
  return backupSummary('Running', `dumping Database ${input.spec.databaseRef.name} to ${location}${retry}${watch}`, {
    ...fields,
    ...(startedAt ? { startedAt } : {}),
  });
}

/** A drill's Job's composition-resource key: the dump's drill, or the count of a scratch instance. */
export const VERIFY_KEY = 'verify';

/** How long a drill may run (its scratch instance made, or an earlier one gone, and counted) before it gives up. */
const DRILL_DEADLINE_MS = 6 * 3_600_000;

/** Whether a drill started at `since` has run past its deadline at `now` (an unreadable start: never). */
export function drillOverdue(now: Date, since: string): boolean {
  return now.getTime() - Date.parse(since) > DRILL_DEADLINE_MS;
}

/** A drill's end before its count (a refusal, a deadline): its record, a warning, and nothing composed. */
export function drillEnded(
  input: BlueprintInput<DatabaseBackupSpec>,
  request: string,
  since: string,
  result: DrillResult,
  reason: string,
): Drill {
  const verifiedAt = input.now.toISOString();
  const durationSeconds = Math.max(0, Math.round((Date.parse(verifiedAt) - Date.parse(since)) / 1000));
  return {
    resources: [],
    requirements: {},
    status: { request, result, startedAt: since, verifiedAt, durationSeconds, reason },
    warnings: [
      {
        reason: result === 'Failed' ? 'VerificationFailed' : 'VerificationIncomplete',
        message: `restore drill of DatabaseBackup ${input.owner.name}: ${reason}`,
      },
    ],
  };
}

/**
 * What an earlier request's drill made that is still there (its scratch
 * instance under `key`, or its count Job), named otherwise than this
 * request's `scratch` and `job`: it goes first (the guard lets a scratch go).
 */
export function earlierDrill(
  input: BlueprintInput<DatabaseBackupSpec>,
  key: string,
  scratch: string,
  job: string,
): string | undefined {
  return [
    str(input.observed.get(key), 'metadata', 'name'),
    str(input.observed.get(VERIFY_KEY), 'metadata', 'name'),
  ].find((n) => n !== undefined && n !== scratch && n !== job);
}

/** The backup's pods, read whenever a drill Job exists: the same requirement on every call of a reconcile. */
const drillPods = (input: BlueprintInput<DatabaseBackupSpec>): Requirement => ({
  apiVersion: 'v1',
  kind: 'Pod',
  matchLabels: podLabels(input.owner),
  namespace: input.owner.namespace,
});

/**
 * What a drill Job's pod said: the counts its `verify` container wrote, or the
 * first step that failed, its last words, and whether they judge the backup
 * (`verdicts`: the exit codes, by container, that do).
 */
function drillOutcome(
  pod: Obj | undefined,
  verdicts: Record<string, number[]>,
  steps: Record<string, string>,
): { counts?: Obj; failed?: string; verdict?: boolean } {
  for (const e of endedContainers(pod)) {
    if (e.bad) {
      const said = lastWords(e.message, 400);
      return {
        failed: `${steps[e.container] ?? e.container} failed (${e.oom ? 'killed for memory' : `exit code ${e.exitCode}`})${said ? `: ${said}` : ''}`,
        verdict: !e.oom && (verdicts[e.container] ?? []).includes(e.exitCode),
      };
    }
    if (e.container !== 'verify') continue;
    try {
      return { counts: JSON.parse(e.message) as Obj };
    } catch {
      // Not the counts: said below as a drill that reported nothing.
    }
  }
  return {};
}

/**
 * A drill whose Job ran: `job` as observed, `composed` what it composes while
 * it runs. Until the Job ends, that, Running; ended and its pod read, the
 * record (Passed with the counts, else Failed or Incomplete by `verdicts`),
 * and nothing composed: the Job goes, and whatever the drill made with it.
 */
export function judgeDrillJob(
  call: BackupCall,
  request: string,
  since: string,
  jobName: string,
  composed: Drill['resources'],
  verdicts: Record<string, number[]>,
  steps: Record<string, string>,
  timed: 'job' | 'drill',
): Drill {
  const { input } = call;
  const job = jobOf(input.observed.get(VERIFY_KEY));
  const out: Drill = { resources: [], requirements: { [POD]: drillPods(input) }, warnings: [] };
  const running = { request, result: 'Running', startedAt: since };
  // Ended, but its pod not read yet (the first call of a reconcile): judged on the next call.
  if (!(job?.complete || job?.failed) || input.required.get(POD) === undefined) {
    out.resources = composed;
    out.status = running;
    return out;
  }
  const outcome = drillOutcome(podOfJob(input, jobName), verdicts, steps);
  const ended = job.completionTime ?? (job.complete ?? job.failed)?.lastTransitionTime ?? input.now.toISOString();
  // Timed by the API server's clock to the Job's end: from the Job's start, or the drill's (a scratch instance first).
  const from = timed === 'job' ? (job.startTime ?? since) : since;
  const seconds = Math.max(0, Math.round((Date.parse(ended) - Date.parse(from)) / 1000));
  const tables = num(outcome.counts, 'tables');
  const rows = num(outcome.counts, 'rows');
  if (job.complete && tables !== undefined && rows !== undefined) {
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

/** A scratch instance (a CloudNativePG Cluster, an RDS instance) made for a drill, as its placement reads it. */
export interface Scratch {
  /** How the record names it: "scratch Cluster orders-x-drill-1". */
  what: string;
  /** Whether it serves, so that it can be counted. */
  serving: boolean;
  /** What serving is called ("healthy", "available"), and what it is instead, said when six hours pass waiting. */
  servingWord: string;
  instead: string;
  /** What the drill composes while the scratch instance stands (the instance, and what goes with it). */
  composed: Drill['resources'];
  /** Where the count reaches it. */
  server: ScratchServer;
  /** Its count's step, as a failure names it. */
  countStep: string;
}

/**
 * A scratch instance's drill once it is asked for: composed and waited for
 * until it serves, then counted by a Job (judgeDrillJob); six hours waiting,
 * or serving six hours and nothing counted, end it Incomplete.
 */
export function countScratch(
  call: BackupCall,
  request: string,
  since: string,
  jobName: string,
  scratch: Scratch,
): Drill {
  const { input, target } = call;
  const overdue = drillOverdue(input.now, since);
  // Counted once it serves; a count under way goes on whatever the scratch instance says meanwhile.
  const counting = str(input.observed.get(VERIFY_KEY), 'metadata', 'name') === jobName;
  if (!scratch.serving && !counting) {
    if (overdue)
      return drillEnded(
        input,
        request,
        since,
        'Incomplete',
        `${scratch.what} was not ${scratch.servingWord} after 6 hours (${scratch.instead}): nothing was judged`,
      );
    return {
      resources: scratch.composed,
      requirements: {},
      warnings: [],
      status: { request, result: 'Running', startedAt: since },
    };
  }
  // Serving for six hours, or a count under way as long, and nothing counted: the count's Job cannot be made or run.
  const count = jobOf(input.observed.get(VERIFY_KEY));
  if (overdue && !count?.complete && !count?.failed)
    return drillEnded(
      input,
      request,
      since,
      'Incomplete',
      `${scratch.what} was not counted within 6 hours: nothing was judged`,
    );
  const job = { key: VERIFY_KEY, object: countJob(input.owner, target, scratch.server, request) };
  return judgeDrillJob(
    call,
    request,
    since,
    jobName,
    [...scratch.composed, job],
    {},
    { verify: scratch.countStep },
    'drill',
  );
}

/**
 * The exit codes of the dump's drill that judge the backup itself, by step:
 * the download's checksum mismatch; the restore step's unreadable archive,
 * failed restore and missing tables (commands.ts). Any other end (no room to
 * schedule, a deadline, the store unreachable, memory) says nothing of the
 * backup: the drill is Incomplete.
 */
const DUMP_VERDICTS: Record<string, number[]> = { download: [5], verify: [2, 4, 7] };
const DUMP_STEPS = { download: 'the download', verify: 'the restore into a scratch server' };

/**
 * A dump's drill: a Job that downloads the stored dump and restores it into
 * a scratch server inside its own pod (jobs.ts: verifyJob), reaching no live
 * server; the pod's end is the scratch server's.
 */
function dumpDrill(call: BackupCall, request: string, startedAt: string | undefined): Drill {
  const { input, target, previous } = call;
  const location = str(previous, 'location');
  if (!location) return { resources: [], requirements: {}, warnings: [] };
  const name = verifyJobName(input.owner, request);
  const observedJob = input.observed.get(VERIFY_KEY);
  // A drill Job of an earlier request is still there: it goes first (Crossplane deletes what is left out), and
  // this request's Job is made once it has.
  const observedName = str(observedJob, 'metadata', 'name');
  if (observedName && observedName !== name)
    return {
      resources: [],
      requirements: {},
      warnings: [],
      status: { request, result: 'Running', startedAt: startedAt ?? input.now.toISOString() },
    };
  const since = startedAt ?? jobOf(observedJob)?.startTime ?? input.now.toISOString();
  const job = verifyJob(input.owner, target, location, request, num(previous, 'sizeBytes'));
  return judgeDrillJob(
    call,
    request,
    since,
    name,
    [{ key: VERIFY_KEY, object: job }],
    DUMP_VERDICTS,
    DUMP_STEPS,
    'job',
  );
}

/**
 * The dump: a Job per attempt to the Database's object store, restored by a
 * Job that loads it into an empty server; `restores` says so for a refusal.
 */
export const dumpBackups = (restores: string): BackupMethod => ({
  name: 'dump',
  restores,
  accepts: (location) => location.startsWith('s3://'),
  needsObjectStore: true,
  take,
  read,
  reads: ({ input, previous, attempt }) =>
    !TERMINAL.has(str(previous, 'phase') ?? '') && str(podOf(input, attempt), 'status', 'phase') === 'Running',
  drill: dumpDrill,
});
