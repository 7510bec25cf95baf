// The application of the chaos harness: a client that writes to a Database
// through its connection Secret, as an application in the cluster would.
// Started in the node's network namespace (where ClusterIPs are routed), it
// reads the Secret's values from a file the harness rewrites whenever the
// Secret changes, resolves the host with the cluster's DNS (CoreDNS at
// 10.96.0.10), and runs the engine's own client (Debian's psql 15 or
// MariaDB's mysql) for each statement, so each one is a new connection to
// wherever the Service sends it at that moment.
//
//   node dist/test/chaos/writer.js CONFIG               one JSON line per row, until SIGTERM
//   node dist/test/chaos/writer.js CONFIG --once SQL    the output of one statement
//
// Each loop commits one row (a new id, increasing) and reads back, in the same
// call, which server answered (PostgreSQL's system identifier, new for every
// initdb, so a restored instance differs from the one before; MariaDB's host
// name, its pod) and how many rows it holds. A row is acknowledged only when
// the client exits 0: its commit is done. A call that fails after it was sent
// may or may not have committed: its id is reported as uncertain.
import { spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export interface WriterConfig {
  engine: 'postgres' | 'mysql';
  host: string;
  port: string;
  username: string;
  password: string;
  dbname: string;
  /** The table the rows go to. */
  table: string;
  pauseMs: number;
}

/** One loop of the writer, as a JSON line. */
export interface WriterLine {
  t0: number;
  t1: number;
  id: number;
  ok: boolean;
  /** The server that answered (system identifier, or pod name). */
  ident?: string;
  count?: number;
  host: string;
  /** Why it failed; `sent` says whether the statement may have reached the server. */
  error?: string;
  sent?: boolean;
}

export const CLUSTER_DNS = '10.96.0.10';
const PSQL = '/usr/lib/postgresql/15/bin/psql';
const MYSQL = '/usr/bin/mysql';

const resolver = new Resolver({ timeout: 2000, tries: 1 });
resolver.setServers([CLUSTER_DNS]);

async function address(host: string): Promise<string> {
  if (isIP(host)) return host;
  const [ip] = await resolver.resolve4(host);
  if (!ip) throw new Error(`${host}: no address`);
  return ip;
}

/** Runs one statement with the engine's client against `ip`; its output, or an error with what it said. */
export async function runSql(c: WriterConfig, ip: string, sql: string, timeoutMs = 8000): Promise<string> {
  const [bin, args, env] =
    c.engine === 'postgres'
      ? [
          PSQL,
          [
            '-X',
            '-q',
            '-t',
            '-A',
            '-v',
            'ON_ERROR_STOP=1',
            '-h',
            ip,
            '-p',
            c.port,
            '-U',
            c.username,
            '-d',
            c.dbname,
            '-c',
            sql,
          ],
          { PGPASSWORD: c.password, PGCONNECT_TIMEOUT: '3' },
        ]
      : [
          MYSQL,
          ['-N', '-B', '--connect-timeout=3', '-h', ip, '-P', c.port, '-u', c.username, c.dbname, '-e', sql],
          { MYSQL_PWD: c.password },
        ];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      env: { PATH: process.env['PATH'] ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.trim());
      else reject(new Error((err.trim().split('\n').pop() ?? '') || `exit ${code ?? signal}`));
    });
  });
}

/** The statement of one loop: a row in, and which server holds how many rows. */
function loopSql(c: WriterConfig, id: number): string {
  return c.engine === 'postgres'
    ? `INSERT INTO ${c.table} (id) VALUES (${id}); SELECT (SELECT system_identifier FROM pg_control_system()) || '|' || count(*) FROM ${c.table}`
    : `INSERT INTO ${c.table} (id) VALUES (${id}); SELECT CONCAT(@@hostname, '|', COUNT(*)) FROM ${c.table}`;
}

/** Errors that happen before anything reaches a server: the row was certainly not written. */
const NOT_SENT =
  /no address|ENOTFOUND|ECONNREFUSED|queryA|Connection refused|could not connect|Can't connect|timeout expired|Unknown MySQL server host|No route to host|ETIMEOUT/i;

async function loop(file: string): Promise<void> {
  let stopping = false;
  process.on('SIGTERM', () => {
    stopping = true;
  });
  let id = Date.now();
  while (!stopping) {
    const c = JSON.parse(readFileSync(file, 'utf8')) as WriterConfig;
    const t0 = Date.now();
    id++;
    let line: WriterLine;
    try {
      const ip = await address(c.host);
      const out = await runSql(c, ip, loopSql(c, id));
      const [ident, count] = out.split('|');
      line = { t0, t1: Date.now(), id, ok: true, ident: ident ?? '', count: Number(count), host: c.host };
    } catch (e) {
      const error = (e as Error).message;
      line = { t0, t1: Date.now(), id, ok: false, host: c.host, error, sent: !NOT_SENT.test(error) };
    }
    process.stdout.write(`${JSON.stringify(line)}\n`);
    await new Promise((resolve) => setTimeout(resolve, c.pauseMs));
  }
}

async function once(file: string, sql: string): Promise<void> {
  const c = JSON.parse(readFileSync(file, 'utf8')) as WriterConfig;
  process.stdout.write(`${await runSql(c, await address(c.host), sql, 120_000)}\n`);
}

const [file, flag, sql] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: writer CONFIG [--once SQL]\n');
  process.exit(2);
}
try {
  if (flag === '--once') await once(file, sql ?? 'SELECT 1');
  else await loop(file);
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
}
