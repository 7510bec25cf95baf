// A unary gRPC call, whatever HTTP/2 carries it (issue 31): src/grpc-http2.ts
// serves calls on node:http2, src/grpc-frames.ts on HTTP/2 framed by the
// function itself. Both hand each call's stream here, as a CallStream, and
// the call does the rest:
//
//   - a call is a POST with content-type application/grpc*, one
//     length-prefixed message each way, the status in trailers (or, for a call
//     refused before any answer, in a single "trailers-only" HEADERS frame);
//   - grpc-timeout is a deadline: past it the call ends DEADLINE_EXCEEDED and
//     the late answer is dropped;
//   - a message over the limit is refused RESOURCE_EXHAUSTED as soon as its
//     length prefix is read, before its bytes are buffered;
//   - compressed messages are refused UNIMPLEMENTED, naming the one encoding
//     accepted (identity): Crossplane never compresses, and a server that
//     inflates nothing has no zip bomb to fear;
//   - an unknown method is UNIMPLEMENTED, a method other than POST is HTTP
//     405 and another content type HTTP 415, as gRPC's HTTP/2 protocol says.
//
// It knows nothing of RunFunction: the methods are bytes in, bytes out.
import { BytePool } from './byte-pool.js';

/** The gRPC status codes this server answers with. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A unary method: the request message in, the answer message out. */
export type UnaryHandler = (request: Buffer, bytes: CallBytes) => Promise<Buffer>;

/**
 * The memory of a call, which the server reuses for later calls (src/byte-pool.ts). The request's bytes
 * are reused once the handler is done, unless it keeps them; an answer written into `answer(n)` is framed
 * and sent without a copy, and its memory reused once sent. Both are for the handler while it runs: once
 * its promise settles they throw.
 */
export interface CallBytes {
  /**
   * n bytes for the answer message, holding whatever an earlier call left there: the handler fills them all
   * and returns them (any other Buffer it returns is copied as usual).
   */
  answer(length: number): Buffer;
  /** What the handler decoded still points into the request's bytes after its answer: they are not reused. */
  keepRequest(): void;
}

/** Thrown by a handler to end its call with this status and message. */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface GrpcServerOptions {
  /** By path: "/package.Service/Method". */
  methods: ReadonlyMap<string, UnaryHandler>;
  /** A request message longer than this is refused RESOURCE_EXHAUSTED. */
  maxReceiveBytes: number;
  /** Every connection is pinged this often (default 5 minutes). */
  keepaliveMs?: number;
  /** ...and dropped if the ping is not answered within this (default 20 s). */
  keepaliveTimeoutMs?: number;
  /** Called for a handler that threw something other than a GrpcError (a bug: the call ends INTERNAL). */
  onHandlerError?: (err: unknown, path: string) => void;
}

/** gRPC's length prefix: a flag byte and four bytes of length. */
export const PREFIX = 5;
/**
 * Requests and answers up to this size take reused memory. Crossplane v2.2's
 * requests measured under bench:scale were 1.5-133 KB (a Database on AWS
 * carries its RDS Instance's schema, 110 KB): a larger request allocated anew
 * on every call had V8 run a full collection every 50 ms.
 */
export const REUSED_MAX = 256 * 1024;
/**
 * HTTP/2 flow control, as the server grants it: a whole request of that size
 * fits in one stream's window, and several in the connection's. At HTTP/2's
 * 64 KiB default the client waits for a WINDOW_UPDATE in the middle of a large
 * request, and all of a connection's calls share 64 KiB: a 118 KB request cost
 * 1.3 ms of server CPU a call at 16 in flight, 0.55 ms with these.
 */
export const STREAM_WINDOW = 256 * 1024;
export const CONNECTION_WINDOW = 1024 * 1024;
/** The largest header list a call may send (RFC 7541's size), as both transports announce it. */
export const MAX_HEADER_LIST = 64 * 1024;
/** The longest grpc-timeout value gRPC allows is 8 digits. */
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
/** setTimeout holds at most 2^31-1 ms; a longer deadline is as good as none. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A grpc-timeout header in milliseconds; undefined when absent, NaN when malformed. */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = TIMEOUT.exec(Array.isArray(value) ? (value[0] ?? '') : value);
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : Number.NaN;
}

/** grpc-message is percent-encoded: bytes outside printable ASCII, and '%' itself. */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** One length-prefixed, uncompressed message. */
export function frameMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  writePrefix(out, message.length);
  out.set(message, PREFIX);
  return out;
}

/** gRPC's prefix of an uncompressed message of `length` bytes, in the first 5 bytes of `out`. */
export function writePrefix(out: Buffer, length: number): void {
  out[0] = 0;
  out.writeUInt32BE(length, 1);
}

/**
 * A call's request, read as it arrives: the prefix, then the message's bytes
 * kept as the chunks that carried them (never more than arrived, whatever the
 * prefix claims), joined once whole: into a reused block when the message is
 * small enough for one (then no chunk outlives the read, and with it the whole
 * socket read Node sliced it from), else into a Buffer of their own (a single
 * chunk is used as it is). Answers what to refuse, if anything.
 */
class RequestReader {
  private readonly head = Buffer.allocUnsafe(PREFIX);
  /** The reused block the message is copied into, when it is small enough for one. */
  block: ArrayBuffer | undefined;
  private headLen = 0;
  /** The length the prefix announced, while the message's bytes come in. */
  private expected: number | undefined;
  private parts: Buffer[] = [];
  private received = 0;
  /** Whole messages read. */
  count = 0;
  message: Buffer | undefined;

  constructor(
    private readonly maxBytes: number,
    private readonly encoding: string | undefined,
    private readonly pool: BytePool,
  ) {}

  /** Takes a chunk; returns a refusal, or undefined to go on. */
  push(chunk: Buffer): GrpcError | undefined {
    let off = 0;
    while (off < chunk.length) {
      if (this.expected === undefined) {
        const take = Math.min(PREFIX - this.headLen, chunk.length - off);
        chunk.copy(this.head, this.headLen, off, off + take);
        this.headLen += take;
        off += take;
        if (this.headLen < PREFIX) return undefined;
        const refusal = this.begin(this.head[0]!, this.head.readUInt32BE(1));
        if (refusal) return refusal;
        if (this.expected === undefined) continue; // an empty message, complete already
      }
      const take = Math.min(this.expected - this.received, chunk.length - off);
      this.parts.push(chunk.subarray(off, off + take));
      this.received += take;
      off += take;
      if (this.received === this.expected) this.complete();
    }
    return undefined;
  }

  /** Whether the request ended between messages. */
  get whole(): boolean {
    return this.headLen === 0 && this.expected === undefined;
  }

  private begin(flag: number, len: number): GrpcError | undefined {
    if (this.count > 0) return new GrpcError(GrpcStatus.UNIMPLEMENTED, 'a unary method takes one request message');
    if (flag === 1) {
      return new GrpcError(
        GrpcStatus.UNIMPLEMENTED,
        `compressed messages (grpc-encoding ${this.encoding ?? 'unset'}) are not accepted: send them uncompressed`,
      );
    }
    if (flag !== 0) return new GrpcError(GrpcStatus.INTERNAL, `a message's flag byte is ${flag}, not 0 or 1`);
    if (len > this.maxBytes) {
      // gRPC's own wording (grpc-go's, grpc-js's), which clients and logs already know.
      return new GrpcError(
        GrpcStatus.RESOURCE_EXHAUSTED,
        `received message larger than max (${len} vs. ${this.maxBytes})`,
      );
    }
    this.expected = len;
    this.parts = [];
    this.received = 0;
    if (len === 0) this.complete();
    return undefined;
  }

  /** A reused block's view for a message of len bytes, when it is small enough for one. */
  private reuse(len: number): Buffer | undefined {
    if (len === 0 || len > REUSED_MAX) return undefined;
    this.block = this.pool.take(len);
    return Buffer.from(this.block, 0, len);
  }

  private complete(): void {
    const into = this.reuse(this.received);
    if (into) {
      let at = 0;
      for (const part of this.parts) at += part.copy(into, at);
      this.message = into;
    } else this.message = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.expected);
    this.parts = [];
    this.expected = undefined;
    this.headLen = 0;
    this.count++;
  }
}

/** What each transport keeps for its calls to reuse: blocks up to 4 MiB (64 calls in flight of Crossplane's sizes need 1.5-3 MiB). */
export function callPool(): BytePool {
  return new BytePool({ largest: REUSED_MAX, kept: 4 * 1024 * 1024 });
}

/** Keepalive, as gRPC does it: a PING this often on every connection, which is dropped unanswered after the timeout. */
export const KEEPALIVE = { everyMs: 5 * 60_000, timeoutMs: 20_000 } as const;

/**
 * A drain's wait: resolves once no connection is `left()`, or after `graceMs`,
 * when `cut()` ends the ones still there.
 */
export function drained(left: () => number, cut: () => void, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearInterval(poll);
      clearTimeout(force);
      resolve();
    };
    const poll = setInterval(() => left() === 0 && done(), 20);
    const force = setTimeout(() => {
      cut();
      done();
    }, graceMs);
    if (left() === 0) done();
  });
}

/** A call's request headers, lower-case names, as node:http2 gives them. */
export type CallHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** What a call needs of its stream, whichever transport carries it. */
export interface CallStream {
  /** Whether an answer can still go out: the stream is neither closed nor reset. */
  readonly open: boolean;
  /** Ends the call with an HTTP status and no body (405, 415: not gRPC at all). */
  httpStatus(status: number, headers?: Record<string, string>): void;
  /**
   * Ends the call with a gRPC status and no answer (trailers-only). What the
   * client still sends is not read: the stream is closed with NO_ERROR once the
   * status is out, as gRPC allows, so a refused large request costs no more bandwidth.
   */
  refuse(status: Record<string, string>): void;
  /**
   * Headers, the framed message, then trailers with status OK. `sent`, when
   * given, is called once the socket has taken every byte of `framed` (never
   * after a failed write): its memory may then be reused.
   */
  answer(framed: Buffer, sent?: () => void): void;
}

/** What the server lends each call: its methods and limits, and the memory calls reuse. */
export interface CallServer {
  readonly opts: GrpcServerOptions;
  readonly pool: BytePool;
}

/** What a call the client reset before its turn answers instead of running. */
const SKIPPED = Symbol('skipped');

/** The trailers-only status of a refusal. */
function statusOf(err: GrpcError): Record<string, string> {
  return {
    'grpc-status': String(err.code),
    'grpc-message': encodeGrpcMessage(err.message),
    ...(err.code === GrpcStatus.UNIMPLEMENTED ? { 'grpc-accept-encoding': 'identity' } : {}),
  };
}

/** The events of a call's stream, which its transport passes on. */
export interface CallEvents {
  data(chunk: Buffer): void;
  end(): void;
  /** The stream is gone (reset by the client, the connection lost, or the call done): nothing more is sent. */
  close(): void;
}

/**
 * Starts a call: judges its headers, and answers the events of its stream
 * until it ends. Undefined when the headers alone ended it (the transport then
 * has nothing to pass on).
 */
export function serveCall(server: CallServer, stream: CallStream, headers: CallHeaders): CallEvents | undefined {
  if (headers[':method'] !== 'POST') {
    stream.httpStatus(405, { allow: 'POST' });
    return undefined;
  }
  const type = headers['content-type'];
  if (typeof type !== 'string' || !/^application\/grpc($|[+;])/.test(type)) {
    stream.httpStatus(415);
    return undefined;
  }
  const path = String(headers[':path'] ?? '');
  const handler = server.opts.methods.get(path);
  if (!handler) {
    stream.refuse(statusOf(new GrpcError(GrpcStatus.UNIMPLEMENTED, `unknown method ${path}`)));
    return undefined;
  }
  const timeoutMs = parseGrpcTimeout(headers['grpc-timeout']);
  if (Number.isNaN(timeoutMs)) {
    const err = new GrpcError(GrpcStatus.INTERNAL, `malformed grpc-timeout ${String(headers['grpc-timeout'])}`);
    stream.refuse(statusOf(err));
    return undefined;
  }
  const encoding = headers['grpc-encoding'];
  const pool = server.pool;
  const reader = new RequestReader(
    server.opts.maxReceiveBytes,
    typeof encoding === 'string' ? encoding : undefined,
    pool,
  );
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  const end = (refusal: GrpcError) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    if (stream.open) stream.refuse(statusOf(refusal));
  };
  if (timeoutMs !== undefined && timeoutMs < MAX_TIMER_MS) {
    timer = setTimeout(() => end(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded')), timeoutMs);
  }
  const run = (message: Buffer) => {
    let keep = false;
    let settled = false;
    let answerBlock: ArrayBuffer | undefined;
    const live = (what: string) => {
      if (settled) throw new Error(`CallBytes.${what} after the handler was done`);
    };
    const bytes: CallBytes = {
      answer: (length) => {
        live('answer');
        // An earlier block (an answer encoded again) is left to the GC: the handler may still hold it.
        answerBlock = pool.take(PREFIX + length);
        return Buffer.from(answerBlock, PREFIX, length);
      },
      keepRequest: () => {
        live('keepRequest');
        keep = true;
      },
    };
    // The handler is done: its request's block goes back unless kept, and its answer's unless it is sent in place.
    const done = (sending?: ArrayBuffer) => {
      settled = true;
      if (reader.block && !keep) pool.give(reader.block);
      if (answerBlock && answerBlock !== sending) pool.give(answerBlock);
    };
    // A handler that failed: its GrpcError is the call's status; anything else is a bug, said to the server.
    const failed = (err: unknown) => {
      done();
      if (err instanceof GrpcError) return end(err);
      server.opts.onHandlerError?.(err, path);
      end(new GrpcError(GrpcStatus.INTERNAL, 'the server failed to answer'));
    };
    // Through a promise: a handler that throws before its first await ends its call, not the process.
    Promise.resolve(message)
      // A call the client reset before its turn came is not run: resetting costs a client nothing.
      .then((m): Promise<unknown> | typeof SKIPPED => (ended || !stream.open ? SKIPPED : handler(m, bytes)))
      .then((answer) => {
        if (answer === SKIPPED) return done();
        if (!(answer instanceof Uint8Array)) return failed(new TypeError('the handler answered no bytes'));
        const open = !ended && stream.open;
        const block = answerBlock;
        const inPlace = open && block !== undefined && answer.buffer === block && answer.byteOffset === PREFIX;
        done(inPlace ? block : undefined);
        if (!open) return;
        ended = true;
        clearTimeout(timer);
        if (!inPlace) {
          stream.answer(frameMessage(answer));
          return;
        }
        // Framed where it stands: the prefix goes in the room left before the message.
        const framed = Buffer.from(block, 0, PREFIX + answer.length);
        writePrefix(framed, answer.length);
        stream.answer(framed, () => pool.give(block));
      }, failed);
  };
  return {
    data(chunk) {
      if (ended) return;
      let refusal: GrpcError | undefined;
      try {
        refusal = reader.push(chunk);
      } catch {
        // Out of memory for the message's bytes: refused, not a crash.
        refusal = new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, 'no memory for the request');
      }
      if (refusal) end(refusal);
    },
    end() {
      if (ended) return;
      if (!reader.whole) return end(new GrpcError(GrpcStatus.INTERNAL, 'the request ended inside a message'));
      if (reader.count === 0 || !reader.message)
        return end(new GrpcError(GrpcStatus.INTERNAL, 'the request carried no message'));
      run(reader.message);
    },
    close() {
      // The client went away (or the call ended): whatever comes later is dropped.
      ended = true;
      clearTimeout(timer);
    },
  };
}
