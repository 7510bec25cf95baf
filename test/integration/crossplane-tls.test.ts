// Mutual TLS with the certificates a real Crossplane has. Its CA, its client
// certificate and the function's server certificate share one subject, so
// OpenSSL takes the leaves for self-signed; a server that lets OpenSSL judge
// client certificates refuses every call Crossplane makes. Here dist/main.js
// serves a Go client that dials exactly as Crossplane does, and refuses
// everyone else, once per connection, naming the reason in a warning.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { type RunFunctionRequest, Severity } from '@crossplane-org/function-sdk-typescript';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import {
  callLikeCrossplane,
  type CrossplaneCerts,
  FUNCTION_AUTHORITY,
  makeCrossplaneCerts,
  pem,
  XP_CERTS_TOOLS,
} from '../support/crossplane-tls.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { toolsSkipReason } from '../support/tools.js';
import { dialWire } from '../support/wire.js';

const skip = toolsSkipReason(
  'mutual TLS with Crossplane-shaped certificates',
  XP_CERTS_TOOLS,
  'scripts/install-crossplane.sh',
);
const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;
const request = (): RunFunctionRequest => buildRequest(seed);

/** Log records the function wrote, parsed. */
function records(fn: FunctionProcess): Array<Record<string, unknown>> {
  return fn
    .logs()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const refusals = (fn: FunctionProcess) =>
  records(fn).filter((r) => r['severity'] === 'WARN' && String(r['msg']).startsWith('refused a'));

/** A grpc-js client: it cannot verify Crossplane's server certificate either (OpenSSL), so it does not try. */
function nodeClient(target: string, key?: Buffer, cert?: Buffer) {
  const creds = grpc.credentials.createSsl(null, key ?? null, cert ?? null, {
    rejectUnauthorized: false,
    checkServerIdentity: () => undefined,
  });
  return dialWire(target, { credentials: creds });
}

describe('mutual TLS with the certificates Crossplane makes', { skip }, () => {
  let certs: CrossplaneCerts;
  let fn: FunctionProcess;
  let target: string;

  before(async () => {
    certs = makeCrossplaneCerts();
    fn = await startFunction({ insecure: false, args: ['--tls-server-certs-dir', certs.server, '--debug'] });
    target = `127.0.0.1:${fn.port}`;
  });
  after(async () => {
    if (fn) assert.equal(await fn.stop(), 0);
  });

  /** Crossplane's own client is served; used after every refusal to show the server keeps serving. */
  async function servedLikeCrossplane(): Promise<void> {
    const out = await callLikeCrossplane(target, certs.client, request(), { authority: FUNCTION_AUTHORITY });
    assert.ok(out.ok, out.ok ? '' : `${out.code}: ${out.message}`);
    assert.ok(out.rsp.desired?.resources['deployment-blue'], 'the seed Widget composed its Deployment');
    assert.equal(
      out.rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL),
      undefined,
    );
  }

  /** A refused connection: one warning for it, naming `reason`, and the next good client is served. */
  async function refusedOnce(attempt: () => Promise<{ ok: boolean }>, reason: RegExp): Promise<void> {
    const before = refusals(fn).length;
    const out = await attempt();
    assert.equal(out.ok, false, 'the call must fail');
    // The warning is written as the connection closes; give the log a moment.
    for (let i = 0; i < 50 && refusals(fn).length === before; i++) await new Promise((r) => setTimeout(r, 20));
    const added = refusals(fn).slice(before);
    assert.equal(added.length, 1, `one warning per refused connection, got ${JSON.stringify(added)}`);
    assert.match(String(added[0]!['reason']), reason);
    await servedLikeCrossplane();
  }

  test('the certificates are the trap: OpenSSL calls Crossplane’s client certificate self-signed', () => {
    let out = '';
    try {
      execFileSync('openssl', ['verify', '-CAfile', join(certs.ca, 'ca.crt'), join(certs.client, 'tls.crt')], {
        stdio: 'pipe',
      });
    } catch (err) {
      out = String((err as { stdout?: Buffer }).stdout ?? '') + String((err as { stderr?: Buffer }).stderr ?? '');
    }
    assert.match(out, /error 18 .*self-signed certificate/);
    const ca = new X509Certificate(pem(certs.ca, 'ca.crt'));
    const leaf = new X509Certificate(pem(certs.client, 'tls.crt'));
    assert.equal(leaf.subject, ca.subject, 'one subject for the CA and its leaves');
    assert.equal(leaf.issuer, leaf.subject);
    assert.ok(leaf.verify(ca.publicKey), 'and yet the CA signed it');
  });

  test('a Go client that dials as Crossplane does is served, and verifies the server certificate', async () => {
    await servedLikeCrossplane();
  });

  test('the Go client refuses the server for a name its certificate does not carry (it really verifies)', async () => {
    const before = refusals(fn).length;
    const out = await callLikeCrossplane(target, certs.client, request());
    assert.equal(out.ok, false);
    assert.match(out.ok ? '' : out.message, /cannot validate certificate for 127\.0\.0\.1/);
    // The server hears the client's alert and says so: wait for that line, so the next case counts only its own.
    for (let i = 0; i < 50 && refusals(fn).length === before; i++) await new Promise((r) => setTimeout(r, 20));
    const added = refusals(fn).slice(before);
    assert.equal(added.length, 1, JSON.stringify(added));
    assert.match(String(added[0]!['reason']), /bad certificate/);
  });

  test('a CA with exactly Crossplane’s subject but another key: refused', async () => {
    await refusedOnce(
      () => callLikeCrossplane(target, certs.impostor, request(), { authority: FUNCTION_AUTHORITY }),
      /not signed by the CA in ca\.crt/,
    );
  });

  test('an expired client certificate: refused', async () => {
    await refusedOnce(
      () => callLikeCrossplane(target, certs.expired, request(), { authority: FUNCTION_AUTHORITY }),
      /^expired /,
    );
  });

  test('a client certificate not yet valid: refused', async () => {
    await refusedOnce(
      () => callLikeCrossplane(target, certs.notYetValid, request(), { authority: FUNCTION_AUTHORITY }),
      /^not valid before /,
    );
  });

  test('a certificate of the CA meant for servers only: refused', async () => {
    await refusedOnce(
      () => callLikeCrossplane(target, certs.serverUsage, request(), { authority: FUNCTION_AUTHORITY }),
      /do not allow client authentication/,
    );
  });

  test('no client certificate: refused', async () => {
    const client = nodeClient(`localhost:${fn.port}`);
    try {
      await refusedOnce(() => client.run(request(), 5000), /^no client certificate$/);
    } finally {
      client.close();
    }
  });

  test('plaintext: refused', async () => {
    const client = dialWire(target);
    try {
      await refusedOnce(() => client.run(request(), 5000), /wrong version number|http request|unknown protocol/);
    } finally {
      client.close();
    }
  });

  test('verified once per connection: twenty calls on one connection, one verdict', async () => {
    const count = () => records(fn).filter((r) => r['msg'] === 'accepted a client certificate').length;
    const before = count();
    const client = nodeClient(`localhost:${fn.port}`, pem(certs.client, 'tls.key'), pem(certs.client, 'tls.crt'));
    try {
      for (let i = 0; i < 20; i++) {
        const out = await client.run(request(), 5000);
        assert.ok(out.ok, out.ok ? '' : out.details);
      }
    } finally {
      client.close();
    }
    assert.equal(count() - before, 1);
  });

  test('the start names the trusted CA by subject and fingerprint; no log holds a key or a certificate', () => {
    const ca = new X509Certificate(pem(certs.ca, 'ca.crt'));
    const start = records(fn).find((r) => String(r['msg']).startsWith('client certificates must be signed by'));
    assert.ok(start, 'a start line names the CA');
    assert.deepEqual(start['ca'], {
      subject: 'C=Earth, ST=Earth, L=Earth, O=Crossplane, CN=Crossplane',
      fingerprint256: ca.fingerprint256,
    });
    const logs = fn.logs();
    assert.doesNotMatch(logs, /BEGIN|PRIVATE KEY|MII[A-Za-z0-9+/]{20}/);
    for (const dir of [certs.ca, certs.client, certs.server, certs.impostor]) {
      const body = pem(dir, 'tls.key').toString().split('\n')[1]!;
      assert.ok(!logs.includes(body), `the key in ${dir} must not be logged`);
    }
  });
});

describe('the same certificates, judged by OpenSSL (what the server must not do)', { skip }, () => {
  test('a grpc-js server that lets OpenSSL verify clients refuses Crossplane', async () => {
    const certs = makeCrossplaneCerts();
    const server = new grpc.Server();
    const creds = grpc.ServerCredentials.createSsl(
      pem(certs.server, 'ca.crt'),
      [{ private_key: pem(certs.server, 'tls.key'), cert_chain: pem(certs.server, 'tls.crt') }],
      true,
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))),
    );
    try {
      const out = await callLikeCrossplane(`127.0.0.1:${port}`, certs.client, request(), {
        authority: FUNCTION_AUTHORITY,
        timeoutMs: 5000,
      });
      assert.equal(out.ok, false, 'OpenSSL refuses the handshake');
      assert.match(out.ok ? '' : out.code, /Unavailable|DeadlineExceeded/);
    } finally {
      server.forceShutdown();
    }
  });
});
