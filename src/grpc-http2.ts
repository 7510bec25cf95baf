// gRPC unary calls served on node:http2 (issue 31): grpc-js cost about as
// much server CPU per call as everything the function does (bench: "Transport
// floors"). node:http2 carries the calls; src/grpc-call.ts says what a call
// is. Every connection is pinged now and then and dropped when the peer no
// longer answers; draining sends GOAWAY and lets the calls on their way finish.
import * as http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  type CallHeaders,
  type CallServer,
  type CallStream,
  CONNECTION_WINDOW,
  callPool,
  drained,
  type GrpcServerOptions,
  KEEPALIVE,
  MAX_HEADER_LIST,
  STREAM_WINDOW,
  serveCall,
} from './grpc-call.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_CANCEL } = http2.constants;

/**
 * The server: a plaintext HTTP/2 server whose connections are either its own
 * (listen) or handed over already secured (serveConnection; the TLS listener
 * in src/server.ts judges client certificates first).
 */
export class GrpcHttp2Server implements CallServer {
  private readonly h2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly keepaliveMs: number;
  private readonly keepaliveTimeoutMs: number;
  private draining = false;
  readonly pool = callPool();

  constructor(readonly opts: GrpcServerOptions) {
    this.keepaliveMs = opts.keepaliveMs ?? KEEPALIVE.everyMs;
    this.keepaliveTimeoutMs = opts.keepaliveTimeoutMs ?? KEEPALIVE.timeoutMs;
    this.h2 = http2.createServer({
      // Node counts answers waiting to be sent against this, and past it refuses new calls with
      // ENHANCE_YOUR_CALM (RESOURCE_EXHAUSTED to the client): a few large answers on Crossplane's one
      // connection would fail unrelated calls. Off, as grpc-js has it; the bounds are per message.
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      settings: { maxHeaderListSize: MAX_HEADER_LIST, initialWindowSize: STREAM_WINDOW },
    });
    this.h2.on('session', (session) => this.track(session));
    this.h2.on('stream', (stream, headers) => this.call(stream, headers));
    // A peer that breaks the protocol loses its connection; nothing else needs to hear of it.
    this.h2.on('sessionError', () => {});
  }

  /** Serves plaintext connections on host:port; resolves with the port bound. */
  listen(port: number, host: string | undefined): Promise<number> {
    return new Promise((resolve, reject) => {
      this.h2.once('error', reject);
      this.h2.listen(port, host, () => {
        this.h2.off('error', reject);
        const addr = this.h2.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  /** Serves a connection accepted elsewhere (a TLS socket that negotiated h2). */
  serveConnection(socket: Duplex): void {
    if (this.draining) {
      socket.destroy();
      return;
    }
    this.h2.emit('connection', socket);
  }

  /**
   * Stops accepting, sends GOAWAY on every connection and lets the calls on
   * their way finish; after `graceMs` the rest are cut. Resolves when no
   * connection is left.
   */
  drain(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.h2.listening) this.h2.close();
    for (const s of this.sessions) s.close();
    return drained(
      () => this.sessions.size,
      () => {
        for (const s of this.sessions) s.destroy(undefined, NGHTTP2_CANCEL);
        this.sessions.clear();
      },
      graceMs,
    );
  }

  private track(session: http2.ServerHttp2Session): void {
    if (this.draining) {
      session.destroy();
      return;
    }
    this.sessions.add(session);
    session.setLocalWindowSize(CONNECTION_WINDOW);
    session.on('error', () => {});
    session.once('close', () => this.sessions.delete(session));
    // Keepalive, as gRPC does it: a PING every keepaliveMs; a peer that no longer answers is dropped.
    const keepalive = setInterval(() => {
      if (session.closed || session.destroyed) return;
      const cut = setTimeout(() => session.destroy(), this.keepaliveTimeoutMs);
      cut.unref();
      const sent = session.ping((err) => {
        clearTimeout(cut);
        if (err) session.destroy();
      });
      if (!sent) {
        clearTimeout(cut);
        session.destroy();
      }
    }, this.keepaliveMs);
    keepalive.unref();
    session.once('close', () => clearInterval(keepalive));
  }

  private call(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    // A reset by the client (a cancelled call) is not an error of ours.
    stream.on('error', () => {});
    const events = serveCall(this, nodeStream(stream), headers as CallHeaders);
    if (!events) return;
    stream.once('close', () => events.close());
    stream.on('data', (chunk: Buffer) => events.data(chunk));
    stream.once('end', () => events.end());
  }
}

/** A node:http2 stream as a call sees it. */
function nodeStream(stream: http2.ServerHttp2Stream): CallStream {
  return {
    get open() {
      return !stream.closed && !stream.destroyed;
    },
    httpStatus(status, headers = {}) {
      stream.respond({ ':status': status, ...headers }, { endStream: true });
    },
    refuse(status) {
      if (stream.closed || stream.destroyed) return;
      if (stream.headersSent) {
        // Only when an answer has started; this server answers whole, so it does not happen today.
        stream.close(NGHTTP2_CANCEL);
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...status }, { endStream: true });
      if (!stream.readableEnded) stream.close(NGHTTP2_NO_ERROR);
    },
    answer(framed, sent) {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity' },
        { waitForTrailers: true },
      );
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      if (!sent) {
        stream.end(framed);
        return;
      }
      // The write's callback comes after the socket took the bytes; not after a failed write.
      stream.write(framed, (err) => {
        if (!err) sent();
      });
      stream.end();
    },
  };
}
