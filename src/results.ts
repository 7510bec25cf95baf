// Builders for what a response carries to the user, in the manner of
// function-sdk-go's response package: results (events, Fatal) and custom
// conditions, always for the composite and its claim.
import { type Condition, type Result, Severity, Status, Target } from '@crossplane-org/function-sdk-typescript';

const result = (severity: Severity, reason: string, message: string): Result => ({
  severity,
  reason,
  message,
  target: Target.TARGET_COMPOSITE_AND_CLAIM,
});

/** Ends the call: Crossplane applies nothing and deletes nothing. */
export const fatal = (reason: string, message: string): Result => result(Severity.SEVERITY_FATAL, reason, message);
/** A Normal event. */
export const normal = (reason: string, message: string): Result => result(Severity.SEVERITY_NORMAL, reason, message);
/** A Warning event. */
export const warning = (reason: string, message: string): Result => result(Severity.SEVERITY_WARNING, reason, message);

/** A custom condition on the composite and its claim. */
export function conditionOf(type: string, ok: boolean, reason: string, message: string): Condition {
  return {
    type,
    status: ok ? Status.STATUS_CONDITION_TRUE : Status.STATUS_CONDITION_FALSE,
    reason,
    message,
    target: Target.TARGET_COMPOSITE_AND_CLAIM,
  };
}
