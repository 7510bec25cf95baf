// A verdict on one observed object: where it stands, and in a few words why.
// The state is what code decides on; the detail is what the user reads.

/**
 * - absent: not created yet.
 * - progressing: coming up, or coming back, toward what is asked.
 * - updating: applying a changed spec (a rollout, a provider modifying).
 * - stuck: it stopped moving and says so (a rollout past its deadline).
 * - failed: it reports a failure.
 * - ready: doing its job.
 */
export type VerdictState = 'absent' | 'progressing' | 'updating' | 'stuck' | 'failed' | 'ready';

export interface Verdict {
  state: VerdictState;
  ready: boolean;
  /** What the object is doing, in a few words: "3/42 replicas available". */
  detail: string;
}

export const ready = (detail = 'ready'): Verdict => ({ state: 'ready', ready: true, detail });
export const progressing = (detail: string): Verdict => ({ state: 'progressing', ready: false, detail });
export const updating = (detail: string): Verdict => ({ state: 'updating', ready: false, detail });
export const stuck = (detail: string): Verdict => ({ state: 'stuck', ready: false, detail });
export const failed = (detail: string): Verdict => ({ state: 'failed', ready: false, detail });
export const NOT_CREATED: Verdict = { state: 'absent', ready: false, detail: 'not created yet' };
