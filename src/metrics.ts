// Prometheus metrics, opt-in (--metrics-address): calls by blueprint and
// result, call durations, Fatal results by reason, AWS calls, the AWS facts
// cache. Counting is a Map update per call; the text format is written only
// when scraped. Every label value comes from a fixed set of the function's own
// names (blueprints, severities, AWS operations) or is a result reason checked
// to be an identifier: nothing a request carries, so no secret, ever.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostPort } from './address.js';

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

/** What the function counts. */
export class Metrics {
  readonly calls = new Counter('function_platform_calls_total', HELP.calls, ['blueprint', 'result']);
  readonly duration = new Histogram('function_platform_call_duration_seconds', HELP.duration, ['blueprint']);
  readonly fatals = new Counter('function_platform_fatal_results_total', HELP.fatals, ['reason']);
  readonly awsCalls = new Counter('function_platform_aws_calls_total', HELP.awsCalls, ['operation', 'outcome']);
  readonly cache = new Counter('function_platform_aws_facts_cache_total', HELP.cache, ['result']);
  readonly cacheFailures = new Counter('function_platform_aws_facts_failures_total', HELP.cacheFailures);

  text(): string {
    return [this.calls, this.duration, this.fatals, this.awsCalls, this.cache, this.cacheFailures]
      .map((f) => f.text())
      .join('');
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
