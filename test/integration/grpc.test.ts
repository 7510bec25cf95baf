// The function over the wire, as Crossplane calls it: dist/main.js started as
// a process, RunFunction over gRPC, plaintext with --insecure and mutual TLS
// with certificates laid out the way Crossplane mounts them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Ready, Severity } from '@crossplane-org/function-sdk-typescript';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { makeCerts, type TestCerts } from '../../dev/infra/pki.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { dial, type FunctionClient } from '../support/grpc-client.js';
import { repoRoot } from '../../dev/infra/paths.js';

const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;
const ready = readYamlObjects(`${repoRoot}/examples/widget/observed/ready.yaml`);

function fatal(rsp: { results: Array<{ severity: Severity; message: string }> }): string | undefined {
  return rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL)?.message;
}

describe('gRPC, --insecure', () => {
  let fn: FunctionProcess;
  let client: FunctionClient;
  before(async () => {
    fn = await startFunction({ insecure: true });
    client = dial(fn.target);
  });
  after(async () => {
    client.close();
    assert.equal(await fn.stop(), 0, 'SIGTERM ends the server cleanly');
  });

  test('the seed Widget composes a 42-replica Deployment and a Service, not ready', async () => {
    const rsp = await client.run(buildRequest(seed));
    assert.equal(fatal(rsp), undefined);
    const dep = rsp.desired!.resources['deployment-blue']!;
    assert.equal(((dep.resource as Obj)['spec'] as Obj)['replicas'], 42);
    assert.equal(dep.ready, Ready.READY_FALSE);
    assert.ok(rsp.desired!.resources['service']);
    assert.equal(
      (rsp.desired!.composite!.resource as Obj)['status'] &&
        ((rsp.desired!.composite!.resource as Obj)['status'] as Obj)['ready'],
      false,
    );
  });

  test('with the ready fixtures it answers ready, and the protobuf round trip keeps every field', async () => {
    const rsp = await client.run(buildRequest(seed, ready));
    const status = (rsp.desired!.composite!.resource as Obj)['status'] as Obj;
    assert.equal(status['ready'], true);
    assert.equal(status['activeColor'], 'blue');
    assert.equal(status['availableReplicas'], 42);
    assert.equal(rsp.desired!.composite!.ready, Ready.READY_TRUE);
    assert.equal(rsp.conditions[0]?.type, 'WidgetReady');
    assert.equal(rsp.meta?.ttl?.seconds, 60);
  });

  const bad: Array<[string, Obj | undefined, RegExp]> = [
    ['missing spec', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }, /spec is missing/],
    ['wrong type', { ...seed, spec: { size: 'big' } }, /spec\.size is "big"; it must be a whole number/],
    ['size 0', { ...seed, spec: { size: 0 } }, /spec\.size is 0; it must be from 1 to 100/],
    ['size 101', { ...seed, spec: { size: 101 } }, /spec\.size is 101; it must be from 1 to 100/],
    [
      'color not a DNS label',
      { ...seed, spec: { color: 'Not_A_Label' } },
      /spec\.color is "Not_A_Label"; it must match .*DNS label/,
    ],
    [
      'unknown kind',
      { ...seed, kind: 'Gadget' },
      /no blueprint composes kind "Gadget"; known kinds: widget \(Widget, XWidget\); database \(Database, XDatabase\)/,
    ],
    ['no observed XR', undefined, /no observed composite resource/],
  ];
  for (const [name, xr, message] of bad) {
    test(`bad input is a Fatal result, and the server keeps serving: ${name}`, async () => {
      const req = buildRequest(xr ?? {});
      if (!xr) req.observed = undefined;
      const rsp = await client.run(req);
      assert.match(fatal(rsp) ?? '(no fatal result)', message);
      assert.deepEqual(rsp.desired?.resources ?? {}, {}, 'nothing partial is returned');
      const after = await client.run(buildRequest(seed));
      assert.equal(fatal(after), undefined, 'the next call is served normally');
    });
  }
});

describe('gRPC, mutual TLS', () => {
  let certs: TestCerts;
  let fn: FunctionProcess;
  before(async () => {
    certs = makeCerts();
    fn = await startFunction({ insecure: false, args: ['--tls-server-certs-dir', certs.serverDir] });
  });
  after(async () => {
    assert.equal(await fn.stop(), 0);
  });

  const tlsTarget = () => `localhost:${fn.port}`;

  test('a client with a certificate signed by ca.crt is served', async () => {
    const client = dial(tlsTarget(), grpc.credentials.createSsl(certs.ca, certs.clientKey, certs.clientCert));
    try {
      const rsp = await client.run(buildRequest(seed));
      assert.equal(fatal(rsp), undefined);
      assert.ok(rsp.desired!.resources['deployment-blue']);
    } finally {
      client.close();
    }
  });

  test('plaintext against the TLS server fails', async () => {
    const client = dial(tlsTarget());
    try {
      await assert.rejects(
        client.run(buildRequest(seed), 3000),
        (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED,
      );
    } finally {
      client.close();
    }
  });

  test('TLS without a client certificate is refused', async () => {
    const client = dial(tlsTarget(), grpc.credentials.createSsl(certs.ca));
    try {
      await assert.rejects(client.run(buildRequest(seed), 3000));
    } finally {
      client.close();
    }
  });

  test('a self-signed client certificate is refused', async () => {
    const client = dial(tlsTarget(), grpc.credentials.createSsl(certs.ca, certs.rogueKey, certs.rogueCert));
    try {
      await assert.rejects(client.run(buildRequest(seed), 3000));
    } finally {
      client.close();
    }
  });

  test('missing certificates stop the server at start with a clear error', async () => {
    await assert.rejects(
      startFunction({ insecure: false, args: ['--tls-server-certs-dir', '/nonexistent/certs'], startTimeoutMs: 5000 }),
      /cannot read \/nonexistent\/certs\/ca\.crt \(ENOENT\)/,
    );
  });
});
