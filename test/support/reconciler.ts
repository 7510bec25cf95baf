// Crossplane's side of one composite reconcile, played against a real API
// server (internal/controller/apiextensions/composite, v2.2:
// composition_functions.go, composition_render.go, names/): read the XR and
// its composed resources through spec.crossplane.resourceRefs, call the
// function (answering its required resources from the server), delete what
// it left out (foreground), persist resourceRefs, server-side apply every
// desired composed resource with the XR's field owner and force, then apply
// the XR's status. Whatever the server rejects is collected, not thrown: a
// rejected composed resource is what these tests look for.
import { createHash } from 'node:crypto';
import { Ready, type RunFunctionRequest, type RunFunctionResponse, Severity, Status } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { ApiError, type Json, type KubeClient } from './apiserver.js';

export const FIELD_OWNER_XR = 'apiextensions.crossplane.io/composite';
export const FIELD_OWNER_COMPOSED_PREFIX = 'apiextensions.crossplane.io/composed';
export const LABEL_COMPOSITE = 'crossplane.io/composite';
export const LABEL_CLAIM_NAME = 'crossplane.io/claim-name';
export const LABEL_CLAIM_NAMESPACE = 'crossplane.io/claim-namespace';

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

/** ComposedFieldOwnerName: a field owner unique per XR name and group-kind. */
export function composedFieldOwner(xr: Json): string {
  const group = groupOf(String(xr['apiVersion']));
  const gk = group ? `${String(xr['kind'])}.${group}` : String(xr['kind']);
  const h = createHash('sha256').update(String(xr['metadata']['name']) + gk).digest('hex');
  return `${FIELD_OWNER_COMPOSED_PREFIX}/${h}`;
}

/** names.ChildName: <parent>-<12 hex of sha256(uid + key)>, truncated to 63. */
export function childName(parent: string, uid: string, key: string): string {
  const suffix = createHash('sha256').update(uid + key).digest('hex').slice(0, 12);
  let p = parent && !parent.endsWith('-') ? `${parent}-` : parent;
  if ((p + suffix).length <= 63) return p + suffix;
  const max = 63 - 12;
  p = p.slice(0, max);
  return p.endsWith('-') ? p + suffix : `${p.slice(0, max - 1)}-${suffix}`;
}

/**
 * Legacy XRs keep Crossplane's machinery fields directly under spec; modern
 * ones under spec.crossplane. Told apart by scope here: the only cluster-scoped
 * composites these tests make are legacy ones (claims mode).
 */
export function isLegacy(xr: Json): boolean {
  return xr['metadata']?.['namespace'] === undefined;
}

function machinery(xr: Json): Json {
  return (isLegacy(xr) ? xr['spec'] : xr['spec']?.['crossplane']) ?? {};
}

export interface Rejection {
  key: string;
  kind: string;
  name: string;
  /** create, apply, status, refs, delete */
  verb: string;
  code: number;
  message: string;
}

export interface ReconcileResult {
  xr: Json;
  response: RunFunctionResponse;
  fatal?: string;
  /** Composed resources as the server stored them after this reconcile, by key. */
  composed: Map<string, Json>;
  /** What the server refused. */
  rejected: Rejection[];
  /** Ready as Crossplane would set the XR's Ready condition. */
  ready: boolean;
  /** Observed composed resources the function left out, deleted (foreground) this time. */
  deleted: Json[];
}

/**
 * RenderComposedResourceMetadata plus the name Crossplane picks: the observed
 * object's name and namespace when there is one; else the function's name, or
 * names.ChildName of generateName, the XR's uid and the key. Namespaced XRs
 * force their namespace; the composite (and claim) labels, the
 * composition-resource-name annotation and a controller reference to the XR.
 */
export function renderComposedMetadata(xr: Json, key: string, resource: Json | undefined, seen?: Json): Json {
  const cd = structuredClone(resource ?? {}) as Json;
  const meta: Json = (cd['metadata'] ??= {});
  const namespace: string | undefined = xr['metadata']['namespace'];
  const compositeLabel = xr['metadata']['labels']?.[LABEL_COMPOSITE] ?? xr['metadata']['name'];
  if (seen) {
    meta['name'] = seen['metadata']['name'];
    if (seen['metadata']['namespace']) meta['namespace'] = seen['metadata']['namespace'];
    else delete meta['namespace'];
  }
  if (!meta['name'] && !meta['generateName']) meta['generateName'] = `${compositeLabel}-`;
  if (namespace) meta['namespace'] = namespace;
  meta['annotations'] = { ...(meta['annotations'] ?? {}), [RESOURCE_NAME_ANNOTATION]: key };
  const labels: Json = { [LABEL_COMPOSITE]: compositeLabel };
  const claimName = xr['metadata']['labels']?.[LABEL_CLAIM_NAME];
  const claimNamespace = xr['metadata']['labels']?.[LABEL_CLAIM_NAMESPACE];
  if (claimName && claimNamespace) Object.assign(labels, { [LABEL_CLAIM_NAME]: claimName, [LABEL_CLAIM_NAMESPACE]: claimNamespace });
  meta['labels'] = { ...(meta['labels'] ?? {}), ...labels };
  const owner = { apiVersion: xr['apiVersion'], kind: xr['kind'], name: xr['metadata']['name'], uid: xr['metadata']['uid'], controller: true, blockOwnerDeletion: true };
  const others: Json[] = (meta['ownerReferences'] ?? []).filter((o: Json) => o['uid'] !== owner.uid && o['controller'] !== true);
  meta['ownerReferences'] = [...others, owner];
  if (!meta['name']) {
    meta['name'] = childName(meta['generateName'], String(owner.uid), key);
    delete meta['generateName'];
  }
  return cd;
}

/** Makes the XR what Crossplane's XR reconciler makes of it before composing: label and composition selected. */
export async function adoptXr(client: KubeClient, ref: Json, composition: string): Promise<Json> {
  const xr = await client.getObj(ref);
  if (!xr) throw new Error(`${ref['kind']} ${ref['metadata']['name']} not found`);
  const labels = { ...(xr['metadata']['labels'] ?? {}) };
  if (labels[LABEL_COMPOSITE] && machinery(xr)['compositionRef']) return xr;
  labels[LABEL_COMPOSITE] = xr['metadata']['name'];
  xr['metadata']['labels'] = labels;
  if (isLegacy(xr)) xr['spec'] = { ...xr['spec'], compositionRef: { name: composition } };
  else xr['spec'] = { ...xr['spec'], crossplane: { ...(xr['spec']['crossplane'] ?? {}), compositionRef: { name: composition } } };
  return client.updateObj(xr, { fieldManager: 'crossplane' });
}

/** Fetches what a requirement selects, as Crossplane answers required resources. */
async function answer(client: KubeClient, requirements: RunFunctionResponse['requirements']): Promise<RunFunctionRequest['requiredResources']> {
  const out: RunFunctionRequest['requiredResources'] = {};
  for (const [name, sel] of Object.entries(requirements?.resources ?? {})) {
    if (!sel) continue;
    let items: Json[] = [];
    if (sel.matchName !== undefined) {
      const got = await client.getObj({ apiVersion: sel.apiVersion, kind: sel.kind, metadata: { name: sel.matchName, ...(sel.namespace ? { namespace: sel.namespace } : {}) } });
      items = got ? [got] : [];
    } else {
      const selector = Object.entries(sel.matchLabels?.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
      items = await client.listObjs(sel.apiVersion, sel.kind, sel.namespace, selector || undefined);
    }
    out[name] = { items: items.map((resource) => ({ resource, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED })) };
  }
  return out;
}

/** Calls the function until its requirements settle (Crossplane: at most five times). */
async function callFunction(client: KubeClient, base: RunFunctionRequest): Promise<RunFunctionResponse> {
  let rsp = runFunction(base);
  let asked = '';
  for (let round = 1; round < 5; round++) {
    const now = JSON.stringify(rsp.requirements?.resources ?? {});
    if (now === '{}' || now === asked) break;
    asked = now;
    rsp = runFunction({ ...base, requiredResources: await answer(client, rsp.requirements) });
  }
  return rsp;
}

const CONDITION_STATUS: Record<number, string> = {
  [Status.STATUS_CONDITION_TRUE]: 'True',
  [Status.STATUS_CONDITION_FALSE]: 'False',
  [Status.STATUS_CONDITION_UNKNOWN]: 'Unknown',
};

function rejection(key: string, obj: Json, verb: string, e: unknown): Rejection {
  if (!(e instanceof ApiError)) throw e;
  return { key, kind: String(obj['kind']), name: String(obj['metadata']?.['name'] ?? ''), verb, code: e.code, message: e.serverMessage };
}

/** One reconcile of the XR `ref` (apiVersion, kind, metadata.name, metadata.namespace). */
export async function reconcile(client: KubeClient, ref: Json): Promise<ReconcileResult> {
  const xr = await client.getObj(ref);
  if (!xr) throw new Error(`${ref['kind']} ${ref['metadata']['name']} not found`);
  const rejected: Rejection[] = [];
  const namespace: string | undefined = xr['metadata']['namespace'];

  // Observe: every referenced composed resource that exists, keyed by its annotation.
  const observed = new Map<string, Json>();
  for (const r of (machinery(xr)['resourceRefs'] ?? []) as Json[]) {
    const got = await client.getObj({ apiVersion: r['apiVersion'], kind: r['kind'], metadata: { name: r['name'], ...(namespace ? { namespace } : r['namespace'] ? { namespace: r['namespace'] } : {}) } });
    const key = got?.['metadata']?.['annotations']?.[RESOURCE_NAME_ANNOTATION];
    if (got && key) observed.set(key, got);
  }

  const response = await callFunction(client, buildRequest(xr, [...observed.values()]));
  const fatal = response.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
  if (fatal) {
    // Nothing is applied, nothing deleted; Synced goes False.
    return { xr, response, fatal: fatal.message, composed: observed, rejected, ready: false, deleted: [] };
  }

  // Desired composed resources with the metadata Crossplane renders onto them.
  const desired = new Map<string, Json>();
  for (const [key, res] of Object.entries(response.desired?.resources ?? {})) {
    desired.set(key, renderComposedMetadata(xr, key, res.resource as Json | undefined, observed.get(key)));
  }

  // Garbage collect what the function left out: foreground deletion.
  const deleted: Json[] = [];
  for (const [key, obj] of observed) {
    if (desired.has(key)) continue;
    try {
      await client.raw('DELETE', obj, 'delete', { body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Foreground' } });
      deleted.push(obj);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) rejected.push(rejection(key, obj, 'delete', e));
    }
  }

  // Persist resourceRefs before creating anything (an atomic list).
  const refs = [...desired.values()].map((cd) => ({
    apiVersion: cd['apiVersion'],
    kind: cd['kind'],
    name: cd['metadata']['name'],
    ...(isLegacy(xr) && cd['metadata']['namespace'] ? { namespace: cd['metadata']['namespace'] } : {}),
  }));
  const refsPatch: Json = {
    apiVersion: xr['apiVersion'],
    kind: xr['kind'],
    metadata: { name: xr['metadata']['name'], ...(namespace ? { namespace } : {}) },
    spec: isLegacy(xr) ? { resourceRefs: refs } : { crossplane: { resourceRefs: refs } },
  };
  try {
    await client.applyObj(refsPatch, { fieldManager: FIELD_OWNER_XR, force: true });
  } catch (e) {
    rejected.push(rejection('(resourceRefs)', xr, 'refs', e));
  }

  // Apply every desired composed resource: server-side apply, the XR's own field owner, forced.
  const fieldManager = composedFieldOwner(xr);
  const composed = new Map<string, Json>();
  const synced = new Map<string, boolean>();
  for (const [key, cd] of desired) {
    try {
      composed.set(key, await client.applyObj(cd, { fieldManager, force: true }));
      synced.set(key, true);
    } catch (e) {
      rejected.push(rejection(key, cd, 'apply', e));
      synced.set(key, false);
    }
  }

  // The XR's status: what the function returned, with Crossplane's conditions and the function's own.
  const readyKeys = Object.entries(response.desired?.resources ?? {}).filter(([, r]) => r.ready === Ready.READY_TRUE).map(([k]) => k);
  const compositeReady = response.desired?.composite?.ready;
  const allReady = readyKeys.length === desired.size;
  const ready = compositeReady === Ready.READY_TRUE || (compositeReady !== Ready.READY_FALSE && allReady);
  const unready = [...desired.keys()].filter((k) => !readyKeys.includes(k)).sort();
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const previous: Json[] = xr['status']?.['conditions'] ?? [];
  const since = (type: string, status: string) => {
    const p = previous.find((c) => c['type'] === type);
    return p && p['status'] === status ? p['lastTransitionTime'] : now;
  };
  const condition = (type: string, status: string, reason: string, message?: string) => ({
    type,
    status,
    reason,
    ...(message ? { message } : {}),
    lastTransitionTime: since(type, status),
    observedGeneration: xr['metadata']['generation'],
  });
  const anyUnsynced = [...synced.values()].some((s) => !s);
  const conditions = [
    ready ? condition('Ready', 'True', 'Available') : condition('Ready', 'False', 'Creating', unready.length ? `Unready resources: ${unready.join(', ')}` : undefined),
    anyUnsynced ? condition('Synced', 'False', 'ReconcileError', 'an applied composed resource was rejected') : condition('Synced', 'True', 'ReconcileSuccess'),
    ...response.conditions.map((c) => condition(c.type, CONDITION_STATUS[c.status] ?? 'Unknown', c.reason, c.message)),
  ];
  const desiredStatus: Json = ((response.desired?.composite?.resource as Json | undefined)?.['status'] ?? {}) as Json;
  const statusPatch: Json = {
    apiVersion: xr['apiVersion'],
    kind: xr['kind'],
    metadata: { name: xr['metadata']['name'], ...(namespace ? { namespace } : {}), uid: xr['metadata']['uid'] },
    status: { ...desiredStatus, conditions },
  };
  let after = xr;
  try {
    after = await client.applyStatus(statusPatch, { fieldManager: FIELD_OWNER_XR, force: true });
  } catch (e) {
    rejected.push(rejection('(status)', xr, 'status', e));
  }
  return { xr: after, response, composed, rejected, ready, deleted };
}

export interface Round {
  round: number;
  /** status.ready and status.message as the server stored them. */
  ready: boolean;
  message: string;
  /** Composed resources desired this round, by key. */
  keys: string[];
  deleted: string[];
  rejected: Rejection[];
  fatal?: string;
  result: ReconcileResult;
}

/**
 * Reconciles until the XR's stored status says ready: reconcile, then let the
 * controllers (`step`) act on what was composed, and again. Every round is
 * kept, so a test can check the order things happened in.
 */
export async function converge(
  client: KubeClient,
  ref: Json,
  step: (r: ReconcileResult, round: number) => Promise<void>,
  maxRounds = 8,
): Promise<Round[]> {
  const rounds: Round[] = [];
  for (let round = 1; round <= maxRounds; round++) {
    const result = await reconcile(client, ref);
    const status: Json = result.xr['status'] ?? {};
    rounds.push({
      round,
      ready: status['ready'] === true,
      message: String(status['message'] ?? ''),
      keys: [...result.composed.keys()].sort(),
      deleted: result.deleted.map((o) => String(o['metadata']?.['annotations']?.[RESOURCE_NAME_ANNOTATION] ?? o['metadata']['name'])),
      rejected: result.rejected,
      ...(result.fatal ? { fatal: result.fatal } : {}),
      result,
    });
    if (result.fatal || result.rejected.length > 0) break;
    if (status['ready'] === true && result.ready && result.deleted.length === 0) break;
    await step(result, round);
  }
  return rounds;
}

/** One line per round, for assertion messages. */
export function describeRounds(rounds: Round[]): string {
  return rounds
    .map((r) => `#${r.round} ready=${r.ready} [${r.keys.join(' ')}]${r.deleted.length ? ` deleted [${r.deleted.join(' ')}]` : ''}: ${r.fatal ? `FATAL ${r.fatal}` : r.message}${r.rejected.length ? `\n   REJECTED ${JSON.stringify(r.rejected)}` : ''}`)
    .join('\n');
}
