// The gRPC edge: a RunFunction server, plaintext (--insecure) or mutual TLS as
// Crossplane's function runner speaks it.
import * as grpc from '@grpc/grpc-js';
import type { AddressInfo } from 'node:net';
import * as tls from 'node:tls';
import {
  FunctionRunnerServiceService,
  RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
  Target,
} from '@crossplane-org/function-sdk-typescript';
import { hostPort } from './address.js';
import { AwsFactsSource } from './aws/facts.js';
import { now } from './clock.js';
import { EventMemory } from './events.js';
import type { Log } from './function.js';
import { answerLive } from './live.js';
import { type Metrics, reasonLabel } from './metrics.js';
import { judgeClient, nameOf, readServerTls } from './tls.js';
import { decodeRunFunctionRequest, encodeRunFunctionResponse, lastDecodeHoldsBytes } from './wire.js';
import { type CallBytes, GrpcError, GrpcStatus } from './grpc-call.js';
import { GrpcFramesServer } from './grpc-frames.js';
import { GrpcHttp2Server } from './grpc-http2.js';

/** Requests larger than this are refused by gRPC itself, before they are parsed. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** Answers larger than this cannot be sent; they become a Fatal result that says so. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export interface ServerOptions {
  address: string;
  insecure: boolean;
  tlsServerCertsDir: string;
}

/**
 * A request off the wire. The fast decoder reads every well-formed message as
 * the SDK's does; on bytes it refuses (groups, truncated fields) the SDK's own
 * decoder has the last word, so nothing the SDK accepts is refused here.
 * When what it returns still points into the bytes, the call keeps them.
 */
export function decodeRequest(bytes: Buffer, call?: CallBytes): RunFunctionRequest {
  try {
    const req = decodeRunFunctionRequest(bytes);
    if (lastDecodeHoldsBytes()) call?.keepRequest();
    return req;
  } catch {
    // The SDK's decoder hands out bytes fields as slices of the request.
    call?.keepRequest();
    return RunFunctionRequest.decode(bytes);
  }
}

/**
 * The answer on the wire. One too large to send (an earlier step's desired
 * state or context carried through, say) would end the call with a bare gRPC
 * error; it becomes a Fatal result instead, so the user reads why.
 */
function encodeResponse(rsp: RunFunctionResponse, call?: CallBytes): Buffer {
  const bytes = encodeRunFunctionResponse(rsp, call?.answer);
  if (bytes.length <= MAX_RESPONSE_BYTES) return bytes;
  const mib = (n: number) => (n / (1024 * 1024)).toFixed(1);
  const tooLarge: RunFunctionResponse = {
    meta: rsp.meta,
    desired: { composite: undefined, resources: {} },
    results: [
      {
        severity: Severity.SEVERITY_FATAL,
        reason: 'ResponseTooLarge',
        message: `function-platform's answer would be ${mib(bytes.length)} MiB, over the ${mib(MAX_RESPONSE_BYTES)} MiB a function may send; nothing was changed`,
        target: Target.TARGET_COMPOSITE_AND_CLAIM,
      },
    ],
    context: undefined,
    requirements: undefined,
    conditions: [],
  };
  return encodeRunFunctionResponse(tooLarge, call?.answer);
}

const SEVERITY_LABEL: Record<number, string> = {
  [Severity.SEVERITY_FATAL]: 'fatal',
  [Severity.SEVERITY_WARNING]: 'warning',
  [Severity.SEVERITY_NORMAL]: 'normal',
};

/** Counts one answered call: the blueprint that served it ("none": none does), its most severe result, its Fatal reasons. */
function countCall(
  metrics: Metrics,
  blueprint: string,
  req: RunFunctionRequest,
  rsp: RunFunctionResponse,
  seconds: number,
): void {
  let worst = 'none';
  for (const r of rsp.results) {
    if (r.severity === Severity.SEVERITY_FATAL) {
      worst = 'fatal';
      metrics.fatals.inc([reasonLabel(r.reason ?? '')]);
    } else if (worst !== 'fatal' && (r.severity === Severity.SEVERITY_WARNING || worst === 'none'))
      worst = SEVERITY_LABEL[r.severity] ?? worst;
  }
  metrics.calls.inc([blueprint, worst]);
  metrics.duration.observe([blueprint], seconds);
  // What a Database's alerts read: the times its status says, and whether it was answered Fatal.
  if (blueprint === 'database') metrics.databases.answered(req, rsp, now());
}

/** A call answered: never rejects (failures are Fatal results). */
type Answer = (req: RunFunctionRequest) => Promise<RunFunctionResponse>;

/**
 * One RunFunction call, whatever carries it: the request answered (never
 * rejects: failures are Fatal results, AWS trouble is a warning), counted, and
 * its events filtered to those not said before.
 */
function runFunction(log: Log, aws: AwsFactsSource, metrics: Metrics | undefined): Answer {
  const events = new EventMemory();
  return async (req) => {
    // Whatever the request carries there: only a string names a composite.
    const raw: unknown = req.observed?.composite?.resource?.['metadata']?.['uid'];
    const uid = typeof raw === 'string' ? raw : undefined;
    const start = metrics ? performance.now() : 0;
    const { rsp, blueprint } = await answerLive(req, aws, log);
    if (metrics) countCall(metrics, blueprint ?? 'none', req, rsp, (performance.now() - start) / 1000);
    return events.filter(uid, rsp, req);
  };
}

/**
 * What carries the calls: HTTP/2 framed by the function (src/grpc-frames.ts), node:http2
 * (src/grpc-http2.ts), or grpc-js as before both.
 */
export type Transport = 'frames' | 'http2' | 'grpc-js';
export const TRANSPORTS: readonly Transport[] = ['frames', 'http2', 'grpc-js'];
/** What carries the calls when FUNCTION_PLATFORM_TRANSPORT says nothing. */
export const DEFAULT_TRANSPORT: Transport = 'frames';

/** A server of calls on one transport, with connections its own or handed to it. */
interface Carrier {
  listen(host: string | undefined, port: number, address: string): Promise<number>;
  serveConnection(socket: tls.TLSSocket): void;
  shutdown(graceMs: number): Promise<void>;
}

function http2Carrier(answer: Answer, log: Log, Server: typeof GrpcHttp2Server | typeof GrpcFramesServer): Carrier {
  const handler = async (bytes: Buffer, call: CallBytes): Promise<Buffer> => {
    let req: RunFunctionRequest;
    try {
      req = decodeRequest(bytes, call);
    } catch (err) {
      throw new GrpcError(GrpcStatus.INTERNAL, `cannot decode the request: ${(err as Error).message}`);
    }
    return encodeResponse(await answer(req), call);
  };
  const server = new Server({
    methods: new Map([[FunctionRunnerServiceService.runFunction.path, handler]]),
    maxReceiveBytes: MAX_REQUEST_BYTES,
    onHandlerError: (err, path) =>
      log.warn({ path, error: err instanceof Error ? err.message : String(err) }, 'a call failed unanswered'),
  });
  return {
    listen: (host, port) => server.listen(port, host),
    serveConnection: (socket) => server.serveConnection(socket),
    shutdown: (graceMs) => server.drain(graceMs),
  };
}

function grpcJsCarrier(answer: Answer): Carrier {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    'grpc.max_send_message_length': MAX_REQUEST_BYTES,
    // Channel statistics cost CPU on every call and nothing here reads them.
    'grpc.enable_channelz': 0,
  });
  server.addService(
    {
      ...FunctionRunnerServiceService,
      // The same bytes as the SDK's generated codec, without its per-value wrappers (see src/wire.ts).
      runFunction: {
        ...FunctionRunnerServiceService.runFunction,
        requestDeserialize: decodeRequest,
        responseSerialize: encodeResponse,
      },
    },
    {
      runFunction(
        call: grpc.ServerUnaryCall<RunFunctionRequest, RunFunctionResponse>,
        callback: grpc.sendUnaryData<RunFunctionResponse>,
      ) {
        void answer(call.request).then((rsp) => callback(null, rsp));
      },
    },
  );
  let injector: grpc.ConnectionInjector | undefined;
  return {
    listen: (_host, _port, address) =>
      new Promise((resolve, reject) => {
        server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) =>
          err ? reject(err) : resolve(port),
        );
      }),
    serveConnection: (socket) => {
      injector ??= server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
      injector.injectConnection(socket);
    },
    shutdown: (graceMs) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/**
 * The RunFunction server. Plaintext (--insecure) is served by the transport
 * itself. Mutual TLS terminates in a TLS server of our own that asks for the
 * client's certificate, judges it once per connection (src/tls.ts says why
 * OpenSSL must not) and hands accepted connections to the transport, which
 * then serves them exactly as it serves its own.
 */
export class FunctionServer {
  private readonly carrier: Carrier;
  private tlsListener: tls.Server | undefined;

  constructor(
    private readonly log: Log,
    aws = new AwsFactsSource(),
    metrics?: Metrics,
    transport: Transport = DEFAULT_TRANSPORT,
  ) {
    const answer = runFunction(log, aws, metrics);
    this.carrier =
      transport === 'grpc-js'
        ? grpcJsCarrier(answer)
        : http2Carrier(answer, log, transport === 'frames' ? GrpcFramesServer : GrpcHttp2Server);
  }

  /** Binds and resolves with the port actually bound (useful with port 0). */
  async listen(opts: ServerOptions): Promise<number> {
    const { host, port } = hostPort(opts.address);
    if (opts.insecure) return this.carrier.listen(host, port, opts.address);
    const creds = readServerTls(opts.tlsServerCertsDir);
    for (const ca of creds.trusted) {
      this.log.info(
        { ca: nameOf(ca) },
        `client certificates must be signed by ${nameOf(ca).subject} (sha256 ${ca.fingerprint256})`,
      );
    }
    const listener = tls.createServer({
      cert: creds.cert,
      key: creds.key,
      // Sent to the client as the acceptable CAs; verification is ours (judgeClient).
      ca: creds.ca,
      requestCert: true,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
      minVersion: 'TLSv1.2',
    });
    listener.on('secureConnection', (socket: tls.TLSSocket) => {
      const verdict = judgeClient(socket.getPeerX509Certificate(), creds.trusted);
      if (!verdict.ok) {
        this.log.warn(
          { reason: verdict.reason, client: verdict.client, remote: socket.remoteAddress },
          `refused a client: ${verdict.reason}`,
        );
        socket.destroy();
        return;
      }
      this.log.debug({ client: verdict.client, remote: socket.remoteAddress }, 'accepted a client certificate');
      this.carrier.serveConnection(socket);
    });
    // A connection that is not TLS, or whose handshake fails, never reaches the transport.
    listener.on('tlsClientError', (err: Error & { reason?: string }, socket: tls.TLSSocket) => {
      // OpenSSL's short reason ("wrong version number" for plaintext), not its whole error stack.
      const reason = err.reason ?? err.message;
      this.log.warn({ reason, remote: socket.remoteAddress }, `refused a connection: TLS handshake failed (${reason})`);
    });
    this.tlsListener = listener;
    return new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        resolve((listener.address() as AddressInfo).port);
      });
    });
  }

  /** Stops accepting, lets in-flight calls finish, and forces the rest after the grace period. */
  shutdown(graceMs: number): Promise<void> {
    this.tlsListener?.close();
    return this.carrier.shutdown(graceMs);
  }
}
