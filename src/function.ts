// One call of the function: request → typed spec → blueprint → safety →
// readiness → status, conditions and events → response. Everything here is
// pure; the gRPC server and the CLI are the edges that call it.
import {
  Ready,
  type Resource,
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
  Status,
  Target,
} from '@crossplane-org/function-sdk-typescript';
import type { AwsFactsSource } from './aws/facts.js';
import { AWS_CREDENTIALS } from './aws/credentials.js';
import { awsQuery } from './aws/query.js';
import type { BlueprintInput, ExternalFacts, Owner } from './blueprints/blueprint.js';
import { blueprintFor, BlueprintChoiceError } from './dispatch.js';
import { unwrap, wrap } from './claims.js';
import { FatalError } from './errors.js';
import { randomBytes } from 'node:crypto';
import { condition, isObj, record, str, type Obj } from './kube.js';
import { judge, type Verdict } from './kinds/index.js';
import { guardNothingLost } from './safety.js';
import { SpecError, unknownFields } from './spec/validate.js';

/** A logger as the SDK passes it (pino); only what we use. */
export interface Log {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** Seconds a response may be cached: short while something is still moving. */
const TTL_SETTLED = 60;
const TTL_MOVING = 15;

const DEFAULT_NAMESPACE = 'default';
export const CLAIM_NAME_LABEL = 'crossplane.io/claim-name';
export const CLAIM_NAMESPACE_LABEL = 'crossplane.io/claim-namespace';

/** Who owns the composed resources and where they go. */
export function ownerOf(xr: Obj): Owner {
  const kind = str(xr, 'kind');
  const name = str(xr, 'metadata', 'name');
  if (!kind || !name) throw new FatalError('the observed composite resource has no kind or metadata.name');
  const uid = str(xr, 'metadata', 'uid') ?? '';
  const claimName = str(xr, 'metadata', 'labels', CLAIM_NAME_LABEL);
  const claimNamespace = str(xr, 'metadata', 'labels', CLAIM_NAMESPACE_LABEL);
  const own = str(xr, 'metadata', 'namespace');
  if (own) return { kind, name, uid, namespace: own };
  if (claimName && claimNamespace) return { kind, name, uid, namespace: claimNamespace, claim: { name: claimName, namespace: claimNamespace } };
  // A namespaced XR always has its namespace in a cluster; a rendered one may
  // not, and kubectl would have put it in "default".
  return { kind, name, uid, namespace: DEFAULT_NAMESPACE };
}

function observedResources(req: RunFunctionRequest): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const [key, res] of Object.entries(req.observed?.resources ?? {})) {
    if (res && isObj(res.resource)) out.set(key, res.resource);
  }
  return out;
}

/** Answers to earlier requirements: required resources (v2), or extra resources (v1). */
function requiredResources(req: RunFunctionRequest): Map<string, Obj[]> {
  const out = new Map<string, Obj[]>();
  for (const source of [req.extraResources, req.requiredResources]) {
    for (const [name, resources] of Object.entries(source ?? {})) {
      out.set(name, (resources?.items ?? []).map((i) => i.resource).filter(isObj));
    }
  }
  return out;
}

const PASSWORD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 characters from a cryptographic source: about 190 bits, and safe in URIs and shells. */
export function newPassword(): string {
  let out = '';
  while (out.length < 32) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: dropping the rest keeps every character equally likely.
      if (byte < 248 && out.length < 32) out += PASSWORD_ALPHABET[byte % 62];
    }
  }
  return out;
}

function fatalResponse(rsp: RunFunctionResponse, message: string, reason: string): RunFunctionResponse {
  rsp.results.push({ severity: Severity.SEVERITY_FATAL, message, reason, target: Target.TARGET_COMPOSITE_AND_CLAIM });
  return rsp;
}

/** The fresh response: previous steps' desired state carried through untouched. */
function newResponse(req: RunFunctionRequest): RunFunctionResponse {
  return {
    meta: { tag: req.meta?.tag ?? '', ttl: { seconds: TTL_SETTLED, nanos: 0 } },
    desired: { composite: req.desired?.composite, resources: { ...(req.desired?.resources ?? {}) } },
    results: [],
    context: req.context,
    requirements: undefined,
    conditions: [],
  };
}

/** The previous reason of our condition, read back from the observed XR. */
function previousReason(xr: Obj, type: string): string | undefined {
  return condition(xr, type)?.reason;
}

function toReady(ready: boolean): Ready {
  return ready ? Ready.READY_TRUE : Ready.READY_FALSE;
}

/** What a blueprint gets besides its spec, from the request alone. */
function inputBase(req: RunFunctionRequest, xr: Obj, observed = observedResources(req), facts?: ExternalFacts): Omit<BlueprintInput<unknown>, 'spec'> {
  const owner = ownerOf(xr);
  // Blueprints read the objects themselves, whatever carries them (a provider-kubernetes Object in either mode).
  const seen = new Map([...observed].map(([key, obj]) => [key, unwrap(obj)]));
  return { owner, xr, observed: seen, required: requiredResources(req), newPassword, ...(facts ? { facts } : {}) };
}

/**
 * Runs one call with what AWS says, when the step has AWS credentials: the
 * I/O happens first, then the same pure run. Facts are optional; whatever
 * goes wrong reading them, the call is answered.
 */
export async function runFunctionLive(req: RunFunctionRequest, aws: AwsFactsSource, log?: Log): Promise<RunFunctionResponse> {
  // Most calls have no AWS credentials: they take the pure path at once.
  if (!req.credentials?.[AWS_CREDENTIALS]) return runFunction(req, log);
  let facts: ExternalFacts | undefined;
  try {
    const xr = req.observed?.composite?.resource;
    const query = isObj(xr) ? awsQuery(req, inputBase(req, xr)) : undefined;
    if (query) facts = { aws: await aws.gather(query) };
  } catch {
    // The pure run reports whatever made the request unusable.
  }
  return runFunction(req, log, facts);
}

/** Runs one call. Never throws: every failure is a Fatal result, so nothing partial is applied. */
export function runFunction(req: RunFunctionRequest, log?: Log, facts?: ExternalFacts): RunFunctionResponse {
  const rsp = newResponse(req);
  try {
    compose(req, rsp, log, facts);
    return rsp;
  } catch (err) {
    // A Fatal result makes Crossplane apply nothing and delete nothing.
    const fresh = newResponse(req);
    if (err instanceof SpecError) return fatalResponse(fresh, `invalid spec: ${err.message}`, 'InvalidSpec');
    if (err instanceof BlueprintChoiceError) return fatalResponse(fresh, err.message, 'UnknownKind');
    if (err instanceof FatalError) return fatalResponse(fresh, err.message, err.reason);
    // Anything else is our bug: say so without echoing data that might be secret.
    log?.warn({ error: err instanceof Error ? err.name : typeof err }, 'function failed unexpectedly');
    const what = err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error';
    return fatalResponse(fresh, `function-platform failed unexpectedly (${what}); nothing was changed`, 'InternalError');
  }
}

function compose(req: RunFunctionRequest, rsp: RunFunctionResponse, log?: Log, facts?: ExternalFacts): void {
  const xr = req.observed?.composite?.resource;
  if (!isObj(xr)) throw new FatalError('the request has no observed composite resource (observed.composite is empty)', 'NoCompositeResource');
  const blueprint = blueprintFor(str(xr, 'kind') ?? '', isObj(req.input) ? req.input : undefined);
  const observed = observedResources(req);
  const base = inputBase(req, xr, observed, facts);
  const owner = base.owner;
  const spec = blueprint.parse(xr['spec'], base);
  const input: BlueprintInput<unknown> = { ...base, spec };

  const plan = blueprint.compose(input);
  guardNothingLost(plan, observed);
  if (plan.requirements && Object.keys(plan.requirements).length > 0) {
    // Crossplane v2 answers required resources; v1 only knows extra resources. Ask both ways.
    rsp.requirements = { extraResources: { ...plan.requirements }, resources: { ...plan.requirements }, schemas: {} };
  }

  const verdicts = new Map<string, Verdict>();
  const desired = rsp.desired!.resources;
  for (const { key, object } of plan.resources) {
    const verdict = judge(observed.get(key));
    verdicts.set(key, verdict);
    const composed = owner.claim ? wrap(owner, object) : object;
    desired[key] = { resource: composed, connectionDetails: {}, ready: toReady(verdict.ready) } satisfies Resource;
  }

  const summary = blueprint.summarize(input, plan, verdicts);
  const status = { ...summary.status, ready: summary.ready, message: summary.message };
  const composite = rsp.desired!.composite;
  const previous = isObj(composite?.resource) ? composite.resource : {};
  rsp.desired!.composite = {
    resource: { ...previous, status: { ...(record(previous, 'status') ?? {}), ...status } },
    connectionDetails: composite?.connectionDetails ?? {},
    ready: toReady(summary.ready),
  };
  rsp.conditions.push({
    type: blueprint.conditionType,
    status: summary.ready ? Status.STATUS_CONDITION_TRUE : Status.STATUS_CONDITION_FALSE,
    reason: summary.reason,
    message: summary.message,
    target: Target.TARGET_COMPOSITE_AND_CLAIM,
  });

  // Events: one when the reason changes (the function keeps no memory, so the
  // observed condition is the memory), and every warning on every call.
  if (previousReason(xr, blueprint.conditionType) !== summary.reason) {
    rsp.results.push({
      severity: Severity.SEVERITY_NORMAL,
      reason: summary.reason,
      message: summary.message,
      target: Target.TARGET_COMPOSITE_AND_CLAIM,
    });
  }
  const ignored = unknownFields(blueprint.specSchema, xr['spec']).map((message) => ({ reason: 'UnknownField', message }));
  for (const w of [...ignored, ...summary.warnings]) {
    rsp.results.push({ severity: Severity.SEVERITY_WARNING, reason: w.reason, message: w.message, target: Target.TARGET_COMPOSITE_AND_CLAIM });
  }
  if (!summary.ready) rsp.meta = { tag: rsp.meta?.tag ?? '', ttl: { seconds: TTL_MOVING, nanos: 0 } };
  log?.debug({ xr: `${owner.kind}/${owner.name}`, blueprint: blueprint.name, ready: summary.ready, reason: summary.reason }, 'composed');
}
