// What runs, as opposed to what the spec asks for: the engine version an
// instance runs and the storage it has, read from what its controller or
// provider reports (RDS's engineVersionActual and allocated storage,
// CloudNativePG's image, the image of a finished StatefulSet rollout),
// never from the spec alone.
import type { ExternalFacts } from '../../facts.js';
import { generationObserved } from '../../kinds/conditions.js';
import { list, num, str, type Obj } from '../../kube.js';
import { wholeGigabytes } from '../../quantity.js';
import { usesCnpg } from './cluster.js';
import { compareVersions, type DatabaseInput, majorVersion, type ResolvedSpec } from './common.js';
import { INSTANCE_KEYS, liveInstance } from './instances.js';
import { tagOf } from './observed.js';

/** The engine version the live instance runs, if what runs says. */
export function runningEngineVersion(
  input: DatabaseInput,
  spec: ResolvedSpec,
  facts: ExternalFacts | undefined,
): string | undefined {
  const { observed } = input;
  if (spec.placement === 'aws')
    return (
      str(liveInstance(observed, INSTANCE_KEYS.rds), 'status', 'atProvider', 'engineVersionActual') ??
      facts?.aws?.instance?.engineVersion
    );
  if (usesCnpg(spec)) return tagOf(str(liveInstance(observed, INSTANCE_KEYS.cnpg), 'status', 'image'));
  // A StatefulSet runs its template's image once its rollout is done: every pod on the update revision.
  const sts = liveInstance(observed, INSTANCE_KEYS.statefulset);
  const done =
    sts !== undefined &&
    generationObserved(sts) &&
    str(sts, 'status', 'currentRevision') !== undefined &&
    str(sts, 'status', 'currentRevision') === str(sts, 'status', 'updateRevision');
  if (!done) return undefined;
  const db = list(sts, 'spec', 'template', 'spec', 'containers').find((c) => str(c, 'name') === 'db');
  return tagOf(str(db, 'image'));
}

/** status.version: asked for, running, and pending while they differ. */
export function versionStatus(
  input: DatabaseInput,
  spec: ResolvedSpec,
  facts: ExternalFacts | undefined,
  requested = spec.version,
): Obj {
  const running = runningEngineVersion(input, spec, facts);
  const major = majorVersion(spec.engine, running);
  const pending = major !== undefined && compareVersions(requested, major) !== 0;
  return { requested, ...(running ? { running } : {}), ...(pending ? { pending: requested } : {}) };
}

/** A sentence for a version asked for that does not run yet, with where it stands. */
export function pendingVersion(input: DatabaseInput, spec: ResolvedSpec, version: Obj): string | undefined {
  if (!version['pending'] || !version['running']) return undefined;
  const from = `${spec.engine} ${String(version['running'])}`;
  const wanted = String(version['pending']);
  if (spec.placement === 'aws') {
    const state = str(liveInstance(input.observed, INSTANCE_KEYS.rds), 'status', 'atProvider', 'status');
    const window = spec.maintenance?.window ? ` ${spec.maintenance.window}` : '';
    return state === 'upgrading'
      ? `upgrading ${from} → ${wanted}`
      : `version ${wanted} is pending: RDS applies it in the instance's maintenance window${window} (${from} runs)`;
  }
  return `upgrading ${from} → ${wanted}`;
}

/** status.storage: what was asked, what the instance has, and on AWS how far RDS may grow it. */
export function storageStatus(
  input: DatabaseInput,
  spec: ResolvedSpec,
  claim: Obj | undefined,
  volumesGB?: number,
): Obj {
  const capacity =
    spec.placement === 'aws'
      ? num(liveInstance(input.observed, INSTANCE_KEYS.rds), 'status', 'atProvider', 'allocatedStorage')
      : (volumesGB ?? wholeGigabytes(str(claim, 'status', 'capacity', 'storage')));
  return {
    requestedGB: spec.storageGB,
    ...(capacity !== undefined ? { capacityGB: capacity } : {}),
    ...(spec.placement === 'aws' && spec.maxStorageGB !== undefined ? { maxGB: spec.maxStorageGB } : {}),
  };
}

/**
 * Where writes and reads go now: status.primary (CloudNativePG's current
 * primary pod, else the instance), status.lastFailover (when CloudNativePG
 * last moved it) and status.readEndpoint; and a Failover notice when the
 * primary of the same instance moved since the last call.
 */
export function rolesStatus(
  input: DatabaseInput,
  spec: ResolvedSpec,
  instance: string | undefined,
  endpoint: string | undefined,
  readOnly: { host: string; port: number } | undefined,
): { status: Obj; failover?: string } {
  const out: Obj = {};
  const cluster = usesCnpg(spec) ? liveInstance(input.observed, INSTANCE_KEYS.cnpg) : undefined;
  const primary = str(cluster, 'status', 'currentPrimary') ?? instance;
  if (primary) out['primary'] = primary;
  // A failover is a change of primary seen happen, not the first election.
  const since = str(cluster, 'status', 'currentPrimaryTimestamp');
  const read = readOnly ? `${readOnly.host}:${readOnly.port}` : endpoint;
  if (read) out['readEndpoint'] = read;
  const before = str(input.xr, 'status', 'primary');
  const sameInstance = str(input.xr, 'status', 'instance') === instance;
  const failover =
    cluster && before && primary && before !== primary && sameInstance
      ? `the primary moved from ${before} to ${primary}${since ? ` at ${since}` : ''}`
      : undefined;
  const last = failover ? (since ?? input.now.toISOString()) : str(input.xr, 'status', 'lastFailover');
  if (last) out['lastFailover'] = last;
  return { status: out, ...(failover ? { failover } : {}) };
}
