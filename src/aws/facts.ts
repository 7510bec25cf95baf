// What AWS itself says about a Database: whether its instance can be ordered,
// the instance's state (and so the latest time it can be restored to). This is the one
// place the function talks to AWS: every call has one short timeout and no
// retries, answers are cached per composite for a bounded time (a reconcile
// storm must not become an AWS storm), concurrent asks share one request, and
// clients are reused. Failures become warnings, never errors.
import type { RDSClient } from '@aws-sdk/client-rds';
import { LRUCache } from 'lru-cache';
import { type AwsAnswer, type AwsQuestion, earliestRestorable } from '../facts.js';
import type { Metrics } from '../metrics.js';
import { type AwsCredentials, scrub } from './credentials.js';

/** What the function asks AWS about one Database: the blueprint's question, with the step's credentials. */
export interface AwsQuery extends AwsQuestion {
  credentials: AwsCredentials;
  endpoint?: string;
}

export type AwsFacts = AwsAnswer;

export interface AwsFactsOptions {
  /** The limit of each AWS call, connection included. */
  timeoutMs?: number;
  /** How long an answer is reused for the same composite. */
  ttlMs?: number;
  /** Composites (and client sets) remembered at most. */
  maxEntries?: number;
  /** Where AWS calls and cache lookups are counted (--metrics-address). */
  metrics?: Metrics;
}

interface Clients {
  rds: RDSClient;
}

type Sdk = {
  rds: typeof import('@aws-sdk/client-rds');
  http: typeof import('@smithy/node-http-handler');
};
let sdk: Promise<Sdk> | undefined;
/** The SDK loads on first use: a function with no AWS credentials never pays for it. */
function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([import('@aws-sdk/client-rds'), import('@smithy/node-http-handler')]).then(([rds, http]) => ({
    rds,
    http,
  }));
  return sdk;
}

/** What went wrong, short, with every credential taken out before anything is cut (a cut could split one). */
function errorText(err: unknown, creds: AwsCredentials): string {
  if (err instanceof Error) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    // The first sentence is enough to act on; AWS messages can go on to quote the request.
    const first = scrub(err.message, creds).split(/(?<=\.)\s/)[0] ?? '';
    return `${scrub(err.name, creds)}${status ? ` (HTTP ${status})` : ''}${first ? `: ${first.slice(0, 200)}` : ''}`;
  }
  return 'unknown error';
}

export class AwsFactsSource {
  private readonly timeoutMs: number;
  /** Answers per composite for a bounded time, with concurrent asks sharing one request (lru-cache's fetch). */
  private readonly facts: LRUCache<string, AwsFacts, AwsQuery>;
  private readonly clients: LRUCache<string, Clients>;
  private readonly metrics: Metrics | undefined;
  /** AWS calls actually made, for tests and the benchmark. */
  calls = 0;

  constructor(opts: AwsFactsOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 2000;
    this.metrics = opts.metrics;
    this.facts = new LRUCache<string, AwsFacts, AwsQuery>({
      max: opts.maxEntries ?? 1000,
      ttl: opts.ttlMs ?? 30_000,
      fetchMethod: (_key, _stale, { context }) => this.ask(context),
    });
    this.clients = new LRUCache({ max: 50 });
  }

  /** Facts for a composite: cached, or shared with a request already under way. */
  async gather(q: AwsQuery): Promise<AwsFacts> {
    const key = `${q.cacheKey}|${q.beforeCreation ? 'create' : 'observe'}`;
    const status: LRUCache.Status<string, AwsFacts, AwsQuery> = {};
    const facts = (await this.facts.fetch(key, { context: q, status }))!;
    if (this.metrics) this.metrics.cache.inc([status.fetch ?? 'miss']);
    // A failed read is not remembered: the next reconcile tries again.
    if (facts.warnings.length > 0 && this.facts.peek(key) === facts) {
      this.facts.delete(key);
      this.metrics?.cacheFailures.inc();
    }
    return facts;
  }

  private async clientsFor(q: AwsQuery): Promise<Clients> {
    const key = `${q.region}|${q.endpoint ?? ''}|${q.credentials.accessKeyId}|${q.credentials.secretAccessKey.length}`;
    const known = this.clients.get(key);
    if (known) return known;
    const { rds, http } = await loadSdk();
    const { accessKeyId, secretAccessKey, sessionToken } = q.credentials;
    const common = {
      region: q.region,
      credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
      ...(q.endpoint ? { endpoint: q.endpoint } : {}),
      maxAttempts: 1,
      requestHandler: new http.NodeHttpHandler({ connectionTimeout: this.timeoutMs, requestTimeout: this.timeoutMs }),
      // The SDK's own logger stays silent: it could print requests.
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    };
    const made = { rds: new rds.RDSClient(common) };
    this.clients.set(key, made);
    return made;
  }

  private async ask(q: AwsQuery): Promise<AwsFacts> {
    const facts: AwsFacts = { observedAt: new Date().toISOString(), warnings: [] };
    let clients: Clients;
    try {
      clients = await this.clientsFor(q);
    } catch (err) {
      facts.warnings.push(`cannot set up AWS clients: ${errorText(err, q.credentials)}`);
      return facts;
    }
    const { rds } = await loadSdk();
    const signal = () => AbortSignal.timeout(this.timeoutMs + 250);
    const attempt = async (what: string, call: () => Promise<void>) => {
      this.calls++;
      try {
        await call();
        this.metrics?.awsCalls.inc([what, 'ok']);
      } catch (err) {
        this.metrics?.awsCalls.inc([what, 'error']);
        facts.warnings.push(`AWS ${what} failed: ${errorText(err, q.credentials)}`);
      }
    };

    if (q.beforeCreation) {
      await attempt('DescribeOrderableDBInstanceOptions', async () => {
        const major = (v: string | undefined) => v === q.version || (v ?? '').startsWith(`${q.version}.`);
        const withClass = await clients.rds.send(
          new rds.DescribeOrderableDBInstanceOptionsCommand({
            Engine: q.engine,
            DBInstanceClass: q.instanceClass,
            MaxRecords: 1000,
          }),
          { abortSignal: signal() },
        );
        // The class is filtered here as well: not every endpoint honours the filter.
        if (
          (withClass.OrderableDBInstanceOptions ?? []).some(
            (o) => o.DBInstanceClass === q.instanceClass && major(o.EngineVersion),
          )
        )
          return;
        // A definite no: say what can be ordered instead.
        const all = await clients.rds.send(
          new rds.DescribeOrderableDBInstanceOptionsCommand({ Engine: q.engine, MaxRecords: 1000 }),
          { abortSignal: signal() },
        );
        const options = all.OrderableDBInstanceOptions ?? [];
        if (options.length === 0) {
          // No option at all for the engine is no answer about this instance (an emulator may know none): say so, refuse nothing.
          facts.warnings.push(
            `AWS lists no orderable ${q.engine} options in ${q.region}, so ${q.instanceClass} could not be checked`,
          );
          return;
        }
        const classes = [...new Set(options.filter((o) => major(o.EngineVersion)).map((o) => o.DBInstanceClass ?? ''))]
          .filter(Boolean)
          .sort();
        const versions = [...new Set(options.map((o) => (o.EngineVersion ?? '').split('.')[0]!))]
          .filter(Boolean)
          .sort((a, b) => Number(a) - Number(b));
        facts.notOrderable =
          classes.length > 0
            ? {
                field: q.instanceClassField,
                message: `${q.instanceClass} cannot be ordered for ${q.engine} ${q.version} in ${q.region}; orderable there: ${classes.slice(0, 30).join(', ')}`,
              }
            : {
                field: 'spec.version',
                message: `${q.engine} ${q.version} cannot be ordered in ${q.region}; orderable major versions there: ${versions.join(', ') || 'none'}`,
              };
      });
      return facts;
    }

    await Promise.all([
      attempt('DescribeDBInstances', async () => {
        const out = await clients.rds.send(new rds.DescribeDBInstancesCommand({ DBInstanceIdentifier: q.identifier }), {
          abortSignal: signal(),
        });
        const db = out.DBInstances?.[0];
        if (db) {
          facts.instance = {
            ...(db.DBInstanceStatus ? { dbInstanceStatus: db.DBInstanceStatus } : {}),
            ...(db.EngineVersion ? { engineVersion: db.EngineVersion } : {}),
            ...(db.LatestRestorableTime
              ? { latestRestorableTime: new Date(db.LatestRestorableTime).toISOString() }
              : {}),
            ...earliestRestorable(db.InstanceCreateTime, db.BackupRetentionPeriod, new Date()),
          };
        }
      }),
    ]);
    return facts;
  }
}
