// What differs between postgres and mysql: versions, images, ports, the
// commands that prove the server accepts connections (dumps: commands.ts).
import type { V1EnvVar } from '@kubernetes/client-node';
import type { DatabaseSpec } from '../../generated/schemas.js';

export type Engine = DatabaseSpec['engine'];
export type Size = DatabaseSpec['size'];

export interface EngineFacts {
  versions: readonly string[];
  port: number;
  image(version: string): string;
  /** Where the data directory lives in the container. */
  dataPath: string;
  /** Environment of the server container, given the credentials Secret's name. */
  serverEnv(credentials: string, dbname: string): V1EnvVar[];
  /** A command that succeeds only when the server accepts a connection as the app user. */
  readyCommand: string[];
  /** A URI for the app user; with `tls`, one that refuses to connect without TLS. */
  uri(user: string, password: string, host: string, port: number, db: string, tls?: boolean): string;
  jdbc(host: string, port: number, db: string, tls?: boolean): string;
}

const secretEnv = (name: string, secret: string, key: string) => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key } },
});

/** What the official image reads its account and database from, and what else it needs. */
interface ImageEnv {
  user: string;
  password: string;
  database: string;
  extra: V1EnvVar[];
}

/** The official images' naming: <PREFIX>_USER, <PREFIX>_PASSWORD and <PREFIX>_<database word>. */
function imageEnv(prefix: string, databaseWord: string, extra: V1EnvVar[]): ImageEnv {
  return { user: `${prefix}_USER`, password: `${prefix}_PASSWORD`, database: `${prefix}_${databaseWord}`, extra };
}

function facts(
  f: Omit<EngineFacts, 'serverEnv' | 'uri' | 'jdbc'> & {
    env: ImageEnv;
    scheme: string;
    /** The query that makes a client refuse to connect without TLS: in a URI, and in a JDBC URL. */
    requireTls: { uri: string; jdbc: string };
  },
): EngineFacts {
  const { env, scheme, requireTls, ...rest } = f;
  const query = (tls: boolean | undefined, word: string) => (tls ? `?${word}` : '');
  return {
    ...rest,
    serverEnv: (credentials, dbname) => [
      secretEnv(env.user, credentials, 'username'),
      secretEnv(env.password, credentials, 'password'),
      { name: env.database, value: dbname },
      ...env.extra,
    ],
    uri: (u, p, h, port, db, tls) =>
      `${scheme}://${encodeURIComponent(u)}:${encodeURIComponent(p)}@${h}:${port}/${db}${query(tls, requireTls.uri)}`,
    jdbc: (h, port, db, tls) => `jdbc:${scheme}://${h}:${port}/${db}${query(tls, requireTls.jdbc)}`,
  };
}

export const ENGINES: Record<Engine, EngineFacts> = {
  postgres: facts({
    versions: ['14', '15', '16', '17'],
    port: 5432,
    image: (v) => `postgres:${v}`,
    dataPath: '/var/lib/postgresql/data',
    // A subdirectory, so a volume's lost+found does not upset initdb.
    env: imageEnv('POSTGRES', 'DB', [{ name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' }]),
    scheme: 'postgresql',
    // libpq's and pgJDBC's word for TLS without which there is no connection.
    requireTls: { uri: 'sslmode=require', jdbc: 'sslmode=require' },
    readyCommand: ['sh', '-c', 'exec pg_isready -h 127.0.0.1 -p 5432 -U "$POSTGRES_USER" -d "$POSTGRES_DB"'],
  }),
  mysql: facts({
    versions: ['8.0', '8.4'],
    port: 3306,
    image: (v) => `mysql:${v}`,
    dataPath: '/var/lib/mysql',
    env: imageEnv('MYSQL', 'DATABASE', [{ name: 'MYSQL_RANDOM_ROOT_PASSWORD', value: 'yes' }]),
    scheme: 'mysql',
    // MySQL's own clients' and Shell's word in a URI, and Connector/J's.
    requireTls: { uri: 'ssl-mode=REQUIRED', jdbc: 'sslMode=REQUIRED' },
    // Over TCP, not the socket: the official image's first-start server listens on the socket only. The client
    // prefers TLS (MySQL's and this environment's MariaDB stand-in's alike), so this also passes a server that
    // requires it.
    readyCommand: ['sh', '-c', 'MYSQL_PWD="$MYSQL_PASSWORD" exec mysql -h 127.0.0.1 -u "$MYSQL_USER" -e "SELECT 1"'],
  }),
};

/** The tag of an image reference: "postgres:17" → "17". */
export function tagOf(image: string | undefined): string | undefined {
  return image?.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : undefined;
}

/** The versions every engine supports, in words: "postgres 14, 15, 16, 17; mysql 8.0, 8.4". */
export function supportedVersions(): string {
  return Object.entries(ENGINES)
    .map(([engine, facts]) => `${engine} ${facts.versions.join(', ')}`)
    .join('; ');
}

export function newestVersion(engine: Engine): string {
  const versions = ENGINES[engine].versions;
  return versions[versions.length - 1]!;
}

/** Pod resources in the cluster: requests, with memory also the limit. */
export const POD_RESOURCES: Record<Size, { cpu: string; memory: string }> = {
  small: { cpu: '250m', memory: '512Mi' },
  medium: { cpu: '1', memory: '2Gi' },
  large: { cpu: '2', memory: '8Gi' },
};

/** RDS instance classes (Graviton, current generation) when spec.aws.instanceClass is not set. */
export const INSTANCE_CLASSES: Record<Size, string> = {
  small: 'db.t4g.small',
  medium: 'db.m7g.large',
  large: 'db.r7g.xlarge',
};

/** A database name both engines accept: letters, digits and underscores, starting with a letter. */
export function databaseName(app: string): string {
  const name = app
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .replace(/^[^a-z]+/, '');
  return (name || 'app').slice(0, 63);
}

/** The first hour and minute of a simple daily cron schedule, for the RDS backup window. */
export function backupWindow(schedule: string): string | undefined {
  const [minute, hour] = schedule.trim().split(/\s+/);
  if (!minute || !hour || !/^\d+$/.test(minute) || !/^\d+$/.test(hour)) return undefined;
  const m = Number(minute);
  const h = Number(hour);
  if (m > 59 || h > 23) return undefined;
  const pad = (n: number) => String(n).padStart(2, '0');
  // RDS wants at least 30 minutes; an hour leaves room for large instances.
  return `${pad(h)}:${pad(m)}-${pad((h + 1) % 24)}:${pad(m)}`;
}
