#!/usr/bin/env node
// The function's entry point, as Crossplane runs it:
//   node dist/src/main.js [--address 0.0.0.0:9443] [--insecure] [--tls-server-certs-dir /tls/server] [--debug]
//                         [--metrics-address :8080]
// Crossplane passes none of these (a DeploymentRuntimeConfig can add them);
// the SDK parses all but --metrics-address, which is ours.
import { helpText, parseArgs } from '@crossplane-org/function-sdk-typescript';
import { pino } from 'pino';
import { AwsFactsSource } from './aws/facts.js';
import { setClock } from './clock.js';
import { fileClock } from './file-clock.js';
import { Metrics, serveMetrics } from './metrics.js';
import { DEFAULT_TRANSPORT, FunctionServer, TRANSPORTS, type Transport } from './server.js';

const GRACE_MS = 10_000;

/**
 * --metrics-address A or --metrics-address=A taken out of argv, so the SDK's
 * parser (which refuses flags it does not know) sees the rest. Off by default:
 * the endpoint is plain HTTP without authentication, and a fixed port would
 * clash where several functions run on one host (the External runtime).
 */
function takeMetricsAddress(argv: string[]): { address: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let address: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--metrics-address') {
      address = argv[++i];
      if (address === undefined || address.startsWith('--')) throw new Error('--metrics-address needs host:port');
    } else if (a.startsWith('--metrics-address=')) address = a.slice('--metrics-address='.length);
    else rest.push(a);
  }
  return { address, rest };
}

function main(): void {
  let args: ReturnType<typeof parseArgs>;
  let metricsAddress: string | undefined;
  try {
    const taken = takeMetricsAddress(process.argv.slice(2));
    metricsAddress = taken.address;
    args = parseArgs(taken.rest);
  } catch (err) {
    process.stderr.write(
      `function-platform: ${err instanceof Error ? err.message : String(err)}\nTry --help for the flags.\n`,
    );
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      `${helpText('function-platform')}\n  --metrics-address=HOST:PORT  serve Prometheus metrics at /metrics (default: off)\n\nEnvironment:\n  FUNCTION_PLATFORM_TRANSPORT=${TRANSPORTS.join('|')}  what serves gRPC (default: ${DEFAULT_TRANSPORT})\n`,
    );
    process.exit(0);
  }
  const log = pino({
    level: args.debug ? 'debug' : 'info',
    base: { fn: 'function-platform' },
    formatters: { level: (label) => ({ severity: label.toUpperCase() }) },
  });
  // Each AWS call's limit; the default suits Crossplane's reconcile, an emulator may want more.
  const timeoutMs = Number(process.env['FUNCTION_PLATFORM_AWS_TIMEOUT_MS'] ?? '') || undefined;
  // Tests move the clock: a file with an ISO 8601 time, read on every call (src/clock.ts).
  const clockFile = process.env['FUNCTION_PLATFORM_CLOCK_FILE'];
  if (clockFile) {
    setClock(fileClock(clockFile));
    log.warn({ clockFile }, 'the time of every call is read from FUNCTION_PLATFORM_CLOCK_FILE (a test setting)');
  }
  // What carries the calls: see DEFAULT_TRANSPORT; the transports before it stay selectable for one release more.
  const transport = (process.env['FUNCTION_PLATFORM_TRANSPORT'] || DEFAULT_TRANSPORT) as Transport;
  if (!TRANSPORTS.includes(transport)) {
    const names = `${TRANSPORTS.slice(0, -1).join(', ')} or ${TRANSPORTS.at(-1)}`;
    process.stderr.write(
      `function-platform: FUNCTION_PLATFORM_TRANSPORT must be ${names}, not ${JSON.stringify(transport)}\n`,
    );
    process.exit(2);
  }
  const metrics = metricsAddress !== undefined ? new Metrics() : undefined;
  const server = new FunctionServer(
    log,
    new AwsFactsSource({ ...(timeoutMs ? { timeoutMs } : {}), ...(metrics ? { metrics } : {}) }),
    metrics,
    transport,
  );
  if (metrics && metricsAddress !== undefined) {
    serveMetrics(metrics, metricsAddress).then(
      ({ port }) => log.info({ metricsAddress, metricsPort: port }, `metrics on port ${port} at /metrics`),
      (err: Error) => {
        log.error({ error: err.message }, 'cannot serve metrics');
        process.exit(1);
      },
    );
  }
  const opts = {
    address: args.address,
    insecure: args.insecure ?? false,
    tlsServerCertsDir: args.tlsServerCertsDir ?? '/tls/server',
  };
  server.listen(opts).then(
    (port) => log.info({ address: args.address, port, tls: !args.insecure, transport }, `listening on port ${port}`),
    (err: Error) => {
      log.error({ error: err.message }, 'cannot start the server');
      process.exit(1);
    },
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing calls in flight');
    void server.shutdown(GRACE_MS).then(() => {
      log.info({}, 'stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
