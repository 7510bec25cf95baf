// Local render: what Crossplane would do with one call of the function,
// without a cluster. It builds the request the way Crossplane does, runs the
// same code in-process, and lays the answer out as `crossplane render` prints
// it: the XR with its new status, then the composed resources, then results.
import { readFileSync } from 'node:fs';
import {
  Ready,
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
  Status,
} from '@crossplane-org/function-sdk-typescript';
import { parseAllDocuments, stringify } from 'yaml';
import { AwsFactsSource } from './aws/facts.js';
import { runFunction } from './function.js';
import { runFunctionLive } from './live.js';
import { isObj, record, str, type Obj } from './kube.js';

export const RESOURCE_NAME_ANNOTATION = 'crossplane.io/composition-resource-name';

/** Every YAML document of a file that is an object (comments-only documents are skipped). */
export function readYamlObjects(path: string): Obj[] {
  const text = readFileSync(path, 'utf8');
  const out: Obj[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObj(value)) throw new Error(`${path}: every document must be a Kubernetes object`);
    out.push(value);
  }
  return out;
}

/** Observed composed resources keyed as Crossplane keys them: by their composition-resource-name annotation. */
export function observedByKey(
  objects: Obj[],
  source = 'observed resources',
): Record<string, { resource: Obj; connectionDetails: Record<string, Buffer>; ready: Ready }> {
  const out: Record<string, { resource: Obj; connectionDetails: Record<string, Buffer>; ready: Ready }> = {};
  for (const obj of objects) {
    const key = str(obj, 'metadata', 'annotations', RESOURCE_NAME_ANNOTATION);
    if (!key)
      throw new Error(
        `${source}: ${str(obj, 'kind')} ${str(obj, 'metadata', 'name')} has no ${RESOURCE_NAME_ANNOTATION} annotation`,
      );
    out[key] = { resource: obj, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED };
  }
  return out;
}

/**
 * Pipeline credentials from Secret manifests, keyed by the Secret's name (data
 * is base64, stringData plain). With no Composition to map a Secret to a step
 * credential, a single Secret also stands for the `aws` credentials.
 */
export function credentialsFromSecrets(secrets: Obj[]): RunFunctionRequest['credentials'] {
  const out: RunFunctionRequest['credentials'] = {};
  for (const secret of secrets) {
    const name = str(secret, 'metadata', 'name');
    if (!name) continue;
    const data: Record<string, Buffer> = {};
    for (const [k, v] of Object.entries(record(secret, 'data') ?? {}))
      if (typeof v === 'string') data[k] = Buffer.from(v, 'base64');
    for (const [k, v] of Object.entries(record(secret, 'stringData') ?? {}))
      if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8');
    out[name] = { credentialData: { data } };
  }
  const names = Object.keys(out);
  if (names.length === 1 && !out['aws']) out['aws'] = out[names[0]!]!;
  return out;
}

/** The request Crossplane would send for this XR and observed state. */
export function buildRequest(
  xr: Obj,
  observed: Obj[] = [],
  credentials: Obj[] = [],
  input?: Obj,
  required: RunFunctionRequest['requiredResources'] = {},
): RunFunctionRequest {
  return {
    meta: { tag: 'render', capabilities: [] },
    observed: {
      composite: { resource: xr, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED },
      resources: observedByKey(observed),
    },
    desired: { composite: undefined, resources: {} },
    input,
    context: undefined,
    extraResources: {},
    credentials: credentialsFromSecrets(credentials),
    requiredResources: required,
    requiredSchemas: {},
  };
}

export interface Rendered {
  /** The XR with the status Crossplane would write. */
  xr: Obj;
  /** Composed resources with the metadata Crossplane adds, sorted by composition-resource name. */
  resources: Obj[];
  /** Results (events) as render prints them. */
  results: Obj[];
  /** The Fatal message, when the call failed: nothing would be applied. */
  fatal?: string;
}

const SEVERITY: Record<number, string> = {
  [Severity.SEVERITY_FATAL]: 'SEVERITY_FATAL',
  [Severity.SEVERITY_WARNING]: 'SEVERITY_WARNING',
  [Severity.SEVERITY_NORMAL]: 'SEVERITY_NORMAL',
};

/** Render is reproducible: conditions carry a fixed transition time, as crossplane render's do. */
const RENDER_TIME = '2024-01-01T00:00:00Z';

const CONDITION_STATUS: Record<number, string> = {
  [Status.STATUS_CONDITION_TRUE]: 'True',
  [Status.STATUS_CONDITION_FALSE]: 'False',
  [Status.STATUS_CONDITION_UNKNOWN]: 'Unknown',
};

/** Lays a response out as Crossplane would apply it. */
export function assemble(xr: Obj, rsp: RunFunctionResponse): Rendered {
  const results = rsp.results.map((r) => ({
    apiVersion: 'render.crossplane.io/v1beta1',
    kind: 'Result',
    severity: SEVERITY[r.severity] ?? 'SEVERITY_UNSPECIFIED',
    ...(r.reason ? { reason: r.reason } : {}),
    message: r.message,
    step: 'compose',
  }));
  const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
  const xrMeta = record(xr, 'metadata') ?? {};
  const name = str(xr, 'metadata', 'name') ?? '';
  if (fatal) {
    return {
      xr: { apiVersion: xr['apiVersion'], kind: xr['kind'], metadata: xrMeta, status: xr['status'] ?? {} },
      resources: [],
      results,
      fatal: fatal.message,
    };
  }
  const desired = rsp.desired?.resources ?? {};
  const keys = Object.keys(desired).sort();
  const allReady = keys.every((k) => desired[k]!.ready === Ready.READY_TRUE);
  const compositeReady = rsp.desired?.composite?.ready;
  const ready = compositeReady === Ready.READY_TRUE || (compositeReady !== Ready.READY_FALSE && allReady);
  const unready = keys.filter((k) => desired[k]!.ready !== Ready.READY_TRUE);
  const conditions: Obj[] = [
    ready
      ? { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: RENDER_TIME }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'Creating',
          lastTransitionTime: RENDER_TIME,
          ...(unready.length ? { message: `Unready resources: ${unready.join(', ')}` } : {}),
        },
    ...rsp.conditions.map((c) => ({
      type: c.type,
      lastTransitionTime: RENDER_TIME,
      status: CONDITION_STATUS[c.status] ?? 'Unknown',
      reason: c.reason,
      ...(c.message ? { message: c.message } : {}),
    })),
  ];
  const desiredStatus = record(rsp.desired?.composite?.resource, 'status') ?? {};
  const outXr: Obj = {
    apiVersion: xr['apiVersion'],
    kind: xr['kind'],
    metadata: { name, ...(xrMeta['namespace'] ? { namespace: xrMeta['namespace'] } : {}) },
    status: { ...desiredStatus, conditions },
  };
  const owner = {
    apiVersion: xr['apiVersion'],
    kind: xr['kind'],
    name,
    uid: str(xr, 'metadata', 'uid') ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
  const resources = keys.map((key) => {
    const obj = structuredClone(desired[key]!.resource ?? {}) as Obj;
    const meta = (record(obj, 'metadata') ?? {}) as Obj;
    obj['metadata'] = {
      ...(meta['name'] ? {} : { generateName: `${name}-` }),
      ...meta,
      annotations: { ...(record(meta, 'annotations') ?? {}), [RESOURCE_NAME_ANNOTATION]: key },
      labels: { ...(record(meta, 'labels') ?? {}), 'crossplane.io/composite': name },
      ownerReferences: [owner],
    };
    return obj;
  });
  return { xr: outXr, resources, results };
}

/** What a requirement finds among the objects a render was given, as Crossplane would answer it. */
export function answer(
  requirements: RunFunctionResponse['requirements'],
  available: Obj[],
): RunFunctionRequest['requiredResources'] {
  const out: RunFunctionRequest['requiredResources'] = {};
  for (const [name, sel] of Object.entries(requirements?.resources ?? {})) {
    if (!sel) continue;
    const items = available.filter(
      (o) =>
        o['apiVersion'] === sel.apiVersion &&
        o['kind'] === sel.kind &&
        (sel.matchName === undefined || str(o, 'metadata', 'name') === sel.matchName) &&
        (sel.namespace === undefined || str(o, 'metadata', 'namespace') === sel.namespace) &&
        Object.entries(sel.matchLabels?.labels ?? {}).every(([k, v]) => str(o, 'metadata', 'labels', k) === v),
    );
    out[name] = {
      items: items.map((resource) => ({ resource, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED })),
    };
  }
  return out;
}

/**
 * Calls the function until its requirements stop changing, answering them
 * from `required`, the way Crossplane runs a step (at most five times).
 */
export function runWithRequirements(
  call: (req: RunFunctionRequest) => RunFunctionResponse,
  base: RunFunctionRequest,
  required: Obj[],
): RunFunctionResponse;
export function runWithRequirements(
  call: (req: RunFunctionRequest) => Promise<RunFunctionResponse>,
  base: RunFunctionRequest,
  required: Obj[],
): Promise<RunFunctionResponse>;
export function runWithRequirements(
  call: (req: RunFunctionRequest) => RunFunctionResponse | Promise<RunFunctionResponse>,
  base: RunFunctionRequest,
  required: Obj[],
): RunFunctionResponse | Promise<RunFunctionResponse> {
  const step = (
    rsp: RunFunctionResponse,
    asked: string,
    round: number,
  ): RunFunctionResponse | Promise<RunFunctionResponse> => {
    const now = JSON.stringify(rsp.requirements?.resources ?? {});
    if (now === asked || now === '{}') return rsp;
    // Crossplane gives up the same way, and the composite does not reconcile.
    if (round >= 5)
      throw new Error(
        "cannot run Composition pipeline step: requirements didn't stabilize after the maximum number of iterations (5)",
      );
    const next = call({ ...base, requiredResources: answer(rsp.requirements, required) });
    return next instanceof Promise ? next.then((r) => step(r, now, round + 1)) : step(next, now, round + 1);
  };
  const first = call(base);
  return first instanceof Promise ? first.then((r) => step(r, '', 1)) : step(first, '', 1);
}

/** Renders one XR in-process, asking AWS when the credentials hold AWS keys, as the server does. */
export async function renderLive(
  xr: Obj,
  observed: Obj[] = [],
  credentials: Obj[] = [],
  input?: Obj,
  required: Obj[] = [],
): Promise<Rendered> {
  const aws = new AwsFactsSource();
  const rsp = await runWithRequirements(
    (req) => runFunctionLive(req, aws),
    buildRequest(xr, observed, credentials, input),
    required,
  );
  return assemble(xr, rsp);
}

/** Renders one XR in-process. */
export function render(
  xr: Obj,
  observed: Obj[] = [],
  credentials: Obj[] = [],
  input?: Obj,
  required: Obj[] = [],
): Rendered {
  return assemble(
    xr,
    runWithRequirements((req) => runFunction(req), buildRequest(xr, observed, credentials, input), required),
  );
}

/** The documents `crossplane render` would print, as YAML or as a JSON list. */
export function format(rendered: Rendered, opts: { results: boolean; output: 'yaml' | 'json' }): string {
  const docs = [rendered.xr, ...rendered.resources, ...(opts.results ? rendered.results : [])];
  if (opts.output === 'json') return `${JSON.stringify(docs, null, 2)}\n`;
  return docs.map((d) => `---\n${stringify(d, { lineWidth: 0 })}`).join('');
}
