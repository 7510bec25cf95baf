// The world the chaos rounds run in: a control plane with a real node
// (claims mode, so provider-kubernetes serves the Object that grows a volume),
// a Widget with requests flowing through its ClusterIP, a Database with an
// application writing rows through its connection Secret. The function keeps
// the real time: a scheduled backup comes from a schedule set to the next
// minute, as a user may set it (a clock moved ahead of the cluster's made
// every backup completed by a Job look older than its slot).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { Json } from '../support/apiserver.js';
import { type ControlPlane, objectStoreSecret, secretData, startControlPlane } from '../support/control-plane.js';
import { repoRoot } from '../../dev/infra/paths.js';
import type { WriterConfig, WriterLine } from './writer.js';

export const NS = 'chaos';
export const WIDGET = 'shop';
export const WIDGET_SIZE = 2;
export const DATABASE = 'ledger';
export const ROWS_TABLE = 'chaos_rows';
/** The schedule of a Database's backups until a round sets its own: hourly. */
export const SCHEDULE = '0 * * * *';
export const RETENTION_DAYS = 1;
export const COLOR_LABEL = 'function-platform.dev/color';

export type Say = (line: string) => void;

/** A process in the node's network namespace whose stdout is JSON lines, read as they come. */
export interface LineProcess<T> {
  lines: T[];
  onLine(f: (line: T) => void): void;
  stop(): Promise<void>;
}

export class World {
  readonly dir: string;
  /** The backup schedule of the Database the rounds share (DATABASE), as last applied. */
  schedule = SCHEDULE;
  private constructor(
    readonly cp: ControlPlane,
    dir: string,
    readonly say: Say,
  ) {
    this.dir = dir;
  }

  /** A control plane for the harness in `dir`. */
  static async start(dir: string, say: Say): Promise<World> {
    mkdirSync(dir, { recursive: true });
    const cp = await startControlPlane({
      dir: join(dir, 'cluster'),
      realNodes: true,
      claims: true,
      functionDebug: true,
      say: (l) => say(`  ${l}`),
    });
    const w = new World(cp, dir, say);
    await cp.client.applyObj(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      { fieldManager: 'chaos', force: true },
    );
    await cp.client.applyObj(
      { ...objectStoreSecret(cp.objectStore!), metadata: { name: 'backup-store', namespace: NS } },
      { fieldManager: 'chaos', force: true },
    );
    return w;
  }

  async kubectl(args: string[], input?: string): Promise<string> {
    const r = await this.cp.kubectl(args, input !== undefined ? { input } : {});
    return r.stdout;
  }

  /** Applies YAML as a user does, retried while the API server is away. */
  async apply(yaml: string): Promise<void> {
    await this.retry('kubectl apply', () => this.kubectl(['apply', '-f', '-'], yaml));
  }

  /** A claim of ours in the namespace (Widget, Database, DatabaseBackup, DatabaseRestore), or undefined. */
  async claim(kind: string, name: string): Promise<Json | undefined> {
    return this.cp.client.getObj({ apiVersion: 'example.com/v1', kind, metadata: { name, namespace: NS } });
  }

  async get(
    apiVersion: string,
    kind: string,
    name: string,
    namespace: string | undefined = NS,
  ): Promise<Json | undefined> {
    return this.cp.client.getObj({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
  }

  async list(apiVersion: string, kind: string, selector?: string): Promise<Json[]> {
    return this.cp.client.listObjs(apiVersion, kind, NS, selector);
  }

  /** The composite a claim is bound to (what the function is called for). */
  async composite(kind: string, name: string): Promise<string | undefined> {
    const c = await this.claim(kind, name);
    return c?.['spec']?.['resourceRef']?.['name'];
  }

  /** Makes Crossplane reconcile a claim now rather than at its next poll, as a user's edit would. */
  async nudge(kind: string, name: string): Promise<void> {
    await this.retry('nudge', () =>
      this.kubectl([
        'annotate',
        kind.toLowerCase(),
        name,
        '-n',
        NS,
        `chaos.function-platform.dev/nudge=${Date.now()}`,
        '--overwrite',
      ]),
    );
  }

  /** Runs `f` until it succeeds, for up to `ms` (a component may be down for a while). */
  async retry<T>(what: string, f: () => Promise<T>, ms = 180_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        return await f();
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`${what}: ${(e as Error).message}`);
        await sleep(1000);
      }
    }
  }

  /** Polls `probe` until it answers something; errors (a component down) count as not yet. */
  async until<T>(what: string, probe: () => Promise<T | undefined>, ms: number, everyMs = 250): Promise<T> {
    const deadline = Date.now() + ms;
    let last = '';
    for (;;) {
      try {
        const v = await probe();
        if (v !== undefined) return v;
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > deadline)
        throw new Error(`${what}: not after ${Math.round(ms / 1000)} s${last ? ` (${last})` : ''}`);
      await sleep(everyMs);
    }
  }

  widgetYaml(color: string): string {
    return `apiVersion: example.com/v1
kind: Widget
metadata: {name: ${WIDGET}, namespace: ${NS}}
spec: {color: ${color}, size: ${WIDGET_SIZE}, resources: {cpu: 20m, memory: 32Mi}}
`;
  }

  databaseYaml(
    name: string,
    o: {
      engine?: 'postgres' | 'mysql';
      version?: string;
      storageGB?: number;
      policy?: 'Retain' | 'Delete';
      schedule?: string;
    } = {},
  ): string {
    const store = this.cp.objectStore!;
    return `apiVersion: example.com/v1
kind: Database
metadata: {name: ${name}, namespace: ${NS}}
spec:
  engine: ${o.engine ?? 'postgres'}
  version: "${o.version ?? '15'}"
  storageGB: ${o.storageGB ?? 1}
  deletionPolicy: ${o.policy ?? 'Retain'}
  backup:
    schedule: "${o.schedule ?? (name === DATABASE ? this.schedule : SCHEDULE)}"
    retentionDays: ${RETENTION_DAYS}
    objectStore:
      bucket: ${store.bucket}
      region: ${store.region}
      endpoint: ${store.endpoint}
      prefix: chaos
      credentialsSecretRef: {name: backup-store}
`;
  }

  /** The values of a Database's connection Secret as the writer reads them. */
  async connection(db: string, engine: 'postgres' | 'mysql'): Promise<WriterConfig | undefined> {
    const data = await secretData(this.cp.client, NS, `${db}-db-connection`);
    if (!data?.['host']) return undefined;
    const v = (k: string) => data[k]?.toString('utf8') ?? '';
    return {
      engine,
      host: v('host'),
      port: v('port'),
      username: v('username'),
      password: v('password'),
      dbname: v('dbname'),
      table: ROWS_TABLE,
      pauseMs: 250,
    };
  }

  /** Writes the writer's configuration file for a Database (what its connection Secret says). */
  writeConfig(db: string, config: WriterConfig): string {
    const file = join(this.dir, `${db}.connection.json`);
    writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    return file;
  }

  /** One statement through the Database's connection, from the node (as the application reaches it). */
  async sql(configFile: string, statement: string): Promise<string> {
    const out = await this.inNodeNet([
      'node',
      join(repoRoot, 'dist', 'test', 'chaos', 'writer.js'),
      configFile,
      '--once',
      statement,
    ]);
    return out.trim();
  }

  /** Runs a command in the node's network namespace (the project's node for `node`). */
  inNodeNet(argv: string[]): Promise<string> {
    const [cmd, ...args] = argv;
    const bin = cmd === 'node' ? process.execPath : cmd!;
    return new Promise((resolve, reject) => {
      const child = spawn('nsenter', ['-t', String(this.cp.realNode!.holder.pid), '-n', '--', bin, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(err.trim() || `exit ${code}`))));
    });
  }

  /** A process of JSON lines in the node's network namespace (the writer, the traffic client). */
  lineProcess<T>(args: string[]): LineProcess<T> {
    const child = spawn(
      'nsenter',
      ['-t', String(this.cp.realNode!.holder.pid), '-n', '--', process.execPath, ...args],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines: T[] = [];
    const listeners: Array<(l: T) => void> = [];
    let rest = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const p of parts) {
        if (!p.trim()) continue;
        const line = JSON.parse(p) as T;
        lines.push(line);
        for (const f of listeners) f(line);
      }
    });
    const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return {
      lines,
      onLine: (f) => listeners.push(f),
      stop: async () => {
        child.kill('SIGTERM');
        await ended;
      },
    };
  }

  /** The writer of a Database (writer.ts), started now. */
  startWriter(configFile: string): LineProcess<WriterLine> {
    return this.lineProcess<WriterLine>([join(repoRoot, 'dist', 'test', 'chaos', 'writer.js'), configFile]);
  }

  /** An S3 client of the object store. */
  s3(): S3Client {
    const store = this.cp.objectStore!;
    return new S3Client({
      endpoint: store.endpoint,
      region: store.region,
      forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
  }

  /** The keys in the object store's bucket. */
  async storedKeys(s3: S3Client): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const r = await s3.send(
        new ListObjectsV2Command({
          Bucket: this.cp.objectStore!.bucket,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const o of r.Contents ?? []) if (o.Key) keys.push(o.Key);
      token = r.NextContinuationToken;
    } while (token);
    return keys;
  }

  /** A stored backup's bytes (an s3:// location). */
  async stored(s3: S3Client, location: string): Promise<Buffer> {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(location);
    if (!m) throw new Error(`not an s3:// location: ${location}`);
    const o = await s3.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
    return Buffer.from(await o.Body!.transformToByteArray());
  }
}
