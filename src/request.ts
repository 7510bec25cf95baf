// Reading a RunFunctionRequest: who the composite is, where its objects go,
// what was observed and what Crossplane fetched for us.
import type { ResourceSelector, RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import type { Context, Owner, Requirement } from './blueprints/blueprint.js';
import { unwrap } from './claims.js';
import type { ValidateFunction } from 'ajv';
import { FatalError, SpecError } from './errors.js';
import type { Input } from './generated/schemas.js';
import * as validators from './generated/validators.js';
import { isObj, str, type Obj } from './kube.js';
import { now } from './clock.js';
import { newPassword } from './passwords.js';
import { cronProblem } from './spec/cron.js';
import { specValidator } from './spec/validate.js';

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
  if (claimName && claimNamespace)
    return { kind, name, uid, namespace: claimNamespace, claim: { name: claimName, namespace: claimNamespace } };
  // A namespaced XR always has its namespace in a cluster; a rendered one may
  // not, and kubectl would have put it in "default".
  return { kind, name, uid, namespace: DEFAULT_NAMESPACE };
}

/** Observed composed resources by composition-resource name, as Crossplane sent them. */
export function observedResources(req: RunFunctionRequest): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const [key, res] of Object.entries(req.observed?.resources ?? {})) {
    if (res && isObj(res.resource)) out.set(key, res.resource);
  }
  return out;
}

/** Answers to earlier requirements: required resources (v2), or extra resources (v1). */
export function requiredResources(req: RunFunctionRequest): Map<string, Obj[]> {
  const out = new Map<string, Obj[]>();
  for (const source of [req.extraResources, req.requiredResources]) {
    for (const [name, resources] of Object.entries(source ?? {})) {
      out.set(name, (resources?.items ?? []).map((i) => i.resource).filter(isObj));
    }
  }
  return out;
}

/** The observed composite, or a Fatal error saying there is none. */
export function observedComposite(req: RunFunctionRequest): Obj {
  const xr = req.observed?.composite?.resource;
  if (!isObj(xr))
    throw new FatalError(
      'the request has no observed composite resource (observed.composite is empty); as a step of an Operation or CronOperation, the function needs input.operation naming what to run',
      'NoCompositeResource',
    );
  return xr;
}

/** A requirement as the protocol says it: a name, or labels. */
export function selectorOf(r: Requirement): ResourceSelector {
  const { apiVersion, kind } = r;
  const where = r.namespace !== undefined ? { namespace: r.namespace } : {};
  return 'matchName' in r
    ? { apiVersion, kind, matchName: r.matchName, ...where }
    : { apiVersion, kind, matchLabels: { labels: r.matchLabels }, ...where };
}

/** How soon Crossplane calls again when the Input's requeue says nothing: the settled and changing TTLs. */
export const BUILT_IN_REQUEUE = { settledSeconds: 60, changingSeconds: 15 } as const;

const validateInput = specValidator<Input>(validators.input as ValidateFunction, 'input');

/**
 * What makes a bucket name invalid beyond the schema's pattern (S3's naming
 * rules), in words; undefined when it is valid.
 */
export function bucketNameProblem(bucket: string): string | undefined {
  if (/\.\.|\.-|-\./.test(bucket)) return 'it must not have two periods, or a period and a hyphen, side by side';
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(bucket)) return 'it must not look like an IP address';
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(bucket))
    return 'it must not start with xn--, sthree- or amzn-s3-demo- (AWS keeps them)';
  if (/(-s3alias|--ol-s3|--x-s3|--table-s3)$/.test(bucket) || bucket.endsWith('.mrap'))
    return 'it must not end with a suffix AWS keeps (-s3alias, --ol-s3, --x-s3, --table-s3, .mrap)';
  return undefined;
}

/** What the Input's schema cannot say: one store at most, a bucket S3 accepts, and a schedule cron reads. */
/** A label key as Kubernetes takes it: an optional DNS-subdomain prefix and "/", then a name of up to 63. */
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A label value: empty, or up to 63 of letters, digits, "-", "_" and ".", alphanumeric at both ends. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function inputRules(input: Input): string[] {
  const problems: string[] = [];
  const backup = input.defaults?.database?.backup;
  if (backup?.provision !== undefined && backup.objectStore !== undefined)
    problems.push(
      'input.defaults.database.backup.provision and input.defaults.database.backup.objectStore are both set: name an existing store (objectStore) or have one made for each Database (provision), not both',
    );
  const bucket = backup?.objectStore?.bucket;
  const named = bucket === undefined ? undefined : bucketNameProblem(bucket);
  if (named) problems.push(`input.defaults.database.backup.objectStore.bucket is ${JSON.stringify(bucket)}; ${named}`);
  const { settledSeconds, changingSeconds } = { ...BUILT_IN_REQUEUE, ...input.requeue };
  if (settledSeconds < changingSeconds)
    problems.push(
      `input.requeue.settledSeconds is ${settledSeconds}, shorter than changingSeconds (${changingSeconds}): a settled composite would be called more often than a changing one`,
    );
  for (const [name, op] of Object.entries(input.operation ?? {}))
    for (const [key, value] of Object.entries((op as { matchLabels?: Record<string, string> }).matchLabels ?? {})) {
      if (!LABEL_KEY.test(key) || key.length > 316)
        problems.push(
          `input.operation.${name}.matchLabels has the key ${JSON.stringify(key)}, which is not a label key`,
        );
      if (!LABEL_VALUE.test(value))
        problems.push(
          `input.operation.${name}.matchLabels.${key} is ${JSON.stringify(value)}, which is not a label value`,
        );
    }
  const cron = backup?.schedule === undefined ? undefined : cronProblem(backup.schedule);
  if (cron) problems.push(`input.defaults.database.backup.schedule is ${JSON.stringify(backup!.schedule)}; ${cron}`);
  return problems;
}

/**
 * The step's input, validated against the Input CRD's schema, closed (a field
 * it does not list is refused by name), or undefined when the step gives
 * none. The blueprint's name is judged by dispatch, which lists the ones
 * that exist.
 */
export function stepInput(req: RunFunctionRequest): Input | undefined {
  if (!isObj(req.input)) return undefined;
  const { blueprint: _judgedByDispatch, apiVersion: _a, kind: _k, metadata: _m, ...rest } = req.input;
  let input: Input;
  try {
    input = validateInput(rest);
  } catch (err) {
    if (err instanceof SpecError) throw new FatalError(`invalid step input: ${err.message}`, 'InvalidInput');
    throw err;
  }
  const problems = inputRules(input);
  if (problems.length > 0) throw new FatalError(`invalid step input: ${problems.join('; ')}`, 'InvalidInput');
  return req.input as Input;
}

/** What a blueprint gets besides its spec, from the request alone. Objects in provider-kubernetes Objects are unwrapped. */
export function contextOf(
  xr: Obj,
  observed: ReadonlyMap<string, Obj>,
  req: RunFunctionRequest,
  input?: Input,
): Context {
  const seen = new Map([...observed].map(([key, obj]) => [key, unwrap(obj)]));
  return {
    owner: ownerOf(xr),
    xr,
    observed: seen,
    composed: observed,
    required: requiredResources(req),
    newPassword,
    now: now(),
    ...(input?.defaults ? { defaults: input.defaults } : {}),
  };
}
