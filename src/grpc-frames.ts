// gRPC unary calls on HTTP/2 framed by the function itself (src/h2/): the
// same calls as src/grpc-http2.ts (src/grpc-call.ts says what a call is),
// without node:http2's per-call streams and header objects. An answer goes
// out as one write: its headers, its data frames and its trailers.
// Every connection is pinged now and then and dropped when the peer no longer
// answers; draining sends GOAWAY and lets the calls on their way finish.
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import {
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
import { H2Connection, type H2Stream } from './h2/connection.js';
import { encodeHeaders, type HeaderField } from './h2/hpack.js';

/** What every answer sends before and after its message: written once, sent as they are. */
const ANSWER_HEADERS = encodeHeaders([
  [':status', '200'],
  ['content-type', 'application/grpc'],
  ['grpc-accept-encoding', 'identity'],
]);
const OK_TRAILERS = encodeHeaders([['grpc-status', '0']]);

export class GrpcFramesServer implements CallServer {
  private readonly connections = new Set<H2Connection>();
  private readonly keepaliveMs: number;
  private readonly keepaliveTimeoutMs: number;
  private listener: net.Server | undefined;
  private draining = false;
  readonly pool = callPool();

  constructor(readonly opts: GrpcServerOptions) {
    this.keepaliveMs = opts.keepaliveMs ?? KEEPALIVE.everyMs;
    this.keepaliveTimeoutMs = opts.keepaliveTimeoutMs ?? KEEPALIVE.timeoutMs;
  }

  /** Serves plaintext connections on host:port; resolves with the port bound. */
  listen(port: number, host: string | undefined): Promise<number> {
    const listener = net.createServer((socket) => this.serveConnection(socket));
    this.listener = listener;
    return new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        const addr = listener.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  /** Serves a connection: its own, or one accepted elsewhere (a TLS socket that negotiated h2). */
  serveConnection(socket: Duplex): void {
    if (this.draining) {
      socket.destroy();
      return;
    }
    if (socket instanceof net.Socket) socket.setNoDelay(true);
    let keepalive: NodeJS.Timeout | undefined;
    const conn: H2Connection = new H2Connection(
      socket,
      {
        streamWindow: STREAM_WINDOW,
        connectionWindow: CONNECTION_WINDOW,
        maxHeaderList: MAX_HEADER_LIST,
        pool: this.pool,
      },
      {
        stream: (stream, headers) => {
          const events = serveCall(this, framesStream(stream), headers);
          if (events) stream.listener = events;
        },
        closed: () => {
          clearInterval(keepalive);
          this.connections.delete(conn);
        },
      },
    );
    if (conn.destroyed) return;
    this.connections.add(conn);
    // Keepalive, as gRPC does it: a PING every keepaliveMs; a peer that no longer answers is dropped.
    keepalive = setInterval(() => {
      const cut = setTimeout(() => conn.destroy(), this.keepaliveTimeoutMs);
      cut.unref();
      conn.ping((err) => {
        clearTimeout(cut);
        if (err) conn.destroy();
      });
    }, this.keepaliveMs);
    keepalive.unref();
  }

  /**
   * Stops accepting, sends GOAWAY on every connection and lets the calls on
   * their way finish; after `graceMs` the rest are cut. Resolves when no
   * connection is left.
   */
  drain(graceMs: number): Promise<void> {
    this.draining = true;
    this.listener?.close();
    for (const c of this.connections) c.close();
    return drained(
      () => this.connections.size,
      () => {
        for (const c of this.connections) c.destroy();
        this.connections.clear();
      },
      graceMs,
    );
  }
}

/** An HTTP/2 stream of src/h2 as a call sees it. */
function framesStream(stream: H2Stream): CallStream {
  return {
    get open() {
      return stream.open;
    },
    httpStatus(status, headers = {}) {
      stream.respondAndEnd([[':status', String(status)], ...Object.entries(headers)]);
    },
    refuse(status) {
      const fields: HeaderField[] = [
        [':status', '200'],
        ['content-type', 'application/grpc'],
        ...Object.entries(status),
      ];
      // The stream ends with these; what the client still sends is not read (closed with NO_ERROR).
      stream.respondAndEnd(fields);
    },
    answer(framed, sent) {
      stream.answer(ANSWER_HEADERS, framed, OK_TRAILERS, sent);
    },
  };
}
