// The invariants of the chaos harness, checked continuously while the rounds
// run, not only at their ends:
//   endpoints   the Widget's Service has ready endpoints, all of one color
//               (its EndpointSlices read every 100 ms);
//   requests    a client sending requests through its ClusterIP sees none
//               fail, and the color it is answered by never flips back;
//   holders     no data holder goes (claims, volumes, credentials Secrets,
//               completed backups' objects) unless the user deleted it, its
//               Database was deleted under Delete, or retention removed it;
//   rows        every row a writer committed before a backup's start is in
//               that backup; after a restore's switch the application reads
//               the restored rows, never a mix with the instance before; a
//               Database created again opens the data it last served;
//   host        the connection Secret names a host that answers;
//   converge    every round converges, within a bound (rounds.ts).
// Each check is counted; each failure is a violation with its round and time.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Json } from '../support/apiserver.js';
import type { Sample } from '../support/real-node.js';
import { repoRoot } from '../../dev/infra/paths.js';
import type { WriterLine } from './writer.js';
import { DATABASE, type LineProcess, NS, WIDGET, type World } from './world.js';

export const INVARIANTS = ['endpoints', 'requests', 'holders', 'rows', 'host', 'converge'] as const;
export type Invariant = (typeof INVARIANTS)[number];

export interface Violation {
  round: number;
  at: number;
  invariant: Invariant;
  detail: string;
}

/** A fault's window: from its injection until what it stopped serves again. */
export interface Window {
  round: number;
  fault: string;
  from: number;
  to?: number;
}

/** The record of checks and violations, shared by the monitors. */
export class Ledger {
  round = 0;
  checks: Record<Invariant, number> = { endpoints: 0, requests: 0, holders: 0, rows: 0, host: 0, converge: 0 };
  violations: Violation[] = [];
  windows: Window[] = [];
  /** Failed requests and unserved samples, by round and what was going on. */
  failures: Array<{ round: number; at: number; what: string; during?: string }> = [];

  constructor(private readonly say: (line: string) => void) {}

  check(invariant: Invariant, ok: boolean, detail: () => string): boolean {
    this.checks[invariant]++;
    if (!ok) {
      const v = { round: this.round, at: Date.now(), invariant, detail: detail() };
      this.violations.push(v);
      this.say(`  VIOLATION [${invariant}] round ${v.round}: ${v.detail}`);
    }
    return ok;
  }

  /** The fault whose window holds `t`, if any. */
  during(t: number, slackMs = 0): Window | undefined {
    return this.windows.find((w) => t >= w.from - slackMs && t <= (w.to ?? Number.POSITIVE_INFINITY) + slackMs);
  }
}

/** The pod's color, from its name (<widget>-<color>-<replicaset hash>-<id>). */
export function colorOfPod(pod: string | undefined): string | undefined {
  return pod ? new RegExp(`^${WIDGET}-([a-z0-9-]+?)-[a-z0-9]{5,10}-[a-z0-9]{5}$`).exec(pod)?.[1] : undefined;
}

/** The Widget's Service, read every 100 ms: ready endpoints, all of one color. */
export class EndpointsMonitor {
  private stopped = false;
  private done?: Promise<void>;
  samples = 0;
  unavailable = 0;
  lastColor?: string;

  constructor(
    private readonly w: World,
    private readonly ledger: Ledger,
  ) {}

  start(): void {
    this.done = (async () => {
      while (!this.stopped) {
        const t = Date.now();
        let slices: Json[] | undefined;
        try {
          slices = await this.w.list('discovery.k8s.io/v1', 'EndpointSlice', `kubernetes.io/service-name=${WIDGET}`);
        } catch {
          this.unavailable++;
        }
        if (slices) {
          this.samples++;
          const ready = slices.flatMap((s) =>
            ((s['endpoints'] ?? []) as Json[]).filter((e) => e['conditions']?.['ready'] === true),
          );
          const colors = [...new Set(ready.map((e) => colorOfPod(e['targetRef']?.['name']) ?? '?'))];
          const ok = this.ledger.check(
            'endpoints',
            colors.length === 1,
            () =>
              `Service ${WIDGET}: ${colors.length === 0 ? 'no ready endpoints' : `ready endpoints of ${colors.join(' and ')}`}${this.ledger.during(t) ? ` (during ${this.ledger.during(t)!.fault})` : ''}`,
          );
          if (ok) this.lastColor = colors[0];
        }
        await sleep(Math.max(0, 100 - (Date.now() - t)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/** Requests through the Widget's ClusterIP without pause: none may fail, and the color never flips back. */
export class TrafficMonitor {
  private proc?: LineProcess<Sample>;
  /** The colors in the order they answered, with how many answers each run had. */
  runs: Array<{ color: string; answers: number; from: number }> = [];
  requests = 0;

  constructor(
    private readonly w: World,
    private readonly ledger: Ledger,
  ) {}

  async start(): Promise<void> {
    const svc = await this.w.get('v1', 'Service', WIDGET);
    const url = `http://${svc!['spec']['clusterIP']}:8080/`;
    this.proc = this.w.lineProcess<Sample>([join(repoRoot, 'dist', 'test', 'support', 'traffic-client.js'), url, '40']);
    this.proc.onLine((s) => this.seen(s));
  }

  private seen(s: Sample): void {
    this.requests++;
    const during = this.ledger.during(s.t, 2000);
    if (!s.ok)
      this.ledger.failures.push({
        round: this.ledger.round,
        at: s.t,
        what: `request: ${s.error ?? `HTTP ${s.status}`}`,
        ...(during ? { during: during.fault } : {}),
      });
    this.ledger.check(
      'requests',
      s.ok,
      () =>
        `a request through the ClusterIP failed: ${s.error ?? `HTTP ${s.status}`}${during ? ` (during ${during.fault})` : ''}`,
    );
    const color = colorOfPod(s.pod);
    if (!color) return;
    const last = this.runs[this.runs.length - 1];
    if (last?.color === color) {
      last.answers++;
      return;
    }
    // A color answering again after another took over: traffic flipped back.
    const before = this.runs.slice(-3).map((r) => r.color);
    this.ledger.check(
      'requests',
      !(this.expected && color !== this.expected && before.includes(this.expected)),
      () => `answered by ${color} again after ${this.expected} took over`,
    );
    this.runs.push({ color, answers: 1, from: s.t });
  }

  /** The color the Widget was last asked for: answers of another color after it has answered are a flip back. */
  expected?: string;

  async stop(): Promise<void> {
    await this.proc?.stop();
  }
}

interface Held {
  kind: string;
  name: string;
  uid: string;
  /** The Database it belongs to (its instance label), if any. */
  database?: string;
}

/**
 * The data holders, read every second (the object store's keys every five):
 * each one seen is known by its uid (its key for a stored backup), and one
 * that goes must have been let go on purpose.
 */
export class HoldersMonitor {
  private stopped = false;
  private done?: Promise<void>;
  private seen = new Map<string, Held>();
  /** What the user deleted (kind/name), Databases deleted under Delete, stored backups retention removed. */
  private allowed: Array<(h: Held) => boolean> = [];
  private storedBackups = new Map<string, string>();

  constructor(
    private readonly w: World,
    private readonly ledger: Ledger,
    private readonly s3: S3Client,
  ) {}

  allow(what: string, f: (h: Held) => boolean): void {
    this.allowed.push(f);
    this.w.say(`  allowed to go: ${what}`);
  }

  /** A Completed backup's object, to be kept: its key and the backup's name. */
  completedBackup(location: string, backup: string): void {
    const key = /^s3:\/\/[^/]+\/(.+)$/.exec(location)?.[1];
    if (key) this.storedBackups.set(key, backup);
  }

  start(): void {
    this.done = (async () => {
      let tick = 0;
      while (!this.stopped) {
        const t = Date.now();
        try {
          await this.sweep(tick++ % 5 === 0);
        } catch {
          // The API server or the store away: next time.
        }
        await sleep(Math.max(0, 1000 - (Date.now() - t)));
      }
    })();
  }

  private async sweep(store: boolean): Promise<void> {
    const now = new Map<string, Held>();
    const label = (o: Json) => o['metadata']?.['labels']?.['app.kubernetes.io/instance'];
    for (const c of await this.w.list('v1', 'PersistentVolumeClaim'))
      now.set(c['metadata']['uid'], {
        kind: 'PersistentVolumeClaim',
        name: c['metadata']['name'],
        uid: c['metadata']['uid'],
        database: label(c),
      });
    const claims = new Map([...now.values()].map((h) => [h.name, h]));
    for (const v of await this.w.cp.client.listObjs('v1', 'PersistentVolume'))
      if (v['spec']?.['claimRef']?.['namespace'] === NS) {
        const claim =
          claims.get(v['spec']['claimRef']['name']) ??
          [...this.seen.values()].find(
            (h) => h.kind === 'PersistentVolumeClaim' && h.name === v['spec']['claimRef']['name'],
          );
        now.set(v['metadata']['uid'], {
          kind: 'PersistentVolume',
          name: v['metadata']['name'],
          uid: v['metadata']['uid'],
          ...(claim?.database ? { database: claim.database } : {}),
        });
      }
    for (const s of await this.w.list('v1', 'Secret'))
      if (String(s['metadata']['name']).endsWith('-db-credentials'))
        now.set(s['metadata']['uid'], {
          kind: 'Secret',
          name: s['metadata']['name'],
          uid: s['metadata']['uid'],
          database: label(s),
        });
    if (store) {
      const keys = new Set(await this.w.storedKeys(this.s3));
      for (const [key, backup] of this.storedBackups)
        if (keys.has(key))
          now.set(`s3:${key}`, { kind: 'stored backup', name: key, uid: `s3:${key}`, database: backup });
    } else for (const [uid, h] of this.seen) if (h.kind === 'stored backup') now.set(uid, h);
    for (const [uid, h] of this.seen) {
      if (now.has(uid)) continue;
      const ok = this.allowed.some((f) => f(h));
      this.ledger.check('holders', ok, () => `${h.kind} ${h.name} (uid ${h.uid}) is gone, and nobody let it go`);
      this.seen.delete(uid);
    }
    for (const [uid, h] of now) {
      this.ledger.checks.holders++;
      this.seen.set(uid, h);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/** What one instance of the Database holds: rows it was made with (a restore's), and rows committed to it. */
interface Lineage {
  /** Rows it was restored with: the backup's. */
  base: Set<number>;
  /** Rows committed to it, with when the writer had the commit back. */
  acked: Map<number, number>;
  firstRead: number;
}

/**
 * The Database's rows as the application sees them: the writer's commits and
 * reads, which server answered each (a restored instance is another), and
 * what each backup and restore must hold.
 */
export class RowsMonitor {
  private writer?: LineProcess<WriterLine>;
  lineages = new Map<string, Lineage>();
  /** Ids whose write failed after it may have reached a server: in a backup or not. */
  uncertain = new Set<number>();
  /** Instances a switch has left: no read may come from them again. */
  private left = new Set<string>();
  current?: string;
  /** The restore being switched to: the backup's rows. */
  private pending?: { backup: string; rows: Set<number> };
  /** A Database created again on what it kept: it must open the instance it last served. */
  reopening = false;
  /** Rows each backup holds, read from its dump. */
  backups = new Map<string, Set<number>>();
  writes = 0;
  failedWrites = 0;
  private config = '';

  constructor(
    private readonly w: World,
    private readonly ledger: Ledger,
  ) {}

  start(configFile: string): void {
    this.config = configFile;
    this.writer = this.w.startWriter(configFile);
    this.writer.onLine((l) => this.seen(l));
  }

  async stop(): Promise<void> {
    await this.writer?.stop();
  }

  /** A restore from `backup` is about to switch: the new instance must hold exactly its rows. */
  expectRestore(backup: string): void {
    const rows = this.backups.get(backup);
    if (!rows) throw new Error(`the rows of backup ${backup} are not known`);
    this.pending = { backup, rows };
  }

  /** The restore failed: nothing switches to it. */
  cancelRestore(): void {
    this.pending = undefined;
  }

  /** The Database is created again on what it kept under Retain. */
  expectReopen(): void {
    this.reopening = true;
  }

  /** When the writer last had a commit back. */
  lastOk(): number {
    return this.lastOkAt;
  }
  private lastOkAt = 0;

  private seen(l: WriterLine): void {
    this.writes++;
    if (!l.ok) {
      this.failedWrites++;
      if (l.sent) this.uncertain.add(l.id);
      const during = this.ledger.during(l.t0, 2000);
      this.ledger.failures.push({
        round: this.ledger.round,
        at: l.t0,
        what: `write: ${l.error}`,
        ...(during ? { during: during.fault } : {}),
      });
      return;
    }
    const ident = l.ident!;
    let lineage = this.lineages.get(ident);
    if (!lineage) {
      lineage = { base: new Set(), acked: new Map(), firstRead: l.t1 };
      this.lineages.set(ident, lineage);
      if (this.current !== undefined) this.arrived(ident, lineage, l);
    }
    this.ledger.check(
      'rows',
      !this.left.has(ident),
      () => `a read after the switch came from the instance before it (${ident}): a mix`,
    );
    if (this.current !== ident && this.current !== undefined && !this.left.has(ident)) this.left.add(this.current);
    if (!this.left.has(ident)) this.current = ident;
    lineage.acked.set(l.id, l.t1);
    this.lastOkAt = l.t1;
  }

  /** A new instance answers: a restore's (holding the backup's rows), or one that should not be. */
  private arrived(ident: string, lineage: Lineage, l: WriterLine): void {
    const before = this.current!;
    if (this.pending) {
      const { backup, rows } = this.pending;
      this.pending = undefined;
      lineage.base = rows;
      this.w.say(`  the application reads from a new instance (${ident}), restored from ${backup} (${rows.size} rows)`);
      // Every row of the backup, and nothing the instance before had beyond it (its count, here; sets below).
      const extra = l.count! - rows.size;
      this.ledger.check(
        'rows',
        extra >= 0 && extra <= 1 + this.uncertain.size,
        () => `the first read after the switch sees ${l.count} rows; the backup ${backup} holds ${rows.size}`,
      );
      void this.verifySet(ident, lineage).catch((e) =>
        this.w.say(`  (rows of ${ident} not read: ${(e as Error).message})`),
      );
      return;
    }
    // No restore switches: the Database opened other data than it served (created again on the wrong volume).
    this.ledger.check(
      'rows',
      false,
      () =>
        `the application now reads another instance (${ident}) than it wrote to (${before}) and no restore switched: ${l.count} rows${this.reopening ? ', after the Database was created again on what it kept' : ''}`,
    );
  }

  /** Every row the new instance holds is the backup's or was committed to it since (or might have been). */
  private async verifySet(ident: string, lineage: Lineage): Promise<void> {
    const out = await this.w.sql(this.config, `SELECT coalesce(string_agg(id::text, ','), '') FROM chaos_rows`);
    // The writer's lines for rows committed before that read have come in by now.
    await sleep(1500);
    const ids = new Set(out.split(',').filter(Boolean).map(Number));
    const missing = [...lineage.base].filter((id) => !ids.has(id));
    const foreign = [...ids].filter((id) => !lineage.base.has(id) && !lineage.acked.has(id) && !this.uncertain.has(id));
    this.ledger.check(
      'rows',
      missing.length === 0 && foreign.length === 0,
      () =>
        `instance ${ident} after the switch: ${missing.length} rows of the backup missing (${missing.slice(0, 3).join(', ')}), ${foreign.length} rows from elsewhere (${foreign.slice(0, 3).join(', ')})`,
    );
  }

  /** Reopened on what it kept: the first read must come from the instance last served, with its rows. */
  reopened(): void {
    this.reopening = false;
  }

  /**
   * A Completed backup of the Database: its dump holds every row committed,
   * to the instance it was taken of, before it started. Returns the rows it
   * holds (a restore from it must hold exactly those).
   */
  async checkBackup(name: string, startedAt: string, dump: Buffer): Promise<void> {
    const rows = parseDump(dump);
    this.backups.set(name, rows);
    const start = Date.parse(startedAt);
    // The instance it was taken of: the one the application wrote to last before it started.
    const writes = this.writer!.lines.filter((l) => l.ok && l.t1 < start);
    const ident = writes[writes.length - 1]?.ident;
    const lineage = ident ? this.lineages.get(ident) : undefined;
    if (!lineage) {
      this.w.say(`  backup ${name}: no commit before it started; ${rows.size} rows`);
      return;
    }
    const want = [...lineage.base, ...[...lineage.acked].filter(([, t]) => t < start).map(([id]) => id)];
    const missing = want.filter((id) => !rows.has(id));
    this.ledger.check(
      'rows',
      missing.length === 0,
      () =>
        `backup ${name} (started ${startedAt}) lacks ${missing.length} of the ${want.length} rows committed before it started (e.g. ${missing.slice(0, 3).join(', ')})`,
    );
    this.w.say(
      `  backup ${name}: ${rows.size} rows; every one of the ${want.length} committed before ${startedAt} is there`,
    );
  }
}

/** The ids of the rows table in a dump: pg_dump's custom format (read with Debian's pg_restore 15) or mysqldump's SQL. */
export function parseDump(dump: Buffer): Set<number> {
  const ids = new Set<number>();
  if (dump.subarray(0, 5).toString('latin1') === 'PGDMP') {
    const dir = mkdtempSync(join(tmpdir(), 'fp-chaos-dump-'));
    try {
      writeFileSync(join(dir, 'dump'), dump);
      const sql = execFileSync(
        '/usr/lib/postgresql/15/bin/pg_restore',
        ['--data-only', '-t', 'chaos_rows', '-f', '-', join(dir, 'dump')],
        { maxBuffer: 256 * 1024 * 1024 },
      ).toString();
      let inCopy = false;
      for (const line of sql.split('\n')) {
        if (line.startsWith('COPY ') && line.includes('chaos_rows')) inCopy = true;
        else if (line === '\\.') inCopy = false;
        else if (inCopy) ids.add(Number(line.split('\t')[0]));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return ids;
  }
  // mysqldump writes the values on the INSERT's line; MariaDB's, one row a line after it.
  for (const m of dump.toString('utf8').matchAll(/INSERT INTO `chaos_rows` VALUES\s*([\s\S]*?);\n/g))
    for (const v of m[1]!.matchAll(/\((\d+)[,)]/g)) ids.add(Number(v[1]));
  return ids;
}

export { DATABASE };
