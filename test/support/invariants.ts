// What every answer of the function must satisfy, whatever it was asked:
// either a Fatal result with a message and nothing composed of its own, or a
// desired state that loses nothing, claims readiness only for what exists,
// and says what it is doing. Used by the fuzz, load and secrets suites.
import { isDeepStrictEqual } from 'node:util';
import {
  Ready,
  RunFunctionRequest,
  RunFunctionResponse,
  Severity,
  Status,
} from '@crossplane-org/function-sdk-typescript';
import { unwrap } from '../../src/claims.js';
import { groupOf, isObj, kindOf, nameOf, record, str, type Obj } from '../../src/kube.js';
import { holdsData } from '../../src/kinds/index.js';

/** The request exactly as the server decodes it (undefined fields and `__proto__` keys gone, numbers as doubles). */
export function asReceived(req: RunFunctionRequest): RunFunctionRequest {
  return RunFunctionRequest.decode(RunFunctionRequest.encode(req).finish());
}

/** An answer as the client decodes it: what an in-process answer looks like after the wire. */
export function overTheWire(rsp: RunFunctionResponse): RunFunctionResponse {
  return RunFunctionResponse.decode(RunFunctionResponse.encode(rsp).finish());
}

export function fatalOf(rsp: RunFunctionResponse) {
  return rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
}

/** The object a desired or observed resource is about: what a provider-kubernetes Object wraps, or itself. */
export function wrapped(obj: Obj): Obj {
  if (kindOf(obj) !== 'Object' || !groupOf(obj).startsWith('kubernetes.')) return obj;
  return record(obj, 'spec', 'forProvider', 'manifest') ?? obj;
}

function decodedSecretData(secret: Obj | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record(secret, 'data') ?? {}))
    if (typeof v === 'string') out[k] = Buffer.from(v, 'base64').toString('utf8');
  for (const [k, v] of Object.entries(record(secret, 'stringData') ?? {})) if (typeof v === 'string') out[k] = v;
  return out;
}

/** Passwords the request already holds: in observed Secrets (as themselves or wrapped) and required Secrets. */
export function knownPasswords(req: RunFunctionRequest): Set<string> {
  const out = new Set<string>();
  const add = (obj: unknown) => {
    if (!isObj(obj)) return;
    for (const candidate of [obj, wrapped(obj), unwrap(obj)]) {
      if (kindOf(candidate) === 'Secret') {
        const pw = decodedSecretData(candidate)['password'];
        if (pw) out.add(pw);
      }
    }
  };
  for (const res of Object.values(req.observed?.resources ?? {})) add(res?.resource);
  for (const source of [req.requiredResources, req.extraResources]) {
    for (const list of Object.values(source ?? {})) for (const item of list?.items ?? []) add(item?.resource);
  }
  return out;
}

/** Passwords in the answer's desired Secrets (composed directly or wrapped). */
function desiredPasswords(rsp: RunFunctionResponse): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, res] of Object.entries(rsp.desired?.resources ?? {})) {
    const obj = wrapped((res.resource ?? {}) as Obj);
    if (kindOf(obj) !== 'Secret') continue;
    const pw = decodedSecretData(obj)['password'];
    if (pw) out.set(key, pw);
  }
  return out;
}

/**
 * The answer as a string to compare two answers to the same request: Secret
 * data decoded, and a password the function generated on this call (one not
 * already in the request) replaced by a marker, since it is random by design.
 */
export function fingerprint(
  req: RunFunctionRequest,
  rsp: RunFunctionResponse,
  opts: { events?: boolean } = {},
): string {
  const known = knownPasswords(req);
  const generated = [...new Set(desiredPasswords(rsp).values())].filter((p) => !known.has(p));
  const decode = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decode);
    if (!isObj(value)) return value;
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) out[k] = decode(v);
    if (kindOf(value) === 'Secret' && isObj(value['data'])) out['data'] = decodedSecretData(value);
    return out;
  };
  const body = JSON.stringify({
    desired: decode(rsp.desired),
    results: opts.events === false ? rsp.results.filter((r) => r.severity === Severity.SEVERITY_FATAL) : rsp.results,
    conditions: rsp.conditions,
    requirements: rsp.requirements,
    meta: rsp.meta,
    context: rsp.context,
  });
  return generated.reduce((text, pw) => text.split(pw).join('<generated-password>'), body);
}

/** kind/name/namespace of every desired composed resource, by key: what must not change between calls. */
export function identities(rsp: RunFunctionResponse): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, res] of Object.entries(rsp.desired?.resources ?? {})) {
    const obj = (res.resource ?? {}) as Obj;
    const inner = wrapped(obj);
    out.set(
      key,
      JSON.stringify([
        str(obj, 'apiVersion'),
        kindOf(obj),
        nameOf(obj),
        str(obj, 'metadata', 'namespace'),
        inner === obj ? null : [kindOf(inner), nameOf(inner), str(inner, 'metadata', 'namespace')],
      ]),
    );
  }
  return out;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** Kinds whose names end up in DNS or hostnames: a DNS label of at most 63 characters. */
const LABEL_NAMED = new Set(['Service', 'StatefulSet', 'Deployment', 'CronJob']);

/** Problems with the names and labels of one composed object, as the API server would see them. */
function nameProblems(key: string, obj: Obj, namespace: string | undefined): string[] {
  const problems: string[] = [];
  const name = nameOf(obj);
  const kind = kindOf(obj);
  if (!name) problems.push(`${key}: ${kind} has no metadata.name`);
  else if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    problems.push(`${key}: ${kind} name ${JSON.stringify(name)} is not a DNS subdomain`);
  else if (LABEL_NAMED.has(kind) && (name.length > 63 || !DNS_1035.test(name)))
    problems.push(`${key}: ${kind} name ${JSON.stringify(name)} is not a DNS label`);
  for (const [k, v] of Object.entries(record(obj, 'metadata', 'labels') ?? {})) {
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
      problems.push(`${key}: label ${k}=${JSON.stringify(v)} is not a valid label value`);
  }
  if (
    namespace !== undefined &&
    str(obj, 'metadata', 'namespace') !== undefined &&
    str(obj, 'metadata', 'namespace') !== namespace
  ) {
    problems.push(`${key}: namespace ${str(obj, 'metadata', 'namespace')}, expected ${namespace}`);
  }
  return problems;
}

export interface CheckOptions {
  /** A request Crossplane could send (real names, real kinds): names and secrets are checked too. */
  wellFormed: boolean;
}

/**
 * Every way `rsp` breaks the rules for `req` (the request as the server decoded
 * it; see asReceived). Empty when the answer is sound.
 */
export function answerProblems(req: RunFunctionRequest, rsp: RunFunctionResponse, opts: CheckOptions): string[] {
  const problems: string[] = [];
  const internal = rsp.results.find((r) => r.reason === 'InternalError');
  if (internal) problems.push(`an unexpected internal error (a bug, not bad input): ${internal.message}`);
  const carried = req.desired?.resources ?? {};
  const desired = rsp.desired?.resources ?? {};
  const fatal = fatalOf(rsp);
  // Crossplane applies nothing of a Fatal answer (so one too large to send may carry nothing); any other keeps them.
  if (!fatal)
    for (const key of Object.keys(carried)) {
      if (!(key in desired)) problems.push(`${key}, desired by an earlier step, was dropped`);
    }

  if (fatal) {
    if (!fatal.message.trim()) problems.push('a Fatal result with an empty message');
    for (const [key, res] of Object.entries(desired)) {
      if (!isDeepStrictEqual(res, carried[key])) problems.push(`a Fatal answer composes ${key}`);
    }
    return problems;
  }

  // A desired state: the XR's status says what is happening.
  const composite = rsp.desired?.composite;
  const status = record(composite?.resource, 'status');
  if (!status) return [...problems, 'no Fatal result and no desired composite status'];
  if (typeof status['ready'] !== 'boolean') problems.push(`status.ready is ${JSON.stringify(status['ready'])}`);
  if (typeof status['message'] !== 'string' || !status['message'].trim()) problems.push('status.message is empty');
  const ready = status['ready'] === true;
  // A call that turns status.ready leaves READY and the conditions as the XR shows them (src/function.ts).
  const shown = record(req.observed?.composite?.resource, 'status')?.['ready'];
  const turning = typeof shown === 'boolean' && shown !== ready;
  const shownConditions = record(req.observed?.composite?.resource, 'status')?.['conditions'];
  const readyShown =
    Array.isArray(shownConditions) &&
    shownConditions.some((c) => isObj(c) && c['type'] === 'Ready' && c['status'] === 'True');
  if ((composite?.ready === Ready.READY_TRUE) !== (turning ? readyShown : ready))
    problems.push(
      `the composite's ready (${composite?.ready}) disagrees with ${turning ? 'the Ready the XR shows' : `status.ready (${ready})`}`,
    );
  const ours = rsp.conditions.filter((c) => c.type === 'WidgetReady' || c.type === 'DatabaseReady');
  if (turning) {
    if (rsp.conditions.length > 0) problems.push('conditions returned on a call that turns status.ready');
  } else if (ours.length !== 1) problems.push(`${ours.length} WidgetReady/DatabaseReady conditions`);
  else {
    if (!ours[0]!.reason) problems.push('the condition has no reason');
    if ((ours[0]!.status === Status.STATUS_CONDITION_TRUE) !== ready)
      problems.push('the condition disagrees with status.ready');
  }
  if ('conditions' in status && !('conditions' in (record(req.desired?.composite?.resource, 'status') ?? {})))
    problems.push('the desired XR writes status.conditions');

  // Nothing lost: every observed data holder stays desired.
  const observed = new Map<string, Obj>();
  for (const [key, res] of Object.entries(req.observed?.resources ?? {}))
    if (isObj(res?.resource)) observed.set(key, res.resource);
  for (const [key, obj] of observed) {
    if (holdsData(obj) && !(key in desired))
      problems.push(
        `observed ${kindOf(wrapped(obj))} ${key} holds data and is not desired: Crossplane would delete it`,
      );
  }

  // Readiness only for what exists; a ready XR has nothing unready that exists.
  for (const [key, res] of Object.entries(desired)) {
    if (key in carried && isDeepStrictEqual(res, carried[key])) continue;
    if (
      !isObj(res.resource) ||
      typeof res.resource['apiVersion'] !== 'string' ||
      typeof res.resource['kind'] !== 'string'
    ) {
      problems.push(`${key} has no apiVersion and kind`);
      continue;
    }
    if (res.ready !== Ready.READY_TRUE && res.ready !== Ready.READY_FALSE)
      problems.push(`${key} has readiness ${res.ready}: the function judges every resource`);
    if (res.ready === Ready.READY_TRUE && !observed.has(key))
      problems.push(`${key} is marked READY_TRUE but was never observed`);
    // What is not created yet is not ready, and fails nothing: a side task (a record, an alert rule) the XR does not
    // wait for may be new while the XR is ready. What exists and is not ready makes a ready XR a lie.
    if (ready && res.ready !== Ready.READY_TRUE && observed.has(key))
      problems.push(`the XR is ready while ${key} is not`);
  }

  if (opts.wellFormed) {
    const xr = req.observed?.composite?.resource as Obj;
    const namespace =
      str(xr, 'metadata', 'namespace') ?? str(xr, 'metadata', 'labels', 'crossplane.io/claim-namespace');
    for (const [key, res] of Object.entries(desired)) {
      if (key in carried) continue;
      const obj = res.resource as Obj;
      problems.push(...nameProblems(key, obj, str(xr, 'metadata', 'namespace')));
      const inner = wrapped(obj);
      if (inner !== obj) problems.push(...nameProblems(`${key} (wrapped)`, inner, namespace));
    }
    // Generated secrets: one password per answer, and the one that exists is kept.
    const known = knownPasswords(req);
    const passwords = desiredPasswords(rsp);
    const generated = new Set([...passwords.values()].filter((p) => !known.has(p)));
    if (generated.size > 1) problems.push(`${generated.size} different new passwords in one answer`);
    const existing = decodedSecretData(observed.get('credentials') && wrapped(unwrap(observed.get('credentials')!)))[
      'password'
    ];
    if (existing && passwords.has('credentials') && passwords.get('credentials') !== existing)
      problems.push('the observed password of credentials was replaced');
  }
  return problems;
}
