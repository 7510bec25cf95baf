// The requests the benchmark sends: each case is one RunFunction call as
// Crossplane would make it on a reconcile, built from the examples the way
// `npm run demo` and `function-platform render` build them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ready, RunFunctionRequest, RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { runFunction } from '../src/function.js';
import { isObj, str, type Obj } from '../src/kube.js';
import { answer, buildRequest, readYamlObjects } from '../src/render.js';
import { runAsCrossplane, servedFromShared, WITH_SCHEMAS } from '../test/support/published-schemas.js';
import { SHARED_CRDS } from '../dev/infra/paths.js';

export interface Case {
  id: string;
  title: string;
  /** What we send to function-platform and to the floor. */
  request: RunFunctionRequest;
  /** Its wire form, encoded once: the load generator sends these bytes. */
  bytes: Buffer;
  /** The composition-resource names function-platform answers with. */
  expectKeys: string[];
  /** Which of them it marks ready. */
  expectReady: string[];
  /** function-platform must answer with status.aws read from AWS (the live-AWS case). */
  expectAws?: boolean;
  /** The same call for function-patch-and-transform (Widget cases only). */
  peer?: { request: RunFunctionRequest; bytes: Buffer; expectKeys: string[]; expectReady: string[] };
}

/** The request's wire form, as the SDK's client would serialize it. */
const encode = (req: RunFunctionRequest): Buffer => Buffer.from(RunFunctionRequest.encode(req).finish());

/** The P&T Composition's step input (bench/peer/composition.yaml), as Crossplane sends it. */
export function peerInput(root: string): Obj {
  const composition = parse(readFileSync(join(root, 'bench', 'peer', 'composition.yaml'), 'utf8')) as unknown;
  const steps = isObj(composition) && isObj(composition['spec']) ? composition['spec']['pipeline'] : undefined;
  const input = Array.isArray(steps) && isObj(steps[0]) ? steps[0]['input'] : undefined;
  if (!isObj(input)) throw new Error('bench/peer/composition.yaml: spec.pipeline[0].input is missing');
  return input;
}

/**
 * The peer's view of the same call: its step input, and the observed
 * Deployment of the wanted color under the name P&T's template has
 * ("deployment"), so it judges the same Deployment ours does. Everything else
 * travels as it is, so the request is as large as ours.
 */
function forPeer(req: RunFunctionRequest, input: Obj): RunFunctionRequest {
  const xr = req.observed?.composite?.resource;
  const color = str(xr, 'spec', 'color');
  const resources = { ...(req.observed?.resources ?? {}) };
  const wanted = color ? resources[`deployment-${color}`] : undefined;
  if (wanted) resources['deployment'] = wanted;
  return { ...req, input, observed: { composite: req.observed?.composite, resources } };
}

function readyKeys(rsp: RunFunctionResponse): string[] {
  return Object.entries(rsp.desired?.resources ?? {})
    .filter(([, r]) => r.ready === Ready.READY_TRUE)
    .map(([k]) => k)
    .sort();
}

/** Builds every case, and checks in-process that each is a settled, successful call. */
export function buildCases(root: string, opts: { awsEndpoint?: string } = {}): Case[] {
  const ex = (p: string) => join(root, 'examples', p);
  const input = peerInput(root);
  const specs: Array<{
    id: string;
    title: string;
    xr: string;
    observed: string[];
    required?: string;
    /** The requirements `required` must answer; the others may legitimately find nothing (no DatabaseRestore asked for). */
    answers?: string[];
    peer?: boolean;
    aws?: boolean;
    /** Called as Crossplane v2.2 calls it: its capabilities, required schemas answered (test/support/published-schemas.ts). */
    v2?: boolean;
  }> = [
    { id: 'widget-seed', title: 'Widget, seed, nothing observed', xr: 'widget/seed.yaml', observed: [], peer: true },
    {
      id: 'widget-cutover',
      title: 'Widget mid blue/green, green ready',
      xr: 'widget/color-change.yaml',
      observed: ['widget/observed/cutover-green-ready.yaml'],
      peer: true,
    },
    {
      id: 'database-aws',
      title: 'Database on AWS, ready, with required Secret',
      xr: 'database/aws.yaml',
      observed: ['database/observed/aws-ready.yaml'],
      required: 'database/required/rds-connection.yaml',
      answers: ['rds-connection'],
    },
    {
      id: 'database-aws-v2',
      title: 'Database on AWS as Crossplane v2.2 calls it: the RDS Instance schema, the Secret answered twice',
      xr: 'database/aws.yaml',
      observed: ['database/observed/aws-ready.yaml'],
      required: 'database/required/rds-connection.yaml',
      answers: ['rds-connection'],
      v2: true,
    },
    {
      id: 'database-cluster',
      title: 'Database in cluster, ready',
      xr: 'database/cluster.yaml',
      observed: ['database/observed/cluster-ready.yaml'],
    },
  ];
  // The same Database with AWS step credentials, when moto runs: what the AWS path adds with a warm cache.
  if (opts.awsEndpoint) {
    specs.splice(3, 0, {
      id: 'database-aws-live',
      title: 'Database on AWS, ready, with AWS credentials (moto; warm cache)',
      xr: 'database/aws.yaml',
      observed: ['database/observed/aws-ready.yaml'],
      required: 'database/required/rds-connection.yaml',
      answers: ['rds-connection'],
      aws: true,
    });
  }
  // The published schemas are built from ../shared/crds: without them, the case cannot be made.
  const v2 = existsSync(SHARED_CRDS);
  if (!v2)
    process.stderr.write(`WARNING: database-aws-v2 is left out: ${SHARED_CRDS} (the published schemas) is missing\n`);
  return specs
    .filter((s) => v2 || !s.v2)
    .map((s) => {
      const [xr] = readYamlObjects(ex(s.xr));
      if (!xr) throw new Error(`${s.xr}: no object`);
      const observed = s.observed.flatMap((f) => readYamlObjects(ex(f)));
      const credentials = s.aws && opts.awsEndpoint ? [awsCredentials(opts.awsEndpoint)] : [];
      let request = buildRequest(xr, observed, credentials);
      request.meta = { tag: `bench-${s.id}`, capabilities: s.v2 ? WITH_SCHEMAS : [] };
      const given = s.required ? readYamlObjects(ex(s.required)) : [];
      let rsp: RunFunctionResponse;
      if (s.v2) {
        // Every round of Crossplane's requirements loop, schemas among them: its last call is the case.
        const run = runAsCrossplane(request, given, servedFromShared);
        request = run.request;
        rsp = run.calls.at(-1)!;
        if (!Object.values(request.requiredSchemas).some((x) => Object.keys(x?.openapiV3 ?? {}).length > 0))
          throw new Error(`${s.id}: no schema was answered from ${SHARED_CRDS}`);
      } else {
        rsp = runFunction(request);
        if (s.required) {
          // Answer what the function asks for, under the name it asks with, as Crossplane does.
          if (Object.keys(rsp.requirements?.resources ?? {}).length === 0)
            throw new Error(`${s.id}: the function asked for no required resources`);
          request = { ...request, requiredResources: answer(rsp.requirements, given) };
          rsp = runFunction(request);
        }
      }
      // What the case is about must be answered; a requirement that finds nothing (no DatabaseRestore in the
      // namespace) is answered empty, as Crossplane answers it. Nothing in the file may go unused either.
      for (const name of s.answers ?? []) {
        if (!(name in request.requiredResources))
          throw new Error(`${s.id}: the function did not ask for requirement ${name}`);
        if ((request.requiredResources[name]?.items.length ?? 0) === 0)
          throw new Error(`${s.id}: nothing in ${s.required} answers requirement ${name}`);
      }
      const used = new Set(Object.values(request.requiredResources).flatMap((r) => r.items.map((i) => i.resource)));
      for (const obj of given)
        if (!used.has(obj))
          throw new Error(
            `${s.id}: ${s.required}: ${str(obj, 'kind')} ${str(obj, 'metadata', 'name')} answers no requirement`,
          );
      const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
      if (fatal) throw new Error(`${s.id}: the function answers Fatal in-process: ${fatal.message}`);
      const expectKeys = Object.keys(rsp.desired?.resources ?? {}).sort();
      const c: Case = {
        id: s.id,
        title: s.title,
        request,
        bytes: encode(request),
        expectKeys,
        expectReady: readyKeys(rsp),
        ...(s.aws ? { expectAws: true } : {}),
      };
      if (s.peer) {
        const peerRequest = forPeer(request, input);
        const keys = ['deployment', 'pdb', 'service'];
        // Readiness the peer must agree on: ours, named as P&T names its templates.
        const ready = c.expectReady
          .map((k) => (k === `deployment-${str(xr, 'spec', 'color')}` ? 'deployment' : k))
          .filter((k) => keys.includes(k));
        c.peer = { request: peerRequest, bytes: encode(peerRequest), expectKeys: keys, expectReady: ready.sort() };
      }
      return c;
    });
}

/** Step credentials for the live-AWS case: any key pair does for moto. */
function awsCredentials(endpoint: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'aws' },
    stringData: {
      aws_access_key_id: 'AKIABENCHMARK0000000',
      aws_secret_access_key: 'benchmark-secret-key-not-real',
      endpoint,
    },
  };
}

/** What a decoded answer must look like: no Fatal result, the expected resources, the expected readiness. */
export function checkAnswer(
  raw: Buffer,
  expectKeys: string[] | undefined,
  expectReady: string[] | undefined,
  expectAws = false,
): string | undefined {
  const rsp = RunFunctionResponse.decode(raw);
  const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
  if (fatal) return `Fatal result: ${fatal.message}`;
  if (expectAws) {
    const warning = rsp.results.find((r) => r.severity === Severity.SEVERITY_WARNING);
    if (warning) return `warning: ${warning.message}`;
    if (str(rsp.desired?.composite?.resource, 'status', 'aws', 'dbInstanceStatus') !== 'available')
      return 'no status.aws from AWS';
  }
  if (expectKeys) {
    const keys = Object.keys(rsp.desired?.resources ?? {}).sort();
    if (keys.join(',') !== expectKeys.join(','))
      return `composed [${keys.join(', ')}], expected [${expectKeys.join(', ')}]`;
  }
  if (expectReady) {
    const ready = readyKeys(rsp);
    if (ready.join(',') !== expectReady.join(','))
      return `ready [${ready.join(', ')}], expected [${expectReady.join(', ')}]`;
  }
  return undefined;
}
