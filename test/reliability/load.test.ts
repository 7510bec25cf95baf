// Load: 1,000 RunFunction calls at once against the real server, Widgets and
// Databases mixed, each with its own name, namespace, spec and observed state
// (fresh, or one or two reconciles in). Every call must succeed and its answer
// must be about its own request: names, replicas, ports, storage, passwords
// and status all carry that request's values, and the whole answer equals
// what the function computes for that request alone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { EventMemory } from '../../src/events.js';
import { runFunction } from '../../src/function.js';
import { field, list, record, str, type Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { nextRequest } from '../support/fuzz-requests.js';
import { answerProblems, asReceived, fatalOf, fingerprint, overTheWire } from '../support/invariants.js';
import { alive, dialWire, watchStderr, type WireClient } from '../support/wire.js';

const CALLS = 1000;
const COLORS = ['blue', 'green', 'red'] as const;

interface Call {
  i: number;
  kind: 'Widget' | 'Database';
  name: string;
  namespace: string;
  /** How many reconciles came before: 0 is a fresh object. */
  stage: number;
  req: RunFunctionRequest;
}

function makeCall(i: number): Call {
  const namespace = `team-${i % 7}`;
  const stage = Math.floor(i / 2) % 3;
  let xr: Obj;
  if (i % 2 === 0) {
    xr = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: `load-w-${i}`, namespace, uid: `uid-w-${i}` },
      spec: {
        color: COLORS[i % 3],
        size: 1 + (i % 100),
        port: 1024 + i,
        env: { REQUEST_ID: `req-${i}` },
        host: `w${i}.example.org`,
      },
    };
  } else {
    const aws = i % 8 === 3;
    xr = {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      metadata: { name: `load-d-${i}`, namespace, uid: `uid-d-${i}` },
      spec: {
        engine: i % 4 === 1 ? 'postgres' : 'mysql',
        storageGB: 20 + i,
        placement: aws ? 'aws' : 'cluster',
        ...(aws ? { aws: { region: 'eu-west-1' } } : {}),
      },
    };
  }
  // Earlier reconciles, in this process: each answer applied and reported healthy.
  let req = buildRequest(xr);
  for (let s = 0; s < stage; s++) req = nextRequest(req, runFunction(req));
  return { i, kind: xr['kind'] as Call['kind'], name: str(xr, 'metadata', 'name')!, namespace, stage, req };
}

const desiredObj = (rsp: RunFunctionResponse, key: string): Obj | undefined =>
  rsp.desired?.resources[key]?.resource as Obj | undefined;
const secretValue = (secret: Obj | undefined, key: string) => {
  const v = str(secret, 'data', key);
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};

/** Checks that an answer is about its own request; returns what is wrong. */
function crossTalk(call: Call, rsp: RunFunctionResponse): string[] {
  const wrong: string[] = [];
  const expect = (what: string, actual: unknown, wanted: unknown) => {
    if (actual !== wanted) wrong.push(`${what} is ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`);
  };
  if (fatalOf(rsp)) return [`Fatal: ${fatalOf(rsp)!.message}`];
  const status = record(rsp.desired?.composite?.resource, 'status') ?? {};
  if (call.kind === 'Widget') {
    const color = COLORS[call.i % 3];
    const size = 1 + (call.i % 100);
    const dep = desiredObj(rsp, `deployment-${color}`);
    expect('Deployment name', str(dep, 'metadata', 'name'), `${call.name}-${color}`);
    expect('Deployment namespace', str(dep, 'metadata', 'namespace'), call.namespace);
    expect('replicas', field(dep, 'spec', 'replicas'), size);
    const container = list(dep, 'spec', 'template', 'spec', 'containers')[0];
    expect('container port', field(list(container, 'ports')[0], 'containerPort'), 1024 + call.i);
    expect(
      'REQUEST_ID',
      str(
        list(container, 'env').find((e) => str(e, 'name') === 'REQUEST_ID'),
        'value',
      ),
      `req-${call.i}`,
    );
    expect(
      'Service selector',
      str(desiredObj(rsp, 'service'), 'spec', 'selector', 'app.kubernetes.io/instance'),
      call.name,
    );
    expect('status.url', status['url'], `http://w${call.i}.example.org`); // no issuer: plain HTTP
    // Ready from the second reconcile on; with a budget (size 2 and up) from the third, as it comes once the
    // Deployment is available (issue 26).
    expect('status.ready', status['ready'], call.stage >= (size >= 2 ? 2 : 1));
    expect('status.availableReplicas', status['availableReplicas'], call.stage > 0 ? size : 0);
  } else if (str(call.req.observed?.composite?.resource, 'spec', 'placement') === 'aws') {
    const rds = desiredObj(rsp, 'rds-instance');
    expect('RDS allocatedStorage', field(rds, 'spec', 'forProvider', 'allocatedStorage'), 20 + call.i);
    expect('RDS identifier', str(rds, 'spec', 'forProvider', 'identifier'), `${call.namespace}-${call.name}-db`);
    expect('RDS dbName', str(rds, 'spec', 'forProvider', 'dbName'), `load_d_${call.i}`);
  } else {
    const sts = desiredObj(rsp, 'statefulset');
    const engine = call.i % 4 === 1 ? 'postgres' : 'mysql';
    const port = engine === 'postgres' ? 5432 : 3306;
    expect('StatefulSet name', str(sts, 'metadata', 'name'), `${call.name}-db`);
    const data = list(sts, 'spec', 'volumeClaimTemplates').find((t) => str(t, 'metadata', 'name') === 'data');
    expect('data volume', str(data, 'spec', 'resources', 'requests', 'storage'), `${20 + call.i}Gi`);
    const host = `${call.name}-db.${call.namespace}.svc.cluster.local`;
    expect('status.endpoint', status['endpoint'], `${host}:${port}`);
    expect('status.connectionSecret', status['connectionSecret'], `${call.name}-db-connection`);
    const connection = desiredObj(rsp, 'connection');
    expect('connection host', secretValue(connection, 'host'), host);
    expect('connection dbname', secretValue(connection, 'dbname'), `load_d_${call.i}`);
    // The password this Database already has, not another request's.
    const observedPassword = secretValue(
      call.req.observed?.resources['credentials']?.resource as Obj | undefined,
      'password',
    );
    if (call.stage > 0) expect('password', secretValue(connection, 'password'), observedPassword);
    expect(
      'credentials password',
      secretValue(desiredObj(rsp, 'credentials'), 'password'),
      secretValue(connection, 'password'),
    );
  }
  return wrong;
}

describe('load', () => {
  let fn: FunctionProcess;
  let stderr: () => string;
  let clients: WireClient[];
  before(async () => {
    fn = await startFunction({ insecure: true });
    stderr = watchStderr(fn);
    clients = Array.from({ length: 4 }, () => dialWire(fn.target));
  });
  after(async () => {
    for (const c of clients) c.close();
    assert.equal(await fn.stop(), 0);
  });

  test(`${CALLS} concurrent calls, Widgets and Databases mixed: all answered, each about its own request`, {
    timeout: 180_000,
  }, async (t) => {
    const calls = Array.from({ length: CALLS }, (_, i) => makeCall(i));
    const started = Date.now();
    // All at once, over four connections.
    const outcomes = await Promise.all(calls.map((c) => clients[c.i % clients.length]!.run(c.req, 120_000)));
    const seconds = (Date.now() - started) / 1000;
    t.diagnostic(`${CALLS} concurrent calls answered in ${seconds.toFixed(2)}s`);

    const failures: string[] = [];
    outcomes.forEach((out, idx) => {
      const call = calls[idx]!;
      if (!out.ok) {
        failures.push(`call ${call.i} (${call.name}): gRPC ${grpc.status[out.code]}: ${out.details}`);
        return;
      }
      const problems = [
        ...crossTalk(call, out.rsp),
        ...answerProblems(asReceived(call.req), out.rsp, { wellFormed: true }),
      ];
      // The whole answer is the one this request gets on its own (events as the server says them: only on an
      // answer Crossplane acts on, src/events.ts).
      const req = asReceived(call.req);
      const alone = new EventMemory().filter(
        str(req.observed?.composite?.resource, 'metadata', 'uid'),
        runFunction(req),
        req,
      );
      if (fingerprint(call.req, out.rsp) !== fingerprint(call.req, overTheWire(alone)))
        problems.push('differs from the answer to the same request alone');
      if (problems.length > 0)
        failures.push(`call ${call.i} (${call.name}, stage ${call.stage}): ${problems.join('; ')}`);
    });
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} of ${CALLS} calls went wrong`);
    assert.ok(alive(fn));
    assert.equal(stderr(), '');
  });
});
