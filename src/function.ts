// One call of the function, pure: request → typed spec (phase one of the
// blueprint) → desired resources (phase two) → safety → readiness per kind →
// status, condition and events → response. The edges call it: the gRPC
// server through src/live.ts (which may first ask the outside for facts),
// and the local render CLI.
import {
  Capability,
  Ready,
  type Resource,
  type RunFunctionRequest,
  type RunFunctionResponse,
} from '@crossplane-org/function-sdk-typescript';
import type { Blueprint, Context } from './blueprints/blueprint.js';
import { blueprintFor } from './blueprints/dispatch.js';
import { callerLacks, MISSING } from './capabilities.js';
import { wrap } from './claims.js';
import { checkAgainstCluster } from './cluster-schemas.js';
import { BlueprintChoiceError, FatalError, SpecError } from './errors.js';
import type { ExternalFacts, ExternalQuery } from './facts.js';
import { judge, type Verdict } from './kinds/index.js';
import type { Input } from './generated/schemas.js';
import { condition, isObj, record, str, type Obj } from './kube.js';
import { now } from './clock.js';
import { namesOperation, runOperation } from './operations/index.js';
import { BUILT_IN_REQUEUE, contextOf, observedComposite, observedResources, selectorOf, stepInput } from './request.js';
import { conditionOf, fatal, normal, warning } from './results.js';
import { guardNothingLost } from './safety.js';
import { unknownFields } from './spec/validate.js';

/** A logger as the SDK passes it (pino); only what we use. */
export interface Log {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * After an answer that turned status.ready, or one whose next step is seconds
 * away (Summary.soon): that call is normally started at once by a watch event
 * (the status write, a Deployment becoming available), which Crossplane's
 * circuit breaker drops while it is open; the short TTL brings it anyway. Seen
 * in claims mode, where provider-kubernetes' Objects open the breaker as a
 * Widget is created (READY waited a minute), and on a real node, where a
 * revert right after a cutover took over two minutes at 15 s a step.
 */
const TTL_SOON = 2;
/** While Crossplane's watch circuit breaker is open (it stays open 30 s at least). */
const TTL_BLIND = 5;

/**
 * The response's TTL for a call in `state`: the platform's settled and
 * changing intervals (the Input's requeue), else the built-in ones; the
 * short ones never wait longer than the changing interval.
 */
export function ttlOf(input: Input | undefined, state: 'soon' | 'blind' | 'settled' | 'moving'): number {
  const { settledSeconds, changingSeconds } = { ...BUILT_IN_REQUEUE, ...input?.requeue };
  if (state === 'settled') return settledSeconds;
  if (state === 'moving') return changingSeconds;
  return Math.min(state === 'soon' ? TTL_SOON : TTL_BLIND, changingSeconds);
}

/** A call after phase one: the blueprint, what the request said, and the resolved spec. */
export interface Prepared {
  req: RunFunctionRequest;
  blueprint: Blueprint;
  /** The step's Input, validated: read once a call. */
  input: Input | undefined;
  xr: Obj;
  /** Observed composed resources as sent (Objects still wrapped: the safety check counts what exists). */
  observed: ReadonlyMap<string, Obj>;
  ctx: Context;
  resolved: unknown;
}

/**
 * The blueprint that serves a request, chosen once a call (the metrics count
 * calls by it, Fatal ones too); undefined when none does, which prepare then
 * says, after what comes first (a missing composite).
 */
export function chooseBlueprint(req: RunFunctionRequest): Blueprint | undefined {
  try {
    return blueprintFor(str(req.observed?.composite?.resource, 'kind') ?? '', isObj(req.input) ? req.input : undefined);
  } catch (err) {
    if (err instanceof BlueprintChoiceError) return undefined;
    throw err;
  }
}

/** Phase one. Throws what becomes a Fatal result: bad input, a change that would lose data. */
export function prepare(req: RunFunctionRequest, chosen = chooseBlueprint(req)): Prepared {
  const xr = observedComposite(req);
  const blueprint = chosen ?? blueprintFor(str(xr, 'kind') ?? '', isObj(req.input) ? req.input : undefined);
  const input = stepInput(req);
  const observed = observedResources(req);
  const ctx = contextOf(xr, observed, req, input);
  return { req, blueprint, input, xr, observed, ctx, resolved: blueprint.resolve(xr['spec'], ctx) };
}

/** The outside facts the prepared call wants, if any. */
export function queryOf(p: Prepared): ExternalQuery | undefined {
  return p.blueprint.query?.(p.resolved);
}

/** The fresh response: previous steps' desired state carried through untouched. */
function newResponse(req: RunFunctionRequest): RunFunctionResponse {
  return {
    meta: { tag: req.meta?.tag ?? '', ttl: { seconds: BUILT_IN_REQUEUE.settledSeconds, nanos: 0 } },
    desired: { composite: req.desired?.composite, resources: { ...(req.desired?.resources ?? {}) } },
    results: [],
    context: req.context,
    requirements: undefined,
    conditions: [],
  };
}

const toReady = (ready: boolean): Ready => (ready ? Ready.READY_TRUE : Ready.READY_FALSE);

/** Phase two and the rest, given the facts the outside gave (none on the pure path). Throws like prepare. */
export function answer(p: Prepared, facts: ExternalFacts | undefined, log?: Log): RunFunctionResponse {
  const { req, blueprint, xr, observed, ctx, resolved } = p;
  const owner = ctx.owner;
  const rsp = newResponse(req);
  const plan = blueprint.compose(resolved, facts);
  guardNothingLost(plan, observed);
  if (plan.requirements && Object.keys(plan.requirements).length > 0) {
    const selectors = Object.fromEntries(Object.entries(plan.requirements).map(([name, r]) => [name, selectorOf(r)]));
    // Crossplane v2 answers required resources; v1 only knows extra resources. Ask both ways.
    rsp.requirements = { extraResources: selectors, resources: { ...selectors }, schemas: {} };
  }

  const verdicts = new Map<string, Verdict>();
  const desired = rsp.desired!.resources;
  for (const { key, object, independent } of plan.resources) {
    const verdict = judge(observed.get(key));
    verdicts.set(key, verdict);
    const composed = owner.claim ? wrap(owner, object) : object;
    // A side task (a record, an alert rule) never holds up the composite, which the blueprint judges itself;
    // it is ready once it exists, and never said ready before.
    const ready = toReady(independent ? observed.has(key) : verdict.ready);
    desired[key] = { resource: composed, connectionDetails: {}, ready } satisfies Resource;
  }

  // The cluster's own schemas of what is composed (Crossplane v2.2's required schemas): a field the installed
  // CRD lacks is Fatal, naming it and the package, before anything is applied (cluster-schemas.ts).
  const schemaCheck = checkAgainstCluster(
    req,
    plan.resources.map(({ key }) => ({ key, object: desired[key]!.resource as Obj })),
  );
  if (schemaCheck?.refused) throw new FatalError(schemaCheck.refused, 'SchemaMismatch');
  if (schemaCheck) {
    const asked = Object.fromEntries(Object.entries(schemaCheck.resources).map(([n, r]) => [n, selectorOf(r)]));
    const r = rsp.requirements ?? { extraResources: {}, resources: {}, schemas: {} };
    rsp.requirements = {
      extraResources: { ...r.extraResources, ...asked },
      resources: { ...r.resources, ...asked },
      schemas: schemaCheck.schemas,
    };
  }

  const summary = blueprint.status(resolved, facts, plan, verdicts);
  const status = { ...summary.status, ready: summary.ready, message: summary.message };
  const composite = rsp.desired!.composite;
  const previous = isObj(composite?.resource) ? composite.resource : {};
  // Readiness turns in two reconciles: first status.ready (and the sentence), then, once the XR shows it, the
  // conditions (READY, the blueprint's own) and the event. Crossplane v2.2 writes a reconcile's status and its
  // conditions in two writes, and a reconcile that starts before its cache has the second writes the conditions
  // it read back over them (crossplane/crossplane#7062): READY flapped after every cutover, each flap a write the
  // watch circuit breaker counts, until the breaker opened. A reconcile that changes status.ready here leaves the
  // conditions as they are, so the one after it, started by that write and reading it, changes only conditions.
  const shown = record(xr, 'status')?.['ready'];
  const turning = typeof shown === 'boolean' && shown !== summary.ready;
  rsp.desired!.composite = {
    resource: { ...previous, status: { ...(record(previous, 'status') ?? {}), ...status } },
    connectionDetails: composite?.connectionDetails ?? {},
    ready: toReady(turning ? condition(xr, 'Ready')?.status === 'True' : summary.ready),
  };
  if (!turning) {
    rsp.conditions.push(conditionOf(blueprint.conditionType, summary.ready, summary.reason, summary.message));
    for (const c of summary.conditions ?? []) rsp.conditions.push(conditionOf(c.type, c.ok, c.reason, c.message));
  }

  // Events: one when the reason changes (the observed condition is the
  // memory; the server also remembers, src/events.ts), and the warnings.
  if (!turning && condition(xr, blueprint.conditionType)?.reason !== summary.reason)
    rsp.results.push(normal(summary.reason, summary.message));
  for (const message of unknownFields(blueprint.specSchema, xr['spec']))
    rsp.results.push(warning('UnknownField', message));
  for (const w of summary.warnings) rsp.results.push(warning(w.reason, w.message));
  for (const kind of schemaCheck?.absent ?? [])
    rsp.results.push(
      warning(
        'KindNotServed',
        `this cluster serves no ${kind}: install the provider or operator that defines it; until then it cannot be composed`,
      ),
    );
  // What the caller cannot do that this answer relies on: said, not left to be guessed.
  const relies = [
    ...(rsp.requirements ? [Capability.CAPABILITY_REQUIRED_RESOURCES] : []),
    ...(rsp.conditions.length > 0 ? [Capability.CAPABILITY_CONDITIONS] : []),
  ];
  for (const c of relies) if (callerLacks(req, c)) rsp.results.push(warning('CapabilityMissing', MISSING[c]!));
  for (const n of summary.notices ?? []) rsp.results.push(normal(n.reason, n.message));
  // With Crossplane's watch circuit breaker open (Responsive False) the XR's own spec changes are dropped too:
  // a color patched then waited the settled minute. Polling is what is left, so poll often until it closes.
  const blind = condition(xr, 'Responsive')?.status === 'False';
  const ttl = ttlOf(
    p.input,
    turning || summary.soon ? 'soon' : blind ? 'blind' : summary.ready && !summary.working ? 'settled' : 'moving',
  );
  rsp.meta = { tag: rsp.meta?.tag ?? '', ttl: { seconds: ttl, nanos: 0 } };
  log?.debug(
    { xr: `${owner.kind}/${owner.name}`, blueprint: blueprint.name, ready: summary.ready, reason: summary.reason },
    'composed',
  );
  return rsp;
}

/**
 * The answer to a call that failed: a Fatal result, so Crossplane applies
 * nothing and deletes nothing. Our own bugs are named without echoing data
 * that might be secret.
 */
export function failure(req: RunFunctionRequest, err: unknown, log?: Log): RunFunctionResponse {
  const rsp = newResponse(req);
  if (err instanceof SpecError) rsp.results.push(fatal('InvalidSpec', `invalid spec: ${err.message}`));
  else if (err instanceof BlueprintChoiceError) rsp.results.push(fatal('UnknownKind', err.message));
  else if (err instanceof FatalError) rsp.results.push(fatal(err.reason, err.message));
  else {
    log?.warn({ error: err instanceof Error ? err.name : typeof err }, 'function failed unexpectedly');
    const what = err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error';
    rsp.results.push(fatal('InternalError', `function-platform failed unexpectedly (${what}); nothing was changed`));
  }
  return rsp;
}

/** A call's answer, and the name of the blueprint that served it (none: no blueprint serves it). */
export interface Answered {
  rsp: RunFunctionResponse;
  blueprint?: string;
}

/** Runs one call with the facts given (none: the pure path), saying which blueprint served it. Never throws. */
export function runCall(req: RunFunctionRequest, log?: Log, facts?: ExternalFacts): Answered {
  // A step of an Operation: no composite, no blueprint.
  if (namesOperation(req)) {
    try {
      return { rsp: runOperation(req, stepInput(req)!, now()), blueprint: 'operation' };
    } catch (err) {
      return { rsp: failure(req, err, log), blueprint: 'operation' };
    }
  }
  const chosen = chooseBlueprint(req);
  const name = chosen ? { blueprint: chosen.name } : {};
  try {
    return { rsp: answer(prepare(req, chosen), facts, log), ...name };
  } catch (err) {
    return { rsp: failure(req, err, log), ...name };
  }
}

/** Runs one call with the facts given (none: the pure path). Never throws. */
export function runFunction(req: RunFunctionRequest, log?: Log, facts?: ExternalFacts): RunFunctionResponse {
  return runCall(req, log, facts).rsp;
}
