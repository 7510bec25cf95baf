// Prometheus metrics, opt-in (--metrics-address): calls by blueprint and
// result, call durations, Fatal results by reason, AWS calls, the AWS facts
// cache, and per Database the times its alerts read (its newest backup, its
// newest failed one, the function's last answer and last Fatal one).
// Counting is a Map update per call; the text format is written only when
// scraped. Every label value comes from a fixed set of the function's own
// names (blueprints, severities, AWS operations), is a result reason checked
// to be an identifier, or is a Database's namespace and name checked to be a
// DNS name: no secret, ever.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RunFunctionRequest, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { LRUCache } from 'lru-cache';
import { hostPort } from './address.js';
import { DATABASE_GAUGES } from './blueprints/database/alerts.js';
import { isObj, str } from './kube.js';
import { ownerOf } from './request.js';

/** A result reason as a label: the function's reasons are identifiers; anything else is counted as "Other". */
export function reasonLabel(reason: string): string {
  return /^[A-Za-z][A-Za-z0-9]{0,63}$/.test(reason) ? reason : 'Other';
}

class Family {
  /** Label values joined by \u0000, to their series. */
  protected readonly series = new Map<string, number[]>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    readonly labels: readonly string[],
  ) {}

  protected slot(values: readonly string[], size: number): number[] {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      s = new Array<number>(size).fill(0);
      this.series.set(key, s);
    }
    return s;
  }

  protected labelText(values: readonly string[], extra?: string): string {
    const pairs = this.labels.map((l, i) => `${l}="${escapeLabel(values[i] ?? '')}"`);
    if (extra) pairs.push(extra);
    return pairs.length ? `{${pairs.join(',')}}` : '';
  }

  protected header(): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} ${this.type}\n`;
  }
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

export class Counter extends Family {
  constructor(name: string, help: string, labels: readonly string[] = []) {
    super(name, help, 'counter', labels);
  }

  inc(values: readonly string[] = [], by = 1): void {
    this.slot(values, 1)[0]! += by;
  }

  value(values: readonly string[] = []): number {
    return this.series.get(values.join('\u0000'))?.[0] ?? 0;
  }

  text(): string {
    let out = this.header();
    for (const [key, [v]] of this.series) out += `${this.name}${this.labelText(key.split('\u0000'))} ${v}\n`;
    return out;
  }
}

/** Buckets as Prometheus's client libraries default to, in seconds, with finer steps below 5 ms where calls are. */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram extends Family {
  constructor(
    name: string,
    help: string,
    labels: readonly string[],
    readonly buckets: readonly number[] = DURATION_BUCKETS,
  ) {
    super(name, help, 'histogram', labels);
  }

  /** Series layout: one count per bucket (not cumulative), then +Inf, sum, count. */
  observe(values: readonly string[], v: number): void {
    const s = this.slot(values, this.buckets.length + 3);
    let i = 0;
    while (i < this.buckets.length && v > this.buckets[i]!) i++;
    s[i]!++;
    s[this.buckets.length + 1]! += v;
    s[this.buckets.length + 2]!++;
  }

  text(): string {
    let out = this.header();
    const n = this.buckets.length;
    for (const [key, s] of this.series) {
      const values = key.split('\u0000');
      let cumulative = 0;
      for (let i = 0; i < n; i++) {
        cumulative += s[i]!;
        out += `${this.name}_bucket${this.labelText(values, `le="${this.buckets[i]}"`)} ${cumulative}\n`;
      }
      out += `${this.name}_bucket${this.labelText(values, 'le="+Inf"')} ${cumulative + s[n]!}\n`;
      out += `${this.name}_sum${this.labelText(values)} ${s[n + 1]}\n`;
      out += `${this.name}_count${this.labelText(values)} ${s[n + 2]}\n`;
    }
    return out;
  }
}

/** What each metric is, as its HELP line says it. */
const HELP = {
  calls: 'RunFunction calls answered, by blueprint and the most severe result (fatal, warning, normal, none).',
  duration: 'Time to answer a RunFunction call, by blueprint.',
  fatals: 'Fatal results returned, by reason.',
  awsCalls: 'AWS API calls made, by operation and outcome (ok, error).',
  cache: 'Lookups of the AWS facts cache, by result (hit, miss, inflight: shared with a request under way, stale).',
  cacheFailures: 'AWS facts reads that failed, and so were not cached.',
};

/** What the function last saw of one Database, in seconds since the epoch. */
interface DatabaseSeen {
  lastBackup?: number;
  lastFailedBackup?: number;
  lastAnswer?: number;
  lastVerified?: number;
  lastFailedVerification?: number;
  /** The newest Fatal answer and its reason: one reason a Database, the newest, so the series stay bounded. */
  fatal?: { reason: string; at: number };
}

/** The Database gauges (named where the alerts read them) and what each says, as its HELP line says it. */
const DATABASE_HELP = {
  lastBackup: [
    DATABASE_GAUGES.lastBackup,
    "When a Database's newest successful backup finished (its status.backup.lastSuccessfulTime), by database_namespace and database.",
  ],
  lastFailedBackup: [
    DATABASE_GAUGES.lastFailedBackup,
    "When a Database's newest backup failed that no success followed (its status.backup.lastFailedTime), by database_namespace and database.",
  ],
  lastVerified: [
    DATABASE_GAUGES.lastVerified,
    "When a Database's newest backup proven to restore was verified (its status.backup.lastVerifiedTime), by database_namespace and database.",
  ],
  lastFailedVerification: [
    DATABASE_GAUGES.lastFailedVerification,
    "When a Database's newest restore drill failed (its status.backup.lastVerification, when Failed), by database_namespace and database.",
  ],
  lastAnswer: [
    DATABASE_GAUGES.lastAnswer,
    'When the function last answered a Database without a Fatal result, by database_namespace and database.',
  ],
  lastFatal: [
    DATABASE_GAUGES.lastFatal,
    'When the function last answered a Database with a Fatal result, by database_namespace, database and reason.',
  ],
} as const;

/** A namespace or object name as Kubernetes allows one (a DNS subdomain): anything else is not exported. */
const DNS_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** Seconds since the epoch of an RFC 3339 time in status, if it is one. */
function seconds(text: string | undefined): number | undefined {
  const ms = Date.parse(text ?? '');
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

/**
 * Per-Database gauges, the sources of a Database's alerts (database/alerts.ts
 * names them), labelled database_namespace and database: a label `namespace`
 * would meet the scraped pod's own and be renamed. Their values are times
 * that only move forward, so that the replicas of the function, each
 * exporting what it last saw, never contradict each other: the alerts take
 * the newest across them (max by database_namespace, database).
 * At most `max` Databases are kept, the least recently answered dropped first:
 * a deleted Database's series go that way, and its alerts went with it.
 */
export class DatabaseGauges {
  private readonly seen: LRUCache<string, DatabaseSeen>;
  constructor(max = 10_000) {
    this.seen = new LRUCache({ max });
  }

  get size(): number {
    return this.seen.size;
  }

  /** One answer to a Database's call, at `at`: its status's backup times, or its Fatal reason. */
  answered(req: RunFunctionRequest, rsp: RunFunctionResponse, at: Date): void {
    const xr = req.observed?.composite?.resource;
    if (!isObj(xr)) return;
    let namespace: string;
    let name: string;
    try {
      const owner = ownerOf(xr);
      namespace = owner.namespace;
      name = owner.claim?.name ?? owner.name;
    } catch {
      return;
    }
    if (!DNS_NAME.test(namespace) || !DNS_NAME.test(name)) return;
    const key = `${namespace}/${name}`;
    const was = this.seen.get(key) ?? {};
    const next: DatabaseSeen = { ...was };
    const later = (a: number | undefined, b: number | undefined) =>
      a === undefined ? b : b === undefined ? a : Math.max(a, b);
    const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
    const when = at.getTime() / 1000;
    if (fatal) next.fatal = { reason: reasonLabel(fatal.reason ?? ''), at: Math.max(when, was.fatal?.at ?? 0) };
    else {
      next.lastAnswer = later(was.lastAnswer, when);
      const composite = rsp.desired?.composite?.resource;
      const backup = isObj(composite) ? composite : {};
      next.lastBackup = later(was.lastBackup, seconds(str(backup, 'status', 'backup', 'lastSuccessfulTime')));
      next.lastFailedBackup = later(was.lastFailedBackup, seconds(str(backup, 'status', 'backup', 'lastFailedTime')));
      next.lastVerified = later(was.lastVerified, seconds(str(backup, 'status', 'backup', 'lastVerifiedTime')));
      const drill = str(backup, 'status', 'backup', 'lastVerification', 'result');
      if (drill === 'Failed')
        next.lastFailedVerification = later(
          was.lastFailedVerification,
          seconds(str(backup, 'status', 'backup', 'lastVerification', 'verifiedAt')),
        );
    }
    this.seen.set(key, next);
  }

  text(): string {
    let out = '';
    const family = (which: keyof typeof DATABASE_HELP, value: (s: DatabaseSeen) => [string, number] | undefined) => {
      const [metric, help] = DATABASE_HELP[which];
      out += `# HELP ${metric} ${help}\n# TYPE ${metric} gauge\n`;
      for (const [key, s] of this.seen.entries()) {
        const v = value(s);
        if (!v) continue;
        const [namespace, name] = key.split('/');
        out += `${metric}{database_namespace="${namespace}",database="${name}"${v[0]}} ${v[1]}\n`;
      }
    };
    const plain = (v: number | undefined): [string, number] | undefined => (v === undefined ? undefined : ['', v]);
    family('lastBackup', (s) => plain(s.lastBackup));
    family('lastFailedBackup', (s) => plain(s.lastFailedBackup));
    family('lastVerified', (s) => plain(s.lastVerified));
    family('lastFailedVerification', (s) => plain(s.lastFailedVerification));
    family('lastAnswer', (s) => plain(s.lastAnswer));
    family('lastFatal', (s) => (s.fatal ? [`,reason="${s.fatal.reason}"`, s.fatal.at] : undefined));
    return out;
  }
}

/** What the function counts. */
export class Metrics {
  readonly calls = new Counter('function_platform_calls_total', HELP.calls, ['blueprint', 'result']);
  readonly duration = new Histogram('function_platform_call_duration_seconds', HELP.duration, ['blueprint']);
  readonly fatals = new Counter('function_platform_fatal_results_total', HELP.fatals, ['reason']);
  readonly awsCalls = new Counter('function_platform_aws_calls_total', HELP.awsCalls, ['operation', 'outcome']);
  readonly cache = new Counter('function_platform_aws_facts_cache_total', HELP.cache, ['result']);
  readonly cacheFailures = new Counter('function_platform_aws_facts_failures_total', HELP.cacheFailures);
  readonly databases = new DatabaseGauges();

  text(): string {
    return (
      [this.calls, this.duration, this.fatals, this.awsCalls, this.cache, this.cacheFailures]
        .map((f) => f.text())
        .join('') + this.databases.text()
    );
  }
}

/** Serves GET /metrics on `address` (host:port, :port for every interface); resolves with the port bound. */
export function serveMetrics(metrics: Metrics, address: string): Promise<{ server: Server; port: number }> {
  let host: string | undefined;
  let port: number;
  try {
    ({ host, port } = hostPort(address, '--metrics-address'));
  } catch (err) {
    return Promise.reject(err);
  }
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }).end(metrics.text());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({ server, port: (server.address() as AddressInfo).port });
    });
  });
}
