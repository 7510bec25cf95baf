// TLS for a Database in a StatefulSet when the platform names a ClusterIssuer
// (defaults.database.tls): the Certificate, the server's arguments, volumes
// and (PostgreSQL's) pg_hba, the URIs that ask for TLS, and when each applies:
// a new Database waits for its certificate, a serving one goes on in plain
// text until it is issued and moves to TLS then. The servers really refusing
// plain connections are judged on a real node (test/e2e-real/database-tls.ts,
// run by database.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Obj } from '../../src/kube.js';
import { databaseXr, fatalOf, secretData } from '../support/database.js';
import { Loop } from '../support/loop.js';
import { healthyStatus } from '../support/observed-state.js';
import { validateObject } from '../support/schemas.js';
import type { DatabaseInput } from '../../src/blueprints/lifecycle/database.js';
import { liveTls, restoredTls } from '../../src/blueprints/lifecycle/placements/statefulset-tls.js';

const ISSUER = 'platform-ca';
const platform = (tls: Obj | undefined): Obj => ({
  apiVersion: 'platform.fn.example.com/v1beta1',
  kind: 'Input',
  ...(tls ? { defaults: { database: { tls } } } : {}),
});
const READY = { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'up to date' }] };
const ISSUING = { conditions: [{ type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuing' }] };

function podOf(loop: Loop): Obj {
  return ((loop.desired('statefulset')!['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
}
const podAnnotations = (loop: Loop) =>
  ((((loop.desired('statefulset')!['spec'] as Obj)['template'] as Obj)['metadata'] as Obj)['annotations'] ??
    {}) as Record<string, string>;
const serverOf = (loop: Loop) => (podOf(loop)['containers'] as Obj[])[0]!;
const uriOf = (loop: Loop) => secretData(loop.desired('connection'))['uri'] ?? '';

/** The StatefulSet's controller has its pod up for the current template. */
function serve(loop: Loop): void {
  const sts = loop.observed.get('statefulset')!;
  sts['status'] = healthyStatus(sts);
}

function loopWith(engine: 'postgres' | 'mysql', tls: Obj | undefined): Loop {
  return new Loop(databaseXr({ engine, storageGB: 10 }), platform(tls));
}

describe("a Database under the platform's TLS", () => {
  test('a new Database: the Certificate, the pg_hba, the server on TLS, and it waits for the certificate', () => {
    const loop = loopWith('postgres', { clusterIssuer: ISSUER });
    loop.apply(loop.call());
    assert.equal(fatalOf(loop.last!), undefined);
    const cert = loop.desired('tls-certificate')!;
    assert.equal(cert['kind'], 'Certificate');
    assert.deepEqual((cert['spec'] as Obj)['issuerRef'], {
      group: 'cert-manager.io',
      kind: 'ClusterIssuer',
      name: ISSUER,
    });
    assert.equal((cert['spec'] as Obj)['secretName'], 'orders-db-tls');
    assert.ok(
      ((cert['spec'] as Obj)['dnsNames'] as string[]).includes('orders-db.team-a.svc.cluster.local'),
      'the host of the connection Secret is among its names',
    );
    const hba = String(((loop.desired('tls-hba')!['data'] as Obj)['pg_hba.conf'] as string) ?? '');
    assert.match(hba, /^hostssl\s+all all all\s+scram-sha-256$/m);
    assert.match(hba, /^hostnossl all all all\s+reject$/m);
    assert.doesNotMatch(hba, /^host\s+all all all/m, 'no plain line for the network');
    assert.deepEqual(serverOf(loop)['args'], [
      '-c',
      'ssl=on',
      '-c',
      'ssl_cert_file=/etc/function-platform/tls/tls.crt',
      '-c',
      'ssl_key_file=/etc/function-platform/tls/tls.key',
      '-c',
      'hba_file=/etc/function-platform/hba/pg_hba.conf',
    ]);
    const volumes = podOf(loop)['volumes'] as Obj[];
    assert.deepEqual(volumes.find((v) => v['name'] === 'tls')?.['secret'], {
      secretName: 'orders-db-tls',
      defaultMode: 0o440,
    });
    assert.match(uriOf(loop), /\?sslmode=require$/);
    assert.match(secretData(loop.desired('connection'))['jdbc-uri']!, /\?sslmode=require$/);
    for (const key of ['tls-certificate', 'tls-hba', 'statefulset'])
      assert.deepEqual(validateObject(loop.desired(key)!), [], `${key} validates against its real schema`);
    // cert-manager has not issued it: the Database says so, the Certificate first.
    loop.observed.get('tls-certificate')!['status'] = ISSUING;
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], false, 'not Ready');
    assert.match(String(loop.status()['message']), /^Certificate orders-db-tls: /);
  });

  test('a serving Database goes on in plain text until its certificate is issued, then moves to TLS', () => {
    const loop = loopWith('postgres', undefined);
    loop.apply(loop.call());
    serve(loop);
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], true, 'Ready in plain text');
    assert.doesNotMatch(uriOf(loop), /sslmode/);
    // The platform team sets the issuer in the Composition.
    loop.input = platform({ clusterIssuer: ISSUER });
    loop.apply(loop.call());
    assert.ok(loop.desired('tls-certificate'), 'the Certificate is asked for');
    assert.equal(
      loop.status()['ready'],
      true,
      'still Ready on the call that first asks for the Certificate and pg_hba',
    );
    assert.equal(serverOf(loop)['args'], undefined, 'the server is not restarted before the certificate exists');
    loop.observed.get('tls-certificate')!['status'] = ISSUING;
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], true, 'a serving database stays Ready while cert-manager works');
    assert.doesNotMatch(uriOf(loop), /sslmode/, 'the URIs do not ask for what the server does not do yet');
    // Issued: one restart onto TLS; the URIs ask for it once the server runs on it, not before.
    const issued = { notAfter: '2027-03-01T00:00:00Z', revision: 1 };
    loop.observed.get('tls-certificate')!['status'] = { ...READY, ...issued };
    loop.apply(loop.call());
    assert.equal((serverOf(loop)['args'] as string[])[1], 'ssl=on');
    assert.doesNotMatch(uriOf(loop), /sslmode/, 'not while the pod still runs the plain server');
    serve(loop);
    loop.apply(loop.call());
    assert.match(uriOf(loop), /\?sslmode=require$/);
    // A later issuance fails while the pod restarts for another reason: the issued Secret is still there, so the
    // restart is not blamed on the certificate, and the URIs keep asking for TLS.
    loop.observed.get('tls-certificate')!['status'] = { ...ISSUING, ...issued };
    const sts = loop.observed.get('statefulset')!;
    sts['status'] = { ...healthyStatus(sts), readyReplicas: 0, availableReplicas: 0 };
    loop.apply(loop.call());
    assert.equal((serverOf(loop)['args'] as string[])[1], 'ssl=on');
    assert.doesNotMatch(String(loop.status()['message']), /Certificate/);
    assert.match(uriOf(loop), /\?sslmode=require$/);
    serve(loop);
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], true, 'its server runs: Ready');
    assert.equal(podAnnotations(loop)['function-platform.dev/tls-revision'], undefined, 'no restart before a renewal');
    // Renewed: PostgreSQL reads its certificate at start, so the server restarts once onto the new one.
    loop.observed.get('tls-certificate')!['status'] = { ...READY, ...issued, revision: 2 };
    loop.apply(loop.call());
    assert.equal(podAnnotations(loop)['function-platform.dev/tls-revision'], '2');
    // The platform takes TLS back: plain again, and the Certificate and pg_hba go.
    loop.input = platform(undefined);
    loop.apply(loop.call());
    assert.equal(serverOf(loop)['args'], undefined);
    assert.equal(loop.desired('tls-certificate'), undefined);
    assert.equal(loop.desired('tls-hba'), undefined);
    assert.doesNotMatch(uriOf(loop), /sslmode/);
  });

  test('a restore builds its instance on TLS only when the certificate is Ready or the live one serves TLS; one built keeps what it has', () => {
    const call = (cert?: Obj) =>
      ({
        spec: { engine: 'postgres' },
        defaults: { database: { tls: { clusterIssuer: ISSUER } } },
        observed: new Map(cert ? [['tls-certificate', { kind: 'Certificate', status: cert }]] : []),
      }) as unknown as DatabaseInput;
    const onTls = { spec: { template: { spec: { volumes: [{ name: 'tls' }] } } } };
    const plain = { spec: { template: { spec: { volumes: [] } } } };
    assert.equal(restoredTls(call(ISSUING), undefined, plain), false, 'a restore never waits on cert-manager');
    assert.equal(restoredTls(call(READY), undefined, plain), true);
    assert.equal(restoredTls(call(ISSUING), undefined, onTls), true, 'beside a live server on TLS');
    assert.equal(restoredTls(call(READY), plain, onTls), false, 'never restarted under its restore Job');
    assert.equal(liveTls(call(ISSUING), undefined), true, "a new Database's first server waits for it");
    assert.equal(liveTls(call(ISSUING), plain), false);
    assert.equal(liveTls(call(READY), plain), true);
  });

  test('mysql: the Certificate, the server told to require TLS, no pg_hba, and URIs that ask for it', () => {
    const loop = loopWith('mysql', { clusterIssuer: ISSUER });
    loop.apply(loop.call());
    assert.equal(fatalOf(loop.last!), undefined);
    assert.equal(loop.desired('tls-certificate')?.['kind'], 'Certificate');
    assert.equal(loop.desired('tls-hba'), undefined, 'a pg_hba is PostgreSQL only');
    assert.deepEqual(serverOf(loop)['args'], [
      '--ssl-cert=/etc/function-platform/tls/tls.crt',
      '--ssl-key=/etc/function-platform/tls/tls.key',
      '--require-secure-transport=ON',
    ]);
    assert.deepEqual(
      (serverOf(loop)['volumeMounts'] as Obj[]).map((m) => m['mountPath']),
      ['/var/lib/mysql', '/etc/function-platform/tls'],
    );
    assert.deepEqual(
      (podOf(loop)['volumes'] as Obj[]).map((v) => v['name']),
      ['tls'],
      'the certificate only: no pg_hba volume',
    );
    assert.equal(
      loop.last!.results.find((r) => r.reason === 'TlsNotServed'),
      undefined,
    );
    for (const key of ['tls-certificate', 'statefulset'])
      assert.deepEqual(validateObject(loop.desired(key)!), [], `${key} validates against its real schema`);
    // Issued and rolled out: MySQL's own URI word, and Connector/J's.
    loop.observed.get('tls-certificate')!['status'] = { ...READY, notAfter: '2027-03-01T00:00:00Z', revision: 1 };
    serve(loop);
    loop.apply(loop.call());
    assert.equal(loop.status()['ready'], true);
    assert.match(uriOf(loop), /^mysql:\/\/.*:3306\/orders\?ssl-mode=REQUIRED$/);
    assert.match(secretData(loop.desired('connection'))['jdbc-uri']!, /^jdbc:mysql:.*\?sslMode=REQUIRED$/);
  });

  test('an unknown field or a bad issuer name in defaults.database.tls is Fatal, naming it', () => {
    for (const [tls, field] of [
      [{ clusterIssuer: ISSUER, ca: 'x' }, 'defaults.database.tls'],
      [{ clusterIssuer: 'Not_A_Name' }, 'defaults.database.tls.clusterIssuer'],
      [{}, 'defaults.database.tls'],
    ] as const) {
      const loop = loopWith('postgres', tls);
      const fatal = fatalOf(loop.call());
      assert.ok(fatal, `Fatal for ${JSON.stringify(tls)}`);
      assert.ok(fatal.message.includes(field), `${fatal.message} names ${field}`);
    }
  });
});
