// What runs, as opposed to what the spec asks for: the engine version the
// live instance runs and the storage it has, and where writes and reads go,
// read from what its controller or provider reports (each placement reads its
// own: lifecycle/placements/), never from the spec alone.
import type { ExternalFacts } from '../../facts.js';
import { str, type Obj } from '../../kube.js';
import { compareVersions, majorVersion } from '../lifecycle/database.js';
import type { DatabaseCall, GrowthPlan, Placement } from '../lifecycle/placements/placement.js';

/** status.version: asked for, running, and pending while they differ. */
export function versionStatus(
  input: DatabaseCall,
  placement: Placement,
  facts: ExternalFacts | undefined,
  requested = input.spec.version,
): Obj {
  const running = placement.runningVersion(input, facts);
  const major = majorVersion(input.spec.engine, running);
  const pending = major !== undefined && compareVersions(requested, major) !== 0;
  return { requested, ...(running ? { running } : {}), ...(pending ? { pending: requested } : {}) };
}

/** A sentence for a version asked for that does not run yet, with where it stands. */
export function pendingVersion(input: DatabaseCall, placement: Placement, version: Obj): string | undefined {
  if (!version['pending'] || !version['running']) return undefined;
  return placement.pendingVersion(
    input,
    `${input.spec.engine} ${String(version['running'])}`,
    String(version['pending']),
  );
}

/** status.storage: what was asked, what the instance has, and how far the place may grow it by itself. */
export function storageStatus(input: DatabaseCall, placement: Placement, growth: GrowthPlan | undefined): Obj {
  const { requestedGB, capacityGB, maxGB, message, ...use } = placement.storage(input, growth);
  return {
    requestedGB: requestedGB ?? input.spec.storageGB,
    ...(capacityGB !== undefined ? { capacityGB } : {}),
    ...(maxGB !== undefined ? { maxGB } : {}),
    ...(message ? { message } : {}),
    ...use,
  };
}

/**
 * Where writes and reads go now: status.primary (the place's current primary,
 * else the instance), status.lastFailover (when the place last moved it) and
 * status.readEndpoint; and a Failover notice when the primary of the same
 * instance moved since the last call.
 */
export function rolesStatus(
  input: DatabaseCall,
  placement: Placement,
  instance: string | undefined,
  endpoint: string | undefined,
  readOnly: { host: string; port: number } | undefined,
): { status: Obj; failover?: string } {
  const out: Obj = {};
  const moves = placement.primary(input.observed);
  const primary = moves?.name ?? instance;
  if (primary) out['primary'] = primary;
  // A failover is a change of primary seen happen, not the first election.
  const since = moves?.since;
  const read = readOnly ? `${readOnly.host}:${readOnly.port}` : endpoint;
  if (read) out['readEndpoint'] = read;
  const before = str(input.xr, 'status', 'primary');
  const sameInstance = str(input.xr, 'status', 'instance') === instance;
  const failover =
    moves && before && primary && before !== primary && sameInstance
      ? `the primary moved from ${before} to ${primary}${since ? ` at ${since}` : ''}`
      : undefined;
  const last = failover ? (since ?? input.now.toISOString()) : str(input.xr, 'status', 'lastFailover');
  if (last) out['lastFailover'] = last;
  return { status: out, ...(failover ? { failover } : {}) };
}
