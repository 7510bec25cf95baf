// Mutual TLS when the certificates are not what they should be: a missing,
// unreadable, empty or garbage file, or a key that is not the certificate's,
// stops the server at start with an error naming the file, and a non-zero
// exit. (A ca.crt with no certificate in it used to start a server that
// refused every client; see src/server.ts.) A CA bundle still works.
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { makeCerts, type TestCerts } from '../../dev/infra/pki.js';
import { startFunction } from '../support/function-process.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { canSwitchUser, CROSSPLANE_UID, runToExit } from '../support/run-to-exit.js';
import { dialWire } from '../support/wire.js';

let certs: TestCerts;
const dirs: string[] = [];

/** A copy of the good certificate directory, with `change` applied to it. */
function certDir(change: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'fp-badcerts-'));
  dirs.push(dir);
  for (const f of ['ca.crt', 'tls.crt', 'tls.key']) cpSync(join(certs.serverDir, f), join(dir, f));
  change(dir);
  return dir;
}

/** Starting with `dir` fails: exit code 1, and the error names the file and says what is wrong. */
async function failsToStart(dir: string, message: RegExp, opts: { uid?: number } = {}): Promise<void> {
  const exit = await runToExit(['--address', '127.0.0.1:0', '--tls-server-certs-dir', dir], {
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.uid } : {}),
  });
  assert.equal(exit.signal, null, `the server started and had to be killed:\n${exit.output}`);
  assert.equal(exit.code, 1, exit.output);
  assert.doesNotMatch(exit.output, /listening/, 'it must not listen');
  const line = exit.output.split('\n').find((l) => l.includes('cannot start the server'));
  assert.ok(line, `no "cannot start the server" log line:\n${exit.output}`);
  assert.match(JSON.parse(line).error as string, message);
}

const GARBAGE = 'this is not a certificate\n';
const BROKEN_PEM =
  '-----BEGIN CERTIFICATE-----\nTUlJQm9URE5DQVZ5Z0F3SUJBZ0lVZmFrZWZha2VmYWtl\n-----END CERTIFICATE-----\n';

describe('TLS certificates at start', () => {
  before(() => {
    certs = makeCerts();
  });
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('garbage ca.crt: a clear error naming it, not a server that refuses everyone', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'ca.crt'), GARBAGE)),
      /\/ca\.crt holds no PEM certificate.*TLS needs tls\.crt, tls\.key and ca\.crt/,
    );
  });

  test('empty ca.crt', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'ca.crt'), '')),
      /\/ca\.crt holds no PEM certificate/,
    );
  });

  test('a PEM block in ca.crt that is not a certificate', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'ca.crt'), BROKEN_PEM)),
      /\/ca\.crt: certificate 1 cannot be parsed/,
    );
  });

  test('garbage tls.crt', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'tls.crt'), GARBAGE)),
      /\/tls\.crt holds no PEM certificate/,
    );
  });

  test('garbage tls.key', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'tls.key'), GARBAGE)),
      /\/tls\.key is not a PEM private key/,
    );
  });

  test('tls.key that is not the key of tls.crt', async () => {
    await failsToStart(
      certDir((d) => writeFileSync(join(d, 'tls.key'), certs.clientKey)),
      /\/tls\.key is not the key of the certificate in .*\/tls\.crt/,
    );
  });

  test('tls.key is a directory (unreadable as a file)', async () => {
    await failsToStart(
      certDir((d) => {
        rmSync(join(d, 'tls.key'));
        mkdirSync(join(d, 'tls.key'));
      }),
      /cannot read .*\/tls\.key \(EISDIR\)/,
    );
  });

  test('tls.key without read permission for the function’s user', async () => {
    const dir = certDir((d) => {
      chmodSync(d, 0o755);
      for (const f of ['ca.crt', 'tls.crt']) chmodSync(join(d, f), 0o644);
      chmodSync(join(d, 'tls.key'), 0o000);
    });
    // Root reads anything: run as Crossplane's uid when the tests are root, else as ourselves.
    if (canSwitchUser) await failsToStart(dir, /cannot read .*\/tls\.key \(EACCES\)/, { uid: CROSSPLANE_UID });
    else await failsToStart(dir, /cannot read .*\/tls\.key \(EACCES\)/);
  });

  test('a CA bundle in ca.crt (another CA first) starts and serves a client of ours', async () => {
    const other = makeCerts();
    dirs.push(other.serverDir);
    const dir = certDir((d) =>
      writeFileSync(join(d, 'ca.crt'), Buffer.concat([readFileSync(join(other.serverDir, 'ca.crt')), certs.ca])),
    );
    const fn = await startFunction({ insecure: false, args: ['--tls-server-certs-dir', dir] });
    const client = dialWire(`localhost:${fn.port}`, {
      credentials: grpc.credentials.createSsl(certs.ca, certs.clientKey, certs.clientCert),
    });
    try {
      const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;
      const out = await client.run(buildRequest(seed), 10_000);
      assert.ok(out.ok, out.ok ? '' : out.details);
      assert.ok(out.rsp.desired?.resources['deployment-blue']);
    } finally {
      client.close();
      assert.equal(await fn.stop(), 0);
    }
  });
});
