// What the caller says it can do. Crossplane v2.2 lists its capabilities in
// every request (RunFunctionRequest.meta.capabilities); an older Crossplane
// sends none, and then nothing can be told from their absence. The function
// uses required resources (a Database reads its backups, restores and
// Secrets through them) and custom conditions (BackupHealthy and the others);
// a caller that lists capabilities without one of these would leave a
// Database waiting for answers that never come, or drop its conditions, so
// the answer says so instead of leaving the user to guess.
import { Capability, type RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';

/** Whether the caller says it lacks `wanted`: only a caller that lists its capabilities can say so. */
export function callerLacks(req: RunFunctionRequest, wanted: Capability): boolean {
  const listed = req.meta?.capabilities ?? [];
  return listed.includes(Capability.CAPABILITY_CAPABILITIES) && !listed.includes(wanted);
}

/** What a missing capability costs, in the words a warning uses. */
export const MISSING: Partial<Record<Capability, string>> = {
  [Capability.CAPABILITY_REQUIRED_RESOURCES]:
    'the caller does not answer required resources (its request lists its capabilities without them): what this composite reads from the cluster is never read, and it waits for it; Crossplane answers them since v1.15',
  [Capability.CAPABILITY_CONDITIONS]:
    'the caller does not take custom conditions (its request lists its capabilities without them): conditions such as BackupHealthy are not shown; status.ready and status.message say the same; Crossplane takes them since v1.17',
};
