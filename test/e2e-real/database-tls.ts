// TLS for Databases in the cluster, on a real node under real Crossplane
// (run by database.test.ts on its control plane, after its own tests): the
// platform names a ClusterIssuer in a Composition's Input
// (defaults.database.tls); the server really runs with the issued key (mounted
// by the real kubelet, in the modes PostgreSQL insists on), really refuses a
// plain connection from another pod, serves one that verifies its certificate
// against the Service's name, and its backup Job's dump goes over TLS.
// A serving Database moves to TLS only once its certificate is issued; a new
// one waits for it before it ever starts. MySQL (MariaDB 10.11 in the stand-in
// image) requires TLS too: its backup and restore Jobs' clients, and the probe,
// prefer TLS, so a dump and a restore go over it.
//
// Stand-in, named so: cert-manager is not installed (only its CRD, from
// ../shared/crds); test/support/cert-manager-stand-in.ts plays CERT-MANAGER's
// CA issuer with real keys and certificates.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../support/apiserver.js';
import { type CertManagerStandIn, startCertManagerStandIn } from '../support/cert-manager-stand-in.js';
import { SHARED_CRDS } from '../../dev/infra/paths.js';
import type { ControlPlane } from '../support/control-plane.js';
import { compositionWithDatabaseDefaults, eventually, startApplicationPod } from '../support/e2e.js';

const NS = 'team-a';
const ISSUER = 'platform-ca';
const TLS_COMPOSITION = 'databases-tls.example.com';
const ROWS = 1000;

let cp: ControlPlane;
let certManager: CertManagerStandIn;
const ref = (kind: string, name: string) => ({ apiVersion: 'example.com/v1', kind, metadata: { name, namespace: NS } });
const get = (kind: string, name: string) => cp.client.getObj(ref(kind, name));

/**
 * `psql` in the application pod with a conninfo string (a URI may hold the password too); the password and the
 * conninfo go in on stdin, never as arguments, which the process list and the API server's logs would show.
 */
async function psql(conninfo: string, sql: string, password: string): Promise<{ code: number; out: string }> {
  const r = await cp.kubectl(
    [
      'exec',
      '-i',
      '-n',
      NS,
      'tls-app',
      '--',
      'sh',
      '-c',
      'read -r PGPASSWORD; read -r CONNINFO; export PGPASSWORD; PGCONNECT_TIMEOUT=10 psql "$CONNINFO" -v ON_ERROR_STOP=1 -tAq -c "$1" 2>&1',
      'sh',
      sql,
    ],
    { allowFail: true, input: `${password}\n${conninfo}\n` },
  );
  return { code: r.code, out: r.stdout.trim() };
}

async function connection(db: string): Promise<Record<string, string>> {
  const s = await cp.client.getObj({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${db}-db-connection`, namespace: NS },
  });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((s?.['data'] ?? {}) as Record<string, string>))
    out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** The conninfo that verifies the server's certificate against the CA and the host name applications use. */
const verifying = (c: Record<string, string>) =>
  `host=${c['host']} port=${c['port']} user=${c['username']} dbname=${c['dbname']} sslmode=verify-full sslrootcert=/etc/platform-ca/ca.crt`;
const plain = (c: Record<string, string>) =>
  `host=${c['host']} port=${c['port']} user=${c['username']} dbname=${c['dbname']} sslmode=disable`;
const SSL_IN_USE = 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()';

/**
 * The Database serving: status.ready. Not phase Ready: backup trouble makes the phase Degraded while it serves
 * (on the suite's moved clock a scheduled backup may start at once, and the move to TLS restarts the server
 * under its dump: seen in CI).
 */
async function ready(db: string, timeoutMs = 240_000): Promise<Json> {
  return eventually(
    `Database ${db} Ready`,
    async () => {
      const o = await get('Database', db);
      return o?.['status']?.['ready'] === true ? o : undefined;
    },
    timeoutMs,
    250,
  );
}

function database(name: string, composition?: string, engine: 'postgres' | 'mysql' = 'postgres'): string {
  const store = cp.objectStore!;
  return `apiVersion: example.com/v1
kind: Database
metadata: {name: ${name}, namespace: ${NS}}
spec:
  engine: ${engine}
  storageGB: 1
${composition ? `  crossplane: {compositionRef: {name: ${composition}}}\n` : ''}  backup:
    objectStore:
      bucket: ${store.bucket}
      region: ${store.region}
      endpoint: ${store.endpoint}
      prefix: databases
      credentialsSecretRef: {name: backup-store}
`;
}

/**
 * `mysql` in the MySQL application pod, to the Database of connection `c`, with extra client options; the
 * password goes in on stdin. MariaDB's client: --ssl-verify-server-cert checks the name against the host.
 */
async function mysql(c: Record<string, string>, options: string, sql: string): Promise<{ code: number; out: string }> {
  const r = await cp.kubectl(
    [
      'exec',
      '-i',
      '-n',
      NS,
      'tls-mysql-app',
      '--',
      'sh',
      '-c',
      `read -r MYSQL_PWD; export MYSQL_PWD; mysql --connect-timeout=10 -N -B ${options} -h "$1" -P "$2" -u "$3" "$4" -e "$5" 2>&1`,
      'sh',
      c['host']!,
      c['port']!,
      c['username']!,
      c['dbname']!,
      sql,
    ],
    { allowFail: true, input: `${c['password']}\n` },
  );
  return { code: r.code, out: r.stdout.trim() };
}
const VERIFYING = '--ssl-ca=/etc/platform-ca/ca.crt --ssl-verify-server-cert';
/** The MySQL Database's rows, as read before its backup (the restore test reads them back). */
let original = '';
const MYSQL_DIGEST = `SET SESSION group_concat_max_len = 67108864; SELECT CONCAT(COUNT(*), ' ', MD5(GROUP_CONCAT(CONCAT(id, ':', v) ORDER BY id SEPARATOR ','))) FROM items`;

/** The suite, on the control plane `controlPlane` returns (a real node, the store's Secret backup-store in team-a). */
export function describeDatabaseTls(controlPlane: () => ControlPlane): void {
  describe('over TLS', () => {
    before(async () => {
      cp = controlPlane();
      await cp.kubectl(['apply', '-f', join(SHARED_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml')]);
      await cp.client.waitEstablished('certificates.cert-manager.io');
      certManager = startCertManagerStandIn(cp.client, NS);
      certManager.hold = true;
      // The platform team's second Composition: the installed one, with TLS from its ClusterIssuer in the Input.
      await compositionWithDatabaseDefaults(cp, 'databases.example.com', TLS_COMPOSITION, {
        tls: { clusterIssuer: ISSUER },
      });
      // The platform's CA bundle, where applications read it (as trust-manager would put it).
      await cp.client.applyObj(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'platform-ca', namespace: NS },
          data: { 'ca.crt': certManager.caPem },
        },
        { fieldManager: 'e2e-real', force: true },
      );
      // The applications: a pod of each engine's image with its client and the CA bundle; they never restart.
      const ca = {
        volumeMounts: [{ name: 'ca', mountPath: '/etc/platform-ca', readOnly: true }],
        volumes: [{ name: 'ca', configMap: { name: 'platform-ca' } }],
      };
      await startApplicationPod(cp, NS, 'tls-app', 'postgres:17', ca);
      await startApplicationPod(cp, NS, 'tls-mysql-app', 'mysql:8.4', ca);
    });
    after(async () => {
      await certManager?.stop();
    });

    describe('PostgreSQL', () => {
      test('a serving Database goes on in plain text until its certificate is issued, then moves to TLS', async (t) => {
        await cp.kubectl(['apply', '-f', '-'], { input: database('ledger') });
        await ready('ledger');
        let c = await connection('ledger');
        assert.doesNotMatch(c['uri']!, /sslmode/);
        const create = `CREATE TABLE items (id int PRIMARY KEY, v text NOT NULL); INSERT INTO items SELECT g, md5(g::text) FROM generate_series(1, ${ROWS}) g`;
        const wrote = await psql(plain(c), create, c['password']!);
        assert.equal(wrote.code, 0, wrote.out);

        // The platform moves it to its TLS Composition; cert-manager has not issued yet.
        const moved = Date.now();
        await cp.kubectl([
          'patch',
          'database',
          'ledger',
          '-n',
          NS,
          '--type',
          'merge',
          '-p',
          JSON.stringify({ spec: { crossplane: { compositionRef: { name: TLS_COMPOSITION } } } }),
        ]);
        await eventually('Certificate ledger-db-tls', () =>
          cp.client.getObj({
            apiVersion: 'cert-manager.io/v1',
            kind: 'Certificate',
            metadata: { name: 'ledger-db-tls', namespace: NS },
          }),
        );
        const waiting = await get('Database', 'ledger');
        assert.equal(
          waiting?.['status']?.['ready'],
          true,
          'a serving database stays Ready while its certificate is issued',
        );
        const meanwhile = await psql(plain(c), 'SELECT count(*) FROM items', c['password']!);
        assert.deepEqual(meanwhile, { code: 0, out: String(ROWS) }, 'and goes on serving in plain text');

        // Issued: one restart onto TLS, then the URIs ask for it.
        certManager.hold = false;
        c = await eventually(
          'the connection Secret asks for TLS',
          async () => {
            const now = await connection('ledger');
            return /\?sslmode=require$/.test(now['uri'] ?? '') ? now : undefined;
          },
          180_000,
          500,
        );
        await ready('ledger');
        const onTls = await eventually(
          'ledger serving over TLS',
          async () => {
            const r = await psql(verifying(c), SSL_IN_USE, c['password']!);
            return r.code === 0 ? r : undefined;
          },
          120_000,
          1000,
        );
        t.diagnostic(`composition switched to serving over TLS: ${Date.now() - moved} ms`);
        assert.equal(
          onTls.out,
          't',
          'the connection is encrypted, and the certificate verifies for the host in the Secret',
        );
        const refused = await psql(plain(c), 'SELECT 1', c['password']!);
        assert.notEqual(refused.code, 0, 'a plain connection from another pod is refused');
        assert.match(refused.out, /pg_hba\.conf rejects connection for host .*no encryption/);
        t.diagnostic(`plain connection refused: ${refused.out.split('\n').pop()}`);
        const uri = await psql(c['uri']!, `SELECT (${SSL_IN_USE})::text || ' ' || count(*) FROM items`, c['password']!);
        assert.deepEqual(
          uri,
          { code: 0, out: `true ${ROWS}` },
          'the uri of the Secret connects over TLS and every row is there',
        );
      });

      test("a DatabaseBackup's dump runs over TLS and completes", async () => {
        await cp.kubectl(['apply', '-f', '-'], {
          input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: ledger-tls, namespace: ${NS}}\nspec: {databaseRef: {name: ledger}}\n`,
        });
        const done = await eventually(
          'DatabaseBackup ledger-tls finished',
          async () => {
            const b = await get('DatabaseBackup', 'ledger-tls');
            return ['Completed', 'Failed'].includes(b?.['status']?.['phase']) ? b : undefined;
          },
          180_000,
          500,
        );
        assert.equal(done['status']['phase'], 'Completed', String(done['status']['message']));
      });

      test('a new Database under TLS waits for its certificate, then starts on TLS', async (t) => {
        certManager.hold = true;
        await cp.kubectl(['apply', '-f', '-'], { input: database('vault', TLS_COMPOSITION) });
        const waiting = await eventually(
          'Database vault waiting for its certificate',
          async () => {
            const o = await get('Database', 'vault');
            return String(o?.['status']?.['message'] ?? '').startsWith('Certificate vault-db-tls') ? o : undefined;
          },
          120_000,
          250,
        );
        t.diagnostic(String(waiting['status']['message']));
        assert.equal(waiting['status']['ready'], false);
        const started = Date.now();
        certManager.hold = false;
        await ready('vault');
        const c = await connection('vault');
        assert.match(c['uri']!, /\?sslmode=require$/);
        const r = await psql(verifying(c), SSL_IN_USE, c['password']!);
        assert.deepEqual(r, { code: 0, out: 't' });
        t.diagnostic(`certificate issued to Ready on TLS: ${Date.now() - started} ms`);
      });
    });

    describe('MySQL', () => {
      test('a new mysql Database starts on TLS: a client verifying its certificate connects over TLS, a plain one is refused', async (t) => {
        certManager.hold = false;
        const started = Date.now();
        await cp.kubectl(['apply', '-f', '-'], { input: database('till', TLS_COMPOSITION, 'mysql') });
        await ready('till');
        const c = await connection('till');
        t.diagnostic(`apply to Ready on TLS: ${Date.now() - started} ms`);
        assert.match(c['uri']!, /^mysql:\/\/.*\?ssl-mode=REQUIRED$/);
        assert.match(c['jdbc-uri']!, /\?sslMode=REQUIRED$/);
        const rows = `CREATE TABLE items (id int PRIMARY KEY, v varchar(64) NOT NULL); INSERT INTO items WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${ROWS}) SELECT n, MD5(n) FROM s`;
        const wrote = await mysql(c, VERIFYING, rows);
        assert.equal(wrote.code, 0, wrote.out);
        const onTls = await mysql(c, VERIFYING, "SHOW SESSION STATUS LIKE 'Ssl_version'");
        assert.equal(onTls.code, 0, onTls.out);
        assert.match(
          onTls.out,
          /^Ssl_version\tTLSv1\.[23]$/,
          'encrypted, and the certificate verifies for the host in the Secret',
        );
        const refused = await mysql(c, '--skip-ssl', 'SELECT 1');
        assert.notEqual(refused.code, 0, 'a plain connection from another pod is refused');
        // MySQL says "Connections using insecure transport are prohibited"; MariaDB (the stand-in) says only
        // "Access denied": the same user and password over TLS, just above, shows the transport is what it refuses.
        assert.match(refused.out, /insecure transport are prohibited|Access denied for user/);
        t.diagnostic(`plain connection refused: ${refused.out.split('\n').pop()}`);
      });

      test("mysql: a backup's dump goes over TLS and completes", async () => {
        const c = await connection('till');
        original = (await mysql(c, VERIFYING, MYSQL_DIGEST)).out;
        assert.match(original, new RegExp(`^${ROWS} `));
        await cp.kubectl(['apply', '-f', '-'], {
          input: `apiVersion: example.com/v1\nkind: DatabaseBackup\nmetadata: {name: till-now, namespace: ${NS}}\nspec: {databaseRef: {name: till}}\n`,
        });
        const done = await eventually(
          'DatabaseBackup till-now finished',
          async () => {
            const b = await get('DatabaseBackup', 'till-now');
            return ['Completed', 'Failed'].includes(b?.['status']?.['phase']) ? b : undefined;
          },
          180_000,
          500,
        );
        assert.equal(done['status']['phase'], 'Completed', String(done['status']['message']));
      });

      test("mysql: a DatabaseRestore's load goes over TLS; every row is back", async (t) => {
        const c = await connection('till');
        assert.match(original, new RegExp(`^${ROWS} `), 'the backup test ran first');
        const deleted = await mysql(c, VERIFYING, 'DELETE FROM items WHERE id > 10');
        assert.equal(deleted.code, 0, deleted.out);
        const started = Date.now();
        await cp.kubectl(['apply', '-f', '-'], {
          input: `apiVersion: example.com/v1\nkind: DatabaseRestore\nmetadata: {name: till-undo, namespace: ${NS}}\nspec: {databaseRef: {name: till}, fromBackup: {name: till-now}}\n`,
        });
        await cp.kubectl(['annotate', 'database', 'till', '-n', NS, `test.function-platform.dev/nudge=${Date.now()}`]);
        const switched = await eventually(
          'DatabaseRestore till-undo switched',
          async () => {
            const r = await get('DatabaseRestore', 'till-undo');
            return ['Switched', 'Failed'].includes(r?.['status']?.['phase']) ? r : undefined;
          },
          240_000,
          500,
        );
        assert.equal(switched['status']['phase'], 'Switched', String(switched['status']['message']));
        const back = await eventually(
          'the restored rows, over TLS',
          async () => {
            const r = await mysql(c, VERIFYING, MYSQL_DIGEST);
            return r.code === 0 && r.out === original ? r.out : undefined;
          },
          60_000,
          500,
        );
        t.diagnostic(`DatabaseRestore applied to Switched: ${Date.now() - started} ms; read back over TLS: ${back}`);
      });
    });
  });
}
