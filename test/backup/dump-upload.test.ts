// The backup Job's own commands (src/blueprints/lifecycle/commands.ts), run for
// real: PostgreSQL 15 and MariaDB 10.11 from Debian's packages, moto's S3 as
// the object store, the AWS CLI as the upload step runs it. Rows go in, are
// dumped, uploaded, downloaded and restored into an empty database, and come
// out the same; a missing bucket, wrong credentials and a killed dump fail
// with the message a user reads, and never leave anything at the final key.
// The restore commands restore it back (the same rows), refuse a backup
// damaged at rest (its checksum), a truncated one and a database that holds
// data, and leave the target empty when they fail.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  backupKey,
  countScript,
  downloadScript,
  dumpScript,
  removeScript,
  restoreScript,
  standbyDumpScript,
  standbyUploadScript,
  uploadScript,
  verifyScript,
} from '../../src/blueprints/lifecycle/commands.js';
import { type DatabaseServer, databasesMissing, startMariadb, startPostgres } from '../../dev/infra/databases.js';
import { type Moto, motoServerPath, startMotoServer } from '../../dev/infra/moto.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { inCI } from '../support/tools.js';

const AWS_BIN = join(repoRoot, '.cache', 'awscli-venv', 'bin');
function skipReason(): string | undefined {
  const why =
    databasesMissing() ??
    (motoServerPath() ? undefined : 'moto missing: run `bash scripts/install-moto.sh`') ??
    (existsSync(join(AWS_BIN, 'aws')) ? undefined : 'the AWS CLI is missing: run `bash scripts/install-databases.sh`');
  if (why && inCI()) throw new Error(`backup commands: ${why} (CI must run every suite)`);
  if (why) console.warn(`\n!!! SKIPPING the backup commands against real servers: ${why} !!!\n`);
  return why;
}
const skip = skipReason();

const ROWS = 20_000;
const APP_PASSWORD = 'app-password-for-the-test-0123';
const KEYS = {
  AWS_ACCESS_KEY_ID: 'AKIATESTBACKUP000000',
  AWS_SECRET_ACCESS_KEY: 'backup-test-secret-not-real',
  AWS_REGION: 'eu-west-1',
};

interface Run {
  code: number;
  output: string;
  ms: number;
}

function sh(script: string, env: Record<string, string>): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', script],
      { env: { PATH: `${AWS_BIN}:${process.env['PATH']}`, HOME: tmpdir(), ...env }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({
          code: err ? Number((err as { code?: number }).code ?? 1) : 0,
          output: `${stdout}${stderr}`,
          ms: Date.now() - started,
        });
      },
    );
  });
}

const aws = (moto: Moto, ...args: string[]) =>
  execFileSync(join(AWS_BIN, 'aws'), ['--endpoint-url', moto.endpoint, ...args], {
    env: { ...process.env, ...KEYS, HOME: tmpdir() },
    encoding: 'utf8',
    stdio: 'pipe',
  });
const keysIn = (moto: Moto, bucket: string): string[] =>
  aws(moto, 's3', 'ls', '--recursive', `s3://${bucket}/`)
    .split('\n')
    .filter(Boolean)
    .map((l) => l.trim().split(/\s+/).pop()!);

/** The engines as the tests drive them: creating the app's database, filling it, restoring into another. */
interface Engine {
  name: 'postgres' | 'mysql';
  start(): Promise<DatabaseServer>;
  /** Makes database `db` with an app user that owns it, and `rows` rows in orders. */
  fill(s: DatabaseServer, db: string, rows: number): void;
  /** Restores the dump file into the empty database `db` (the test's own way, to check the dump). */
  restore(s: DatabaseServer, db: string, file: string): void;
  /** Makes an empty database `db` the app user may restore into. */
  empty(s: DatabaseServer, db: string): void;
  /** Tables in `db`. */
  tables(s: DatabaseServer, db: string): number;
  /** Row count and a checksum of the rows. */
  digest(s: DatabaseServer, db: string): string;
}

const postgres: Engine = {
  name: 'postgres',
  start: startPostgres,
  fill(s, db, rows) {
    s.sql('postgres', `CREATE ROLE app LOGIN PASSWORD '${APP_PASSWORD}'`);
    s.sql('postgres', `CREATE DATABASE ${db} OWNER app`);
    s.sql(
      db,
      `SET ROLE app; CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, total numeric(10,2) NOT NULL); INSERT INTO orders SELECT i, 'customer-' || i, i * 1.5 FROM generate_series(1, ${rows}) i`,
    );
  },
  restore(s, db, file) {
    s.sql('postgres', `CREATE DATABASE ${db}`);
    execFileSync(
      'pg_restore',
      ['-h', s.host, '-p', String(s.port), '-U', s.user, '-d', db, '--no-owner', '--exit-on-error', file],
      { env: { ...process.env, PGPASSWORD: s.password }, stdio: 'pipe' },
    );
  },
  empty(s, db) {
    s.sql('postgres', `CREATE DATABASE ${db} OWNER app`);
  },
  tables: (s, db) => Number(s.sql(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").trim()),
  digest: (s, db) =>
    s
      .sql(db, "SELECT count(*), md5(string_agg(id || ':' || customer || ':' || total, ',' ORDER BY id)) FROM orders")
      .trim(),
};

const mysql: Engine = {
  name: 'mysql',
  start: startMariadb,
  fill(s, db, rows) {
    s.sql(
      '',
      `CREATE DATABASE ${db}; CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY '${APP_PASSWORD}'; GRANT ALL ON ${db}.* TO 'app'@'127.0.0.1';`,
    );
    s.sql(
      db,
      `CREATE TABLE orders (id int PRIMARY KEY, customer varchar(64) NOT NULL, total decimal(10,2) NOT NULL) ENGINE=InnoDB; INSERT INTO orders SELECT seq, CONCAT('customer-', seq), seq * 1.5 FROM seq_1_to_${rows};`,
    );
  },
  restore(s, db, file) {
    s.sql('', `CREATE DATABASE ${db}`);
    execFileSync('sh', ['-c', `mariadb --no-defaults -h ${s.host} -P ${s.port} -u${s.user} ${db} < "${file}"`], {
      env: { ...process.env, MYSQL_PWD: s.password },
      stdio: 'pipe',
    });
  },
  empty(s, db) {
    s.sql('', `CREATE DATABASE ${db}; GRANT ALL ON ${db}.* TO 'app'@'127.0.0.1';`);
  },
  tables: (s, db) =>
    Number(s.sql('', `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '${db}'`).trim()),
  digest: (s, db) =>
    s
      .sql(
        db,
        "SELECT COUNT(*), MD5(GROUP_CONCAT(CONCAT(id, ':', customer, ':', total) ORDER BY id SEPARATOR ',')) FROM orders",
      )
      .trim(),
};

for (const engine of [postgres, mysql]) {
  describe(`backup commands against real ${engine.name === 'postgres' ? 'PostgreSQL 15' : 'MariaDB 10.11'} and moto's S3`, {
    skip,
  }, () => {
    let server: DatabaseServer;
    let moto: Moto;
    let work: string;
    const bucket = `backups-${engine.name}`;
    const dumpEnv = (out: string) => ({
      HOST: server.host,
      PORT: String(server.port),
      DB_USER: 'app',
      DB_PASSWORD: APP_PASSWORD,
      DB_NAME: 'orders',
      OUT: out,
    });
    const uploadEnv = (file: string, key: string, extra: Record<string, string> = {}) => ({
      IN: file,
      BUCKET: bucket,
      KEY: key,
      ...KEYS,
      S3_ENDPOINT: moto.endpoint,
      TERMINATION_LOG: join(work, `${key.replace(/\//g, '_')}.termination`),
      ...extra,
    });

    before(async () => {
      [server, moto] = await Promise.all([engine.start(), startMotoServer(motoServerPath()!)]);
      work = mkdtempSync(join(tmpdir(), `fp-backup-${engine.name}-`));
      engine.fill(server, 'orders', ROWS);
      aws(moto, 's3', 'mb', `s3://${bucket}`);
    });
    after(async () => {
      await Promise.all([server?.stop(), moto?.stop()]);
    });

    test('dump, upload, download, restore into an empty database: the same rows', async (t) => {
      const file = join(work, 'orders.dump');
      const dump = await sh(dumpScript(engine.name), dumpEnv(file));
      assert.equal(dump.code, 0, dump.output);
      const key = backupKey('team-a', 'orders', 'orders-20261202-0300', engine.name);
      const upload = await sh(uploadScript(), uploadEnv(file, key));
      assert.equal(upload.code, 0, upload.output);
      const reported = JSON.parse(readFileSync(uploadEnv(file, key).TERMINATION_LOG, 'utf8')) as {
        key: string;
        sizeBytes: number;
      };
      assert.deepEqual(
        reported,
        { key, sizeBytes: readFileSync(file).length },
        'the termination message says what was stored',
      );
      assert.deepEqual(keysIn(moto, bucket), [key], 'only the final key is left');
      const back = join(work, 'downloaded');
      aws(moto, 's3', 'cp', '--only-show-errors', `s3://${bucket}/${key}`, back);
      const restoreStart = Date.now();
      engine.restore(server, 'restored', back);
      const restoreMs = Date.now() - restoreStart;
      const [before, after] = [engine.digest(server, 'orders'), engine.digest(server, 'restored')];
      assert.equal(after, before);
      assert.match(after, new RegExp(`^${ROWS}\\t[0-9a-f]{32}$`));
      t.diagnostic(
        `${ROWS} rows; dump ${dump.ms} ms (${reported.sizeBytes} bytes), upload ${upload.ms} ms, restore ${restoreMs} ms; digest ${after.replace('\t', ' ')}`,
      );
    });

    /** Downloads s3://bucket/key and restores it into `db` with the restore Job's own two steps. */
    async function restoreJob(key: string, db: string) {
      const file = join(work, `${db}.download`);
      const download = await sh(downloadScript(), {
        IN: file,
        BUCKET: bucket,
        KEY: key,
        ...KEYS,
        S3_ENDPOINT: moto.endpoint,
      });
      if (download.code !== 0) return { download, restore: undefined };
      const restore = await sh(restoreScript(engine.name), { ...dumpEnv(file), DB_NAME: db, IN: file });
      return { download, restore };
    }
    /** A dump of orders, uploaded under `key`; the local file's path. */
    async function storedDump(key: string): Promise<string> {
      const file = join(work, `${key.replace(/\//g, '_')}.src`);
      assert.equal((await sh(dumpScript(engine.name), dumpEnv(file))).code, 0);
      const upload = await sh(uploadScript(), uploadEnv(file, key));
      assert.equal(upload.code, 0, upload.output);
      return file;
    }

    test('the restore Job’s commands: download, restore into an empty database, the same rows', async (t) => {
      const key = backupKey('team-a', 'orders', 'orders-db-202612020300', engine.name);
      await storedDump(key);
      engine.empty(server, 'restored_by_job');
      const { download, restore } = await restoreJob(key, 'restored_by_job');
      assert.equal(download.code, 0, download.output);
      assert.match(download.output, /\(sha256 [0-9a-f]{64}\)/);
      assert.equal(restore?.code, 0, restore?.output);
      assert.equal(engine.digest(server, 'restored_by_job'), engine.digest(server, 'orders'));
      t.diagnostic(
        `${ROWS} rows restored by the Job's commands: download ${download.ms} ms, restore ${restore!.ms} ms`,
      );
    });

    /** The verification drill's commands, as the verify Job runs them: as the image's user, in a folder of its own. */
    async function drill(file: string): Promise<Run & { reported: string }> {
      const user = engine.name === 'postgres' ? 'postgres' : 'mysql';
      const [uid, gid] = ['-u', '-g'].map((f) => Number(execFileSync('id', [f, user], { encoding: 'utf8' }).trim()));
      const scratch = mkdtempSync(join(tmpdir(), `fp-drill-${engine.name}-`));
      // The dump inside the pod's own folder, as the Job's download step leaves it.
      const copy = join(scratch, 'backup');
      writeFileSync(copy, readFileSync(file));
      execFileSync('chown', ['-R', `${uid}:${gid}`, scratch]);
      const log = join(scratch, 'termination');
      const started = Date.now();
      const run = await new Promise<Run>((resolve) => {
        execFile(
          'sh',
          ['-c', verifyScript(engine.name)],
          {
            uid,
            gid,
            cwd: scratch,
            env: {
              PATH: `/usr/lib/postgresql/15/bin:/usr/sbin:${process.env['PATH']}`,
              HOME: scratch,
              IN: copy,
              WORK: scratch,
              TERMINATION_LOG: log,
            },
          },
          (err, stdout, stderr) =>
            resolve({
              code: err ? Number((err as { code?: number }).code ?? 1) : 0,
              output: `${stdout}${stderr}`,
              ms: Date.now() - started,
            }),
        );
      });
      const reported = existsSync(log) ? readFileSync(log, 'utf8') : '';
      rmSync(scratch, { recursive: true, force: true });
      return { ...run, reported };
    }

    test('the verification drill: the dump restored into a scratch server of its own, its tables and rows counted; a damaged one fails saying why', async (t) => {
      const file = join(work, 'drill.dump');
      assert.equal((await sh(dumpScript(engine.name), dumpEnv(file))).code, 0);
      const ok = await drill(file);
      assert.equal(ok.code, 0, ok.output);
      const counts = JSON.parse(ok.reported) as { tables: number; rows: number; expected: number; seconds: number };
      assert.deepEqual(
        { tables: counts.tables, rows: counts.rows, expected: counts.expected },
        { tables: 1, rows: ROWS, expected: 1 },
      );
      t.diagnostic(`${ROWS} rows verified in a scratch server: ${ok.ms} ms (${counts.seconds} s by the script)`);
      // Cut in half: the drill fails, and its message says why.
      const half = join(work, 'drill-half.dump');
      writeFileSync(half, readFileSync(file).subarray(0, Math.floor(readFileSync(file).length / 2)));
      const bad = await drill(half);
      assert.notEqual(bad.code, 0);
      assert.match(
        bad.reported,
        engine.name === 'postgres'
          ? /not a readable pg_dump archive|restore into a scratch server failed/
          : /incomplete/,
      );
    });

    test('a drill counts every table of many (past MySQL’s GROUP_CONCAT limit), and a privilege granted to a role the scratch server lacks does not fail it', async () => {
      // 30 tables of 7 rows each, one of them granted to a role of the live server alone.
      const tables = Array.from({ length: 30 }, (_, i) => `t_${String(i).padStart(2, '0')}_with_a_longish_name`);
      if (engine.name === 'postgres') {
        server.sql('postgres', 'CREATE ROLE reporting NOLOGIN');
        server.sql('postgres', 'CREATE DATABASE many OWNER app');
        server.sql(
          'many',
          `SET ROLE app; ${tables.map((n) => `CREATE TABLE ${n} (id int); INSERT INTO ${n} SELECT generate_series(1, 7);`).join(' ')} GRANT SELECT ON ${tables[0]} TO reporting`,
        );
      } else {
        server.sql('', "CREATE DATABASE many; GRANT ALL ON many.* TO 'app'@'127.0.0.1'");
        server.sql(
          'many',
          tables.map((n) => `CREATE TABLE ${n} (id int); INSERT INTO ${n} SELECT seq FROM seq_1_to_7;`).join(' '),
        );
      }
      const file = join(work, 'many.dump');
      const dumped = await sh(dumpScript(engine.name), { ...dumpEnv(file), DB_NAME: 'many' });
      assert.equal(dumped.code, 0, dumped.output);
      const ok = await drill(file);
      assert.equal(ok.code, 0, ok.output);
      const counts = JSON.parse(ok.reported) as { tables: number; rows: number };
      assert.deepEqual({ tables: counts.tables, rows: counts.rows }, { tables: 30, rows: 210 });
    });

    test('a backup damaged at rest fails its checksum; nothing is restored, the live database untouched', async () => {
      const key = backupKey('team-a', 'orders', 'damaged', engine.name);
      const file = await storedDump(key);
      const sum = aws(
        moto,
        's3api',
        'head-object',
        '--bucket',
        bucket,
        '--key',
        key,
        '--query',
        'Metadata.sha256',
        '--output',
        'text',
      ).trim();
      // Bit rot in the store: the same object, garbage in the middle, its metadata as it was.
      const damaged = Buffer.from(readFileSync(file));
      damaged.fill(0x7b, Math.floor(damaged.length / 2), Math.floor(damaged.length / 2) + 64);
      writeFileSync(`${file}.damaged`, damaged);
      aws(
        moto,
        's3',
        'cp',
        '--only-show-errors',
        '--metadata',
        `sha256=${sum}`,
        `${file}.damaged`,
        `s3://${bucket}/${key}`,
      );
      engine.empty(server, 'after_damage');
      const { download, restore } = await restoreJob(key, 'after_damage');
      assert.equal(download.code, 5, download.output);
      assert.match(
        download.output,
        /does not match the checksum stored with it \(damaged at rest\); nothing was restored/,
      );
      assert.equal(restore, undefined);
      assert.equal(engine.tables(server, 'after_damage'), 0);
      assert.match(engine.digest(server, 'orders'), new RegExp(`^${ROWS}\\t`), 'the live database is untouched');
    });

    test('a truncated dump (no checksum to go by) is refused by the restore step, the target left empty', async () => {
      const file = join(work, 'to-truncate.dump');
      assert.equal((await sh(dumpScript(engine.name), dumpEnv(file))).code, 0);
      const bytes = readFileSync(file);
      writeFileSync(`${file}.cut`, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      engine.empty(server, 'after_truncated');
      const restore = await sh(restoreScript(engine.name), {
        ...dumpEnv(file),
        DB_NAME: 'after_truncated',
        IN: `${file}.cut`,
      });
      assert.notEqual(restore.code, 0, 'a truncated dump must not restore');
      assert.match(restore.output, engine.name === 'postgres' ? /rolled back|not a readable/ : /incomplete.*truncated/);
      assert.equal(engine.tables(server, 'after_truncated'), 0);
    });

    // MySQL cannot roll DDL back, so its restore drops what it made; PostgreSQL restores in one transaction (the truncated case shows that).
    if (engine.name === 'mysql')
      test('a restore that fails half-way leaves the target as empty as it found it', async () => {
        const file = join(work, 'half-way.sql');
        assert.equal((await sh(dumpScript(engine.name), dumpEnv(file))).code, 0);
        // The tables are created and filled, then a statement fails; the dump still ends as a whole one does.
        const text = readFileSync(file, 'utf8');
        const at = text.lastIndexOf('UNLOCK TABLES;');
        writeFileSync(
          `${file}.bad`,
          `${text.slice(0, at)}UNLOCK TABLES;\nCREATE VIEW big_orders AS SELECT id FROM orders WHERE total > 100;\nCREATE PROCEDURE noop() SELECT 1;\nTHIS IS NOT SQL;\n${text.slice(at + 14)}`,
        );
        engine.empty(server, 'half_way');
        const restore = await sh(restoreScript(engine.name), {
          ...dumpEnv(file),
          DB_NAME: 'half_way',
          IN: `${file}.bad`,
        });
        assert.equal(restore.code, 4, restore.output);
        assert.match(restore.output, /what it had created was dropped: database half_way is as empty as before/);
        assert.equal(engine.tables(server, 'half_way'), 0, 'tables and the view dropped');
        assert.equal(
          server.sql('', "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = 'half_way'").trim(),
          '0',
          'the routine dropped',
        );
      });

    test('a database that already holds data is refused, and keeps its data', async () => {
      const key = backupKey('team-a', 'orders', 'orders-db-202612020300', engine.name);
      const before = engine.digest(server, 'orders');
      const { restore } = await restoreJob(key, 'orders');
      assert.equal(restore?.code, 3, restore?.output);
      assert.match(restore!.output, /already holds \d+ (relations|tables): a restore never overwrites data/);
      assert.equal(engine.digest(server, 'orders'), before);
    });

    test('retention’s removal: the stored backup is gone, its neighbour stays; removing it again succeeds', async () => {
      const file = join(work, 'to-remove.dump');
      writeFileSync(file, 'an old dump');
      const old = backupKey('team-a', 'orders', 'orders-db-202611010300', engine.name);
      const kept = backupKey('team-a', 'orders', 'orders-db-202611020300', engine.name);
      for (const key of [old, kept]) assert.equal((await sh(uploadScript(), uploadEnv(file, key))).code, 0);
      const removeEnv = { BUCKET: bucket, KEY: old, ...KEYS, S3_ENDPOINT: moto.endpoint };
      const removal = await sh(removeScript(), removeEnv);
      assert.equal(removal.code, 0, removal.output);
      assert.match(removal.output, new RegExp(`removed s3://${bucket}/${old}`));
      const left = keysIn(moto, bucket);
      assert.ok(!left.includes(old), `${old} is still stored`);
      assert.ok(left.includes(kept), 'the other backup stays');
      // A retried removal Job (the first one's pod lost after the delete) must not fail.
      assert.equal((await sh(removeScript(), removeEnv)).code, 0);
    });

    /** One step of the last-dump pod, started as its container would start it. */
    function standby(script: string, env: Record<string, string>) {
      const child = spawn('sh', ['-c', script], {
        env: { PATH: `${AWS_BIN}:${process.env['PATH']}`, HOME: tmpdir(), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d) => {
        output += d;
      });
      child.stderr.on('data', (d) => {
        output += d;
      });
      const exited = new Promise<{ code: number | null; output: string }>((resolve) =>
        child.once('close', (code) => resolve({ code, output })),
      );
      return { child, exited };
    }

    // The stop signal the kubelet sends is the image's: INT for the official postgres image, TERM for mysql's.
    const stop = engine.name === 'postgres' ? 'SIGINT' : 'SIGTERM';

    test(`the last dump: both steps wait; ${stop} dumps the rows as they are then and uploads them; the upload is not stopped by it`, async (t) => {
      const file = join(work, 'last.dump');
      const key = backupKey('team-a', 'orders', 'last-dump-0a1b2c3d', engine.name);
      const dump = standby(standbyDumpScript(engine.name), dumpEnv(file));
      const upload = standby(standbyUploadScript(), uploadEnv(file, key));
      await sleep(1500);
      assert.equal(dump.child.exitCode, null, 'the dump step waits');
      assert.equal(upload.child.exitCode, null, 'the upload step waits');
      assert.ok(!existsSync(file) && !keysIn(moto, bucket).includes(key), 'nothing is dumped or stored while it waits');
      // Written after the steps started: only a dump taken at the signal holds it.
      server.sql('orders', `INSERT INTO orders VALUES (${ROWS + 1}, 'written-after-the-pod-started', 0)`);
      const expected = engine.digest(server, 'orders');
      const term = Date.now();
      dump.child.kill(stop);
      upload.child.kill(stop);
      const [d, u] = await Promise.all([dump.exited, upload.exited]);
      const uploadedMs = Date.now() - term;
      assert.equal(d.code, 0, d.output);
      assert.equal(u.code, 0, u.output);
      assert.match(d.output, /deleted: taking the last dump/);
      assert.deepEqual(
        keysIn(moto, bucket).filter((k) => k.includes('last-dump')),
        [key],
        'stored at its key, nothing partial',
      );
      engine.empty(server, 'restored_last');
      const { download, restore } = await restoreJob(key, 'restored_last');
      assert.equal(download.code, 0, download.output);
      assert.equal(restore?.code, 0, restore?.output);
      assert.equal(engine.digest(server, 'restored_last'), expected, 'the rows as they were at the signal');
      server.sql('orders', `DELETE FROM orders WHERE id = ${ROWS + 1}`);
      t.diagnostic(`${stop} to dumped and uploaded: ${uploadedMs} ms`);
    });

    test('the last dump failing (the server unreachable): the upload step stores nothing and both exit non-zero', async () => {
      const file = join(work, 'last-failed.dump');
      const key = backupKey('team-a', 'orders', 'last-dump-failed', engine.name);
      const dump = standby(standbyDumpScript(engine.name), { ...dumpEnv(file), PORT: '1' });
      const upload = standby(standbyUploadScript(), uploadEnv(file, key));
      await sleep(500);
      dump.child.kill(stop);
      upload.child.kill(stop);
      const [d, u] = await Promise.all([dump.exited, upload.exited]);
      assert.notEqual(d.code, 0, d.output);
      assert.notEqual(u.code, 0, u.output);
      assert.match(d.output, /the last dump failed; nothing is uploaded/);
      assert.ok(!keysIn(moto, bucket).some((k) => k.includes('last-dump-failed')), 'nothing stored');
    });

    test('the last dump’s step ended without a word (killed for memory): the upload step gives up once the dump stops growing', async () => {
      const file = join(work, 'last-killed.dump');
      const key = backupKey('team-a', 'orders', 'last-dump-killed', engine.name);
      // No dump step at all: as if it had been killed at once.
      const upload = standby(standbyUploadScript(), { ...uploadEnv(file, key), STALL_SECONDS: '3' });
      await sleep(2000);
      assert.equal(upload.child.exitCode, null, 'before the signal it waits, however long');
      upload.child.kill(stop);
      const started = Date.now();
      const u = await upload.exited;
      assert.notEqual(u.code, 0, u.output);
      assert.match(u.output, /the last dump has not grown for 3 s: its step ended without a word/);
      assert.ok(Date.now() - started < 15_000, 'it gave up rather than hold the server');
      assert.ok(!keysIn(moto, bucket).some((k) => k.includes('last-dump-killed')), 'nothing stored');
    });

    test('a bucket that does not exist: the upload fails saying so, and nothing is stored', async () => {
      const file = join(work, 'for-missing-bucket.dump');
      writeFileSync(file, 'a finished dump');
      const upload = await sh(uploadScript(), uploadEnv(file, 'orders/x.dump', { BUCKET: 'no-such-bucket' }));
      assert.notEqual(upload.code, 0);
      assert.match(upload.output, /NoSuchBucket|does not exist/);
      assert.ok(!existsSync(uploadEnv(file, 'orders/x.dump').TERMINATION_LOG), 'no success reported');
    });

    test('wrong credentials: the upload fails saying so, with no secret in the message, and nothing is stored', async () => {
      // moto with authentication enforced: these keys belong to no user.
      const strict = await startMotoServer(motoServerPath()!, { env: { INITIAL_NO_AUTH_ACTION_COUNT: '0' } });
      try {
        const file = join(work, 'for-bad-keys.dump');
        writeFileSync(file, 'a finished dump');
        const upload = await sh(uploadScript(), uploadEnv(file, 'orders/y.dump', { S3_ENDPOINT: strict.endpoint }));
        assert.notEqual(upload.code, 0);
        assert.match(upload.output, /InvalidAccessKeyId|AccessDenied|Forbidden|403/);
        assert.doesNotMatch(upload.output, new RegExp(KEYS.AWS_SECRET_ACCESS_KEY));
      } finally {
        await strict.stop();
      }
    });

    test('a dump killed half-way (as an OOM kill would) leaves no dump for the upload to find', async () => {
      // Enough rows that the dump is still running when it is killed.
      if (engine.name === 'postgres') {
        server.sql(
          'orders',
          "CREATE TABLE IF NOT EXISTS big AS SELECT i, repeat('x', 200) AS pad FROM generate_series(1, 400000) i; ALTER TABLE big OWNER TO app",
        );
      } else {
        server.sql(
          'orders',
          "CREATE TABLE IF NOT EXISTS big AS SELECT seq AS i, REPEAT('x', 200) AS pad FROM seq_1_to_400000",
        );
      }
      const file = join(work, 'killed.dump');
      const child = spawn('sh', ['-c', dumpScript(engine.name)], {
        env: { PATH: process.env['PATH'], ...dumpEnv(file) },
        detached: true,
        stdio: 'ignore',
      });
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code, signal) => resolve(signal ? -1 : code)),
      );
      for (let i = 0; i < 200 && !existsSync(`${file}.partial`); i++) await sleep(5);
      process.kill(-child.pid!, 'SIGKILL');
      assert.notEqual(await exited, 0);
      assert.ok(!existsSync(file), 'the final dump file was never written');
    });
  });
}

// The count of a CloudNativePG drill's scratch Cluster (countScript), as its Job runs it: here against a real
// PostgreSQL standing in for the recovered one, with databases and tables of more than one owner.
describe('the count of a recovered scratch server against real PostgreSQL 15', { skip }, () => {
  let server: DatabaseServer;
  let work: string;
  before(async () => {
    server = await startPostgres();
    work = mkdtempSync(join(tmpdir(), 'fp-count-'));
    postgres.fill(server, 'orders', ROWS);
    // Another database, its tables owned by another role: the superuser counts them all.
    server.sql('postgres', "CREATE ROLE reports LOGIN PASSWORD 'reports-password-0123'");
    server.sql('postgres', 'CREATE DATABASE inventory OWNER reports');
    server.sql(
      'inventory',
      'SET ROLE reports; CREATE TABLE items (id int); INSERT INTO items SELECT generate_series(1, 5); CREATE TABLE bins (id int); INSERT INTO bins SELECT generate_series(1, 7)',
    );
  });
  after(async () => {
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('every database’s tables and rows, as its superuser, written to the termination message; nothing written', async (t) => {
    const before = postgres.digest(server, 'orders');
    const termination = join(work, 'count.termination');
    const run = await sh(countScript(), {
      HOST: server.host,
      PORT: String(server.port),
      DB_USER: server.user,
      DB_PASSWORD: server.password,
      WORK: work,
      TERMINATION_LOG: termination,
    });
    assert.equal(run.code, 0, run.output);
    const counted = JSON.parse(readFileSync(termination, 'utf8')) as { tables: number; rows: number; seconds: number };
    assert.equal(counted.tables, 3, 'orders, items and bins');
    assert.equal(counted.rows, ROWS + 12);
    assert.equal(postgres.digest(server, 'orders'), before, 'the count writes nothing');
    assert.doesNotMatch(run.output, new RegExp(server.password), 'no password in what it says');
    t.diagnostic(`counted ${counted.tables} tables, ${counted.rows} rows in ${run.ms} ms`);
  });

  test('a password the server refuses: it waits, then says why without the password (quick here: one try)', async () => {
    const termination = join(work, 'refused.termination');
    const run = await sh(countScript().replace('[ $i -lt 60 ]', '[ $i -lt 1 ]'), {
      HOST: server.host,
      PORT: String(server.port),
      DB_USER: server.user,
      DB_PASSWORD: 'not-the-password',
      WORK: work,
      TERMINATION_LOG: termination,
    });
    assert.equal(run.code, 1, run.output);
    const said = readFileSync(termination, 'utf8');
    assert.match(said, /did not let the count in within 5 minutes: .*FATAL: +password authentication failed/);
    assert.doesNotMatch(said, /not-the-password/);
  });
});

// The same count as an RDS drill's Job runs it. RDS for PostgreSQL keeps a database (rdsadmin) closed to the
// master user: here a database whose CONNECT is revoked stands for it, and the count passes over it only when
// told to. RDS for MySQL: the MySQL-client count against a real MariaDB 10.11, with a master password that
// needs quoting in the client's option file.
describe('the count of an RDS drill’s scratch instance against real PostgreSQL 15 and MariaDB 10.11', { skip }, () => {
  let pg: DatabaseServer;
  let maria: DatabaseServer;
  let work: string;
  const MASTER_PASSWORD = 'q"uo\\te$d`p#w;0';
  const MANY_TABLES = 2_100;
  before(async () => {
    [pg, maria] = await Promise.all([startPostgres(), startMariadb()]);
    work = mkdtempSync(join(tmpdir(), 'fp-rds-count-'));
    postgres.fill(pg, 'orders', 1_000);
    pg.sql('postgres', 'CREATE DATABASE rdsadmin');
    pg.sql('postgres', "CREATE ROLE master LOGIN PASSWORD 'master-password-0123'");
    pg.sql('orders', 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO master');
    pg.sql('postgres', 'REVOKE CONNECT ON DATABASE rdsadmin FROM PUBLIC');
    mysql.fill(maria, 'orders', 2_500);
    // Thousands of tables with long names (their count's statement is longer than one command-line argument may
    // be), and a name with a backtick in it.
    const many = [
      'CREATE DATABASE warehouse;',
      ...Array.from(
        { length: MANY_TABLES },
        (_, i) =>
          `CREATE TABLE warehouse.shelf_with_a_long_name_for_the_count_${String(i).padStart(4, '0')} (id int) ENGINE=MEMORY;`,
      ),
      'CREATE TABLE warehouse.`odd``name` (id int) ENGINE=MEMORY; INSERT INTO warehouse.`odd``name` VALUES (1), (2), (3);',
    ].join('\n');
    writeFileSync(join(work, 'many.sql'), many);
    execFileSync(
      'sh',
      ['-c', `mariadb --no-defaults -h ${maria.host} -P ${maria.port} -u${maria.user} < "${join(work, 'many.sql')}"`],
      {
        env: { ...process.env, MYSQL_PWD: maria.password },
        stdio: 'pipe',
      },
    );
    maria.sql(
      '',
      `CREATE DATABASE inventory; CREATE TABLE inventory.items (id int) ENGINE=InnoDB; INSERT INTO inventory.items SELECT seq FROM inventory.seq_1_to_7; CREATE USER 'admin'@'127.0.0.1' IDENTIFIED BY '${MASTER_PASSWORD.replace(/\\/g, '\\\\')}'; GRANT SELECT, SHOW VIEW ON *.* TO 'admin'@'127.0.0.1';`,
    );
  });
  after(async () => {
    await Promise.all([pg?.stop(), maria?.stop()]);
    if (work) rmSync(work, { recursive: true, force: true });
  });
  const env = (s: DatabaseServer, user: string, password: string, name: string) => ({
    HOST: s.host,
    PORT: String(s.port),
    DB_USER: user,
    DB_PASSWORD: password,
    WORK: work,
    TERMINATION_LOG: join(work, name),
  });

  test('PostgreSQL: the closed database is passed over when named, and stops the count when not', async () => {
    const told = await sh(countScript('postgres', ['rdsadmin']), env(pg, 'master', 'master-password-0123', 'pg.ok'));
    assert.equal(told.code, 0, told.output);
    assert.deepEqual(
      (({ tables, rows }) => ({ tables, rows }))(JSON.parse(readFileSync(join(work, 'pg.ok'), 'utf8'))),
      { tables: 1, rows: 1_000 },
    );
    const untold = await sh(countScript('postgres'), env(pg, 'master', 'master-password-0123', 'pg.closed'));
    assert.equal(untold.code, 1, untold.output);
    assert.match(
      readFileSync(join(work, 'pg.closed'), 'utf8'),
      /the count of database rdsadmin .* failed: .*permission denied/,
    );
  });

  test('MySQL: every database’s tables and rows but the server’s own, as the master user; nothing written', async (t) => {
    const before = mysql.digest(maria, 'orders');
    const run = await sh(countScript('mysql'), env(maria, 'admin', MASTER_PASSWORD, 'maria.ok'));
    assert.equal(run.code, 0, run.output);
    const counted = JSON.parse(readFileSync(join(work, 'maria.ok'), 'utf8')) as { tables: number; rows: number };
    assert.equal(counted.tables, 2 + MANY_TABLES + 1, 'orders.orders, inventory.items and the warehouse');
    assert.equal(counted.rows, 2_507 + 3);
    assert.equal(mysql.digest(maria, 'orders'), before, 'the count writes nothing');
    assert.doesNotMatch(run.output, /uo\\te/, 'no password in what it says');
    t.diagnostic(`counted ${counted.tables} tables, ${counted.rows} rows in ${run.ms} ms`);
  });

  test('MySQL: a password the server refuses: it says why, without the password (one try here)', async () => {
    const run = await sh(
      countScript('mysql').replace('[ $i -lt 60 ]', '[ $i -lt 1 ]'),
      env(maria, 'admin', 'not-the-master-password', 'maria.refused'),
    );
    assert.equal(run.code, 1, run.output);
    const said = readFileSync(join(work, 'maria.refused'), 'utf8');
    assert.match(said, /did not let the count in within 5 minutes: ERROR 1045 .*Access denied for user '…'@'…'/);
    assert.doesNotMatch(said, /not-the-master-password/);
  });
});
