// Real database servers on loopback for the tests of what dumps and restores
// data: PostgreSQL and MariaDB from Debian's packages (scripts/install-databases.sh),
// each started in a fresh temp data directory, run as its own system user
// (PostgreSQL refuses root), and stopped with its directory removed.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type Proc, spawnLogged, waitFor } from './processes.js';

export interface DatabaseServer {
  engine: 'postgres' | 'mysql';
  host: string;
  port: number;
  /** A superuser and its password. */
  user: string;
  password: string;
  /** Runs SQL in `database` as the superuser, returning the output (tab-separated rows). */
  sql(database: string, statement: string): string;
  stop(): Promise<void>;
}

const PG_BIN = '/usr/lib/postgresql/15/bin';

function uidOf(user: string): { uid: number; gid: number } {
  return {
    uid: Number(execFileSync('id', ['-u', user], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', user], { encoding: 'utf8' })),
  };
}

/** Why the database suites must skip, or undefined when both servers are installed. */
export function databasesMissing(): string | undefined {
  const missing = [`${PG_BIN}/postgres`, '/usr/sbin/mariadbd', '/usr/bin/mysqldump', '/usr/bin/pg_dump'].filter(
    (f) => !existsSync(f),
  );
  return missing.length ? `${missing.join(', ')} missing: run \`bash scripts/install-databases.sh\`` : undefined;
}

/** A client command, its password in the environment (never on the command line), answering its output. */
function client(bin: string, args: string[], env: Record<string, string>): string {
  return execFileSync(bin, args, { env: { ...process.env, ...env }, encoding: 'utf8', stdio: 'pipe' });
}

/** Waits until `probe` stops throwing; if the server never gets there, stops it and removes its directory. */
async function whenReady(
  what: string,
  proc: Proc,
  dir: string,
  timeoutMs: number,
  probe: () => unknown,
): Promise<void> {
  try {
    await waitFor(what, proc, timeoutMs, async () => {
      probe();
      return true;
    });
  } catch (err) {
    await proc.stop(5000);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function ownedTempDir(prefix: string, owner: { uid: number; gid: number }): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chownSync(dir, owner.uid, owner.gid);
  return dir;
}

/** PostgreSQL 15, trust on the socket and a password on TCP. */
export async function startPostgres(): Promise<DatabaseServer> {
  const owner = uidOf('postgres');
  const dir = ownedTempDir('fp-pg-', owner);
  const data = join(dir, 'data');
  const password = 'superuser-test-password';
  const pwfile = join(dir, 'pw');
  execFileSync('sh', ['-c', `printf %s '${password}' > ${pwfile} && chown ${owner.uid}:${owner.gid} ${pwfile}`]);
  execFileSync(
    `${PG_BIN}/initdb`,
    [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${pwfile}`,
      '-E',
      'UTF8',
    ],
    { ...owner, stdio: 'pipe' },
  );
  const port = await freePort();
  const proc: Proc = spawnLogged(
    'postgres',
    `${PG_BIN}/postgres`,
    [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=off',
    ],
    join(dir, 'postgres.log'),
    { ...owner },
  );
  const args = (database: string) =>
    `-h 127.0.0.1 -p ${port} -U postgres -d ${database} -v ON_ERROR_STOP=1 -tA`.split(' ');
  const psql = (database: string, statement: string) =>
    client('psql', [...args(database), '-F', '\t', '-c', statement], { PGPASSWORD: password });
  await whenReady('postgres', proc, dir, 30_000, () => psql('postgres', 'SELECT 1'));
  return {
    engine: 'postgres',
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password,
    sql: psql,
    stop: async () => {
      await proc.stop(10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** MariaDB 10.11 (the mysql dump and client tools speak to it), with a root password on TCP. */
export async function startMariadb(): Promise<DatabaseServer> {
  const owner = uidOf('mysql');
  const dir = ownedTempDir('fp-mariadb-', owner);
  const data = join(dir, 'data');
  mkdirSync(data);
  chownSync(data, owner.uid, owner.gid);
  execFileSync(
    'mariadb-install-db',
    [`--datadir=${data}`, '--user=mysql', '--auth-root-authentication-method=normal', '--skip-test-db'],
    { stdio: 'pipe' },
  );
  const port = await freePort();
  const socket = join(dir, 'mysqld.sock');
  const proc = spawnLogged(
    'mariadbd',
    '/usr/sbin/mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=mysql',
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      '--skip-log-bin',
      '--skip-name-resolve',
      '--innodb-flush-log-at-trx-commit=0',
    ],
    join(dir, 'mariadbd.log'),
  );
  const password = 'superuser-test-password';
  const viaSocket = (statement: string) =>
    execFileSync('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-e', statement], {
      encoding: 'utf8',
      stdio: 'pipe',
    });
  await whenReady('mariadbd', proc, dir, 60_000, () => viaSocket('SELECT 1'));
  viaSocket(
    `CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '${password}'; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;`,
  );
  const args = `--no-defaults -h 127.0.0.1 -P ${port} -uroot --batch --skip-column-names`.split(' ');
  const sql = (database: string, statement: string) =>
    client('mariadb', [...args, ...(database ? [database] : []), '-e', statement], { MYSQL_PWD: password });
  return {
    engine: 'mysql',
    host: '127.0.0.1',
    port,
    user: 'root',
    password,
    sql,
    stop: async () => {
      await proc.stop(20_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Files a directory holds (for tests that look for leftovers). */
export function filesIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
