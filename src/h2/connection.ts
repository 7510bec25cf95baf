// One HTTP/2 connection (RFC 9113), server side, framed by the function itself:
// what a server of unary gRPC calls needs and no more. Clients open streams;
// the server never pushes and never opens one. Per stream it gives the request
// headers, the request body as it arrives, and lets the server answer with one
// header block, data, and trailers. Flow control is kept both ways: the client
// is granted windows as its bytes are read, and answers wait for the client's
// windows. Protocol errors end the connection with GOAWAY and the error's code.
//
// Why not node:http2: per call it builds a Duplex stream, header objects and
// several callbacks between C++ and JavaScript, and that was as much server
// CPU as the function's own work on small calls (bench: "Transport floors").
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { encodeHeaders, HeaderListTooLarge, type HeaderField, HpackDecoder, HpackError } from './hpack.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER = 9;

const DATA = 0x0;
const HEADERS = 0x1;
const PRIORITY = 0x2;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const PUSH_PROMISE = 0x5;
const PING = 0x6;
const GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;

const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY_FLAG = 0x20;

/** HTTP/2's error codes that this side sends. */
export const H2Error = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

const SETTINGS_ENABLE_PUSH = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const SETTINGS_MAX_FRAME_SIZE = 0x5;
const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** HTTP/2's defaults before SETTINGS say otherwise. */
const DEFAULT_WINDOW = 65_535;
const DEFAULT_MAX_FRAME = 16_384;
const MAX_WINDOW = 2 ** 31 - 1;
/** The largest frame this side takes: HTTP/2's default, never raised. */
const MAX_FRAME_IN = DEFAULT_MAX_FRAME;
/** Header blocks (with their CONTINUATIONs, 9 bytes each counted too) past this, still compressed, end the connection. */
const MAX_HEADER_BLOCK = 256 * 1024;
/** Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused, and grpc-go waits. */
export const MAX_STREAMS = 1000;
/** What may wait to be written before reading stops (see backpressure()). */
const MAX_QUEUED_OUT = 1024 * 1024;
/**
 * Streams a client may reset before their answer: a bucket of this many,
 * refilled at RESETS_PER_SECOND. Past it the connection ends ENHANCE_YOUR_CALM:
 * each costs this side a call, the client nothing ("rapid reset").
 */
const RESET_BURST = 1000;
const RESETS_PER_SECOND = 100;

/** What one connection is set to. */
export interface ConnectionOptions {
  /**
   * The window each stream is granted (SETTINGS_INITIAL_WINDOW_SIZE), at least HTTP/2's 65,535: a
   * client may send that much before it reads these settings.
   */
  streamWindow: number;
  /** The window of the whole connection, granted by a WINDOW_UPDATE after the settings. */
  connectionWindow: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE: a larger request header list is answered HTTP 431. */
  maxHeaderList: number;
  /** Memory for the copy each answer is written as, reused once the socket took it (src/byte-pool.ts). */
  pool?: { take(n: number): ArrayBuffer; give(block: ArrayBuffer): void };
}

/** What the connection tells its server. */
export interface ConnectionHandlers {
  /** A new stream and its request headers (names lower case; a repeated one keeps its first value). */
  stream(stream: H2Stream, headers: Record<string, string>): void;
  /** The connection is gone (every stream was told first). */
  closed(): void;
}

/** What a stream tells whoever serves it, as it happens. */
export interface StreamListener {
  data(chunk: Buffer): void;
  end(): void;
  /** Reset by the client, cut with its connection, or done both ways: nothing more is sent or heard. */
  close(): void;
}

/** One data payload waiting for the client's windows, and what to call once the socket took it all. */
interface Outgoing {
  /** The answer's header block, until it is sent (with the first data). */
  headers: Buffer | undefined;
  data: Buffer;
  at: number;
  sent: (() => void) | undefined;
  /** The trailers' header block, sent once the data is all out. */
  trailers: Buffer;
  /** Some of `data` went to the socket as a view, not a copy: `sent` must wait for the socket's callback. */
  exposed: boolean;
}

export class H2Stream {
  listener: StreamListener | undefined;
  /** The client sent END_STREAM. */
  remoteEnded = false;
  /** This side sent END_STREAM or reset the stream. */
  localEnded = false;
  /** Gone from the connection: reset either way, or done both ways. */
  closed = false;
  /** What the client lets this side send on the stream. */
  sendWindow: number;
  /** What this side granted and the client has not used yet. */
  recvWindow: number;
  /** Bytes read since the last WINDOW_UPDATE for the stream. */
  recvUnacked = 0;
  pending: Outgoing | undefined;

  constructor(
    readonly id: number,
    private readonly conn: H2Connection,
    sendWindow: number,
    recvWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  /** Whether an answer can still go out. */
  get open(): boolean {
    return !this.closed && !this.localEnded;
  }

  /** A header block that ends the stream (an HTTP error, or gRPC's trailers-only answer). */
  respondAndEnd(fields: readonly HeaderField[]): undefined {
    if (!this.open) return;
    this.conn.sendHeaders(this, encodeHeaders(fields), true);
  }

  /** Headers, then `data` as the client's windows allow, then trailers; `sent` once the socket took all of `data`. */
  answer(headers: Buffer, data: Buffer, trailers: Buffer, sent?: () => void): undefined {
    if (!this.open) return;
    this.pending = { headers, data, at: 0, sent, trailers, exposed: false };
    this.conn.flush(this);
  }

  /** Ends the stream with RST_STREAM and this code; nothing more is read or sent. */
  reset(code: number): undefined {
    if (this.closed) return;
    this.conn.resetStream(this, code);
  }
}

/** An HTTP/2 server connection on a socket already connected (and, for TLS, already secured). */
export class H2Connection {
  private readonly streams = new Map<number, H2Stream>();
  private readonly decoder = new HpackDecoder();
  /** The pieces of a frame begun in earlier reads (at most one frame's worth), and their length. */
  private partial: Buffer[] = [];
  private partialLength = 0;
  /** Reading stopped until what waits to be written drains. */
  private paused = false;
  /** The client's resets of unanswered streams this side would still take, as of resetsAt (see RESET_BURST). */
  private resets = RESET_BURST;
  private resetsAt = performance.now();
  /** The first frame after the preface must be SETTINGS (RFC 9113, 3.4). */
  private settingsSeen = false;
  /** Going away and idle: the socket is ending. */
  private ending = false;
  private prefaceSeen = false;
  private lastStreamId = 0;
  /** After GOAWAY: streams above this are refused, and the connection ends when the rest are done. */
  private goingAway = false;
  private closedAll = false;
  /** A header block in pieces: its stream, flags, and the pieces so far. */
  private continuing: { id: number; flags: number; parts: Buffer[]; size: number } | undefined;
  /** What the client lets this side send on the connection, and on each new stream. */
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = DEFAULT_MAX_FRAME;
  /** What this side granted the connection and the client has not used, and what it read since the last grant. */
  private recvWindow: number;
  private recvUnacked = 0;
  /** Streams with an answer waiting for a window, in the order they began to wait. */
  private readonly blocked = new Set<H2Stream>();
  /** Keepalive pings sent and not answered, by their payload. */
  private readonly pings = new Map<bigint, (err?: Error) => void>();
  private pingCount = 0n;

  constructor(
    private readonly socket: Duplex,
    private readonly opts: ConnectionOptions,
    private readonly handlers: ConnectionHandlers,
  ) {
    // What the connection would have without the update below, until the client's first DATA uses it.
    this.recvWindow = DEFAULT_WINDOW;
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => this.destroy());
    socket.on('close', () => this.destroy());
    const settings = Buffer.allocUnsafe(18);
    settings.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 0);
    settings.writeUInt32BE(opts.streamWindow, 2);
    settings.writeUInt16BE(SETTINGS_MAX_HEADER_LIST_SIZE, 6);
    settings.writeUInt32BE(opts.maxHeaderList, 8);
    settings.writeUInt16BE(SETTINGS_MAX_CONCURRENT_STREAMS, 12);
    settings.writeUInt32BE(MAX_STREAMS, 14);
    const out = [frameHeader(settings.length, SETTINGS, 0, 0), settings];
    if (opts.connectionWindow > DEFAULT_WINDOW) {
      out.push(windowUpdate(0, opts.connectionWindow - DEFAULT_WINDOW));
      this.recvWindow = opts.connectionWindow;
    }
    this.write(Buffer.concat(out));
  }

  /** Streams not yet closed. */
  get streamCount(): number {
    return this.streams.size;
  }

  get destroyed(): boolean {
    return this.closedAll;
  }

  /**
   * Graceful close: GOAWAY with NO_ERROR naming the last stream taken; the
   * streams up to it finish, later ones are refused, and the connection ends
   * when none is left.
   */
  close(): undefined {
    if (this.closedAll || this.goingAway) return;
    this.goingAway = true;
    this.write(goaway(this.lastStreamId, H2Error.NO_ERROR));
    this.endIfIdle();
  }

  /** Cuts the connection now: every stream is told, every ping fails. */
  destroy(): undefined {
    this.socket.destroy();
    this.closeAll();
  }

  /** Every stream and ping is told the connection is gone, and then the server. */
  private closeAll(): undefined {
    if (this.closedAll) return;
    this.closedAll = true;
    for (const stream of this.streams.values()) this.forget(stream);
    for (const answer of this.pings.values()) answer(new Error('the connection closed'));
    this.pings.clear();
    this.handlers.closed();
  }

  /** Sends a PING; `answered` is called when its ACK comes, or with an error if the connection goes first. */
  ping(answered: (err?: Error) => void): undefined {
    if (this.closedAll) {
      answered(new Error('the connection is closed'));
      return;
    }
    const payload = Buffer.allocUnsafe(8);
    const id = ++this.pingCount;
    payload.writeBigUInt64BE(id);
    this.pings.set(id, answered);
    this.write(Buffer.concat([frameHeader(8, PING, 0, 0), payload]));
  }

  // --- reading

  private read(received: Buffer): undefined {
    if (this.closedAll) return;
    let chunk = received;
    let off = 0;
    if (!this.prefaceSeen) {
      const buf = this.partial.length ? Buffer.concat([...this.partial, chunk]) : chunk;
      this.partial = [];
      this.partialLength = 0;
      const have = Math.min(buf.length, PREFACE.length);
      if (!buf.subarray(0, have).equals(PREFACE.subarray(0, have))) {
        this.destroy();
        return;
      }
      if (have < PREFACE.length) {
        this.keep(buf);
        return;
      }
      this.prefaceSeen = true;
      chunk = buf;
      off = PREFACE.length;
    }
    this.socket.cork();
    try {
      if (this.partialLength > 0) {
        // The frame begun in an earlier read is completed from this one's start, and handled on its own.
        off = this.complete(chunk);
        if (off < 0) return;
      }
      off = this.frames(chunk, off);
      // A partial frame: kept as a copy, not a view that would hold the whole read.
      if (!this.closedAll && off < chunk.length) this.keep(Buffer.from(chunk.subarray(off)));
      this.grantConnection();
      this.backpressure();
    } catch {
      // A bug of ours, not the peer's: the connection ends, the process serves on.
      this.fail(H2Error.INTERNAL_ERROR);
    } finally {
      this.socket.uncork();
    }
  }

  private keep(bytes: Buffer): void {
    this.partial.push(bytes);
    this.partialLength += bytes.length;
  }

  /**
   * Adds to the partial frame what it lacks from the start of chunk, and
   * handles it once whole (the pieces are joined once, however many reads
   * brought them). Returns where the rest of chunk starts, or -1 when all of
   * chunk went into the frame and it is still not whole.
   */
  private complete(chunk: Buffer): number {
    let used = 0;
    if (this.partialLength < FRAME_HEADER) {
      // Not even its header yet: a few bytes, joined as they come.
      used = Math.min(FRAME_HEADER - this.partialLength, chunk.length);
      const head = Buffer.concat([...this.partial, chunk.subarray(0, used)]);
      this.partial = [head];
      this.partialLength = head.length;
      if (head.length < FRAME_HEADER) return -1;
    }
    // The first piece holds the whole header: it is either a leftover of 9 bytes or more, or the joined head.
    const length = this.partial[0]!.readUIntBE(0, 3);
    if (length > MAX_FRAME_IN) {
      this.fail(H2Error.FRAME_SIZE_ERROR);
      return -1;
    }
    const total = FRAME_HEADER + length;
    const take = Math.min(total - this.partialLength, chunk.length - used);
    const piece = chunk.subarray(used, used + take);
    used += take;
    if (this.partialLength + take < total) {
      // Kept as a copy: the view would hold the whole read.
      this.keep(Buffer.from(piece));
      return -1;
    }
    const frame = Buffer.concat([...this.partial, piece], total);
    this.partial = [];
    this.partialLength = 0;
    this.frames(frame, 0);
    return used;
  }

  /**
   * A peer that sends faster than it reads (a flood of PINGs, each owed an
   * ACK) would have this side queue without end: past 1 MiB waiting to be
   * written, nothing more is read until the socket drains.
   */
  private backpressure(): void {
    if (this.paused || this.socket.writableLength <= MAX_QUEUED_OUT) return;
    this.paused = true;
    this.socket.pause();
    this.socket.once('drain', () => {
      this.paused = false;
      if (!this.closedAll) this.socket.resume();
    });
  }

  /** Handles the whole frames in buf from off; returns where the first partial one starts. */
  private frames(buf: Buffer, start: number): number {
    let off = start;
    while (buf.length - off >= FRAME_HEADER && !this.closedAll) {
      const length = buf.readUIntBE(off, 3);
      if (length > MAX_FRAME_IN) {
        this.fail(H2Error.FRAME_SIZE_ERROR);
        return buf.length;
      }
      if (buf.length - off < FRAME_HEADER + length) break;
      const type = buf[off + 3]!;
      const flags = buf[off + 4]!;
      const id = buf.readUInt32BE(off + 5) & 0x7fffffff;
      const payload = buf.subarray(off + FRAME_HEADER, off + FRAME_HEADER + length);
      off += FRAME_HEADER + length;
      this.frame(type, flags, id, payload);
    }
    return off;
  }

  private frame(type: number, flags: number, id: number, payload: Buffer): undefined {
    if (!this.settingsSeen) {
      if (type !== SETTINGS || flags & ACK) return this.fail(H2Error.PROTOCOL_ERROR);
      this.settingsSeen = true;
    }
    if (this.continuing && (type !== CONTINUATION || id !== this.continuing.id)) {
      this.fail(H2Error.PROTOCOL_ERROR);
      return;
    }
    switch (type) {
      case DATA:
        return this.onData(flags, id, payload);
      case HEADERS:
        return this.onHeaders(flags, id, payload);
      case CONTINUATION:
        return this.onContinuation(flags, id, payload);
      case PRIORITY:
        if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR);
        if (payload.length !== 5) return this.fail(H2Error.FRAME_SIZE_ERROR);
        return;
      case RST_STREAM:
        return this.onReset(id, payload);
      case SETTINGS:
        return this.onSettings(flags, id, payload);
      case PUSH_PROMISE:
        // Clients never push.
        return this.fail(H2Error.PROTOCOL_ERROR);
      case PING:
        return this.onPing(flags, id, payload);
      case GOAWAY:
        if (id !== 0) return this.fail(H2Error.PROTOCOL_ERROR);
        // The client leaves: the calls it has open finish, then the connection ends.
        this.goingAway = true;
        return this.endIfIdle();
      case WINDOW_UPDATE:
        return this.onWindowUpdate(id, payload);
      default:
        // Unknown frame types are ignored (RFC 9113, 5.5).
        return;
    }
  }

  private onData(flags: number, id: number, payload: Buffer): undefined {
    if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR);
    // The whole frame counts against the windows, padding too.
    this.recvWindow -= payload.length;
    this.recvUnacked += payload.length;
    if (this.recvWindow < 0) return this.fail(H2Error.FLOW_CONTROL_ERROR);
    const stream = this.streams.get(id);
    if (!stream) {
      // An idle stream is a protocol error; a closed one may still see frames sent before it closed.
      if (id > this.lastStreamId) this.fail(H2Error.PROTOCOL_ERROR);
      return;
    }
    if (stream.remoteEnded) return this.resetStream(stream, H2Error.STREAM_CLOSED);
    stream.recvWindow -= payload.length;
    if (stream.recvWindow < 0) return this.resetStream(stream, H2Error.FLOW_CONTROL_ERROR);
    const data = unpad(flags, payload);
    if (data === undefined) return this.fail(H2Error.PROTOCOL_ERROR);
    stream.recvUnacked += payload.length;
    if (data.length > 0) stream.listener?.data(data);
    if (flags & END_STREAM) this.remoteEnd(stream);
    else if (!stream.closed && stream.recvUnacked >= this.opts.streamWindow / 2) {
      this.write(windowUpdate(stream.id, stream.recvUnacked));
      stream.recvWindow += stream.recvUnacked;
      stream.recvUnacked = 0;
    }
  }

  private onHeaders(flags: number, id: number, payload: Buffer): undefined {
    if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR);
    let block = unpad(flags, payload);
    if (block === undefined) return this.fail(H2Error.PROTOCOL_ERROR);
    if (flags & PRIORITY_FLAG) {
      if (block.length < 5) return this.fail(H2Error.PROTOCOL_ERROR);
      block = block.subarray(5);
    }
    if (flags & END_HEADERS) return this.headerBlock(id, flags, block);
    this.continuing = { id, flags, parts: [Buffer.from(block)], size: block.length };
  }

  private onContinuation(flags: number, id: number, payload: Buffer): undefined {
    const c = this.continuing;
    if (!c || c.id !== id) return this.fail(H2Error.PROTOCOL_ERROR);
    // Frames count with their headers: a flood of empty CONTINUATIONs reaches the limit too.
    c.size += FRAME_HEADER + payload.length;
    if (c.size > MAX_HEADER_BLOCK) return this.fail(H2Error.ENHANCE_YOUR_CALM);
    if (payload.length > 0) c.parts.push(Buffer.from(payload));
    if (flags & END_HEADERS) {
      this.continuing = undefined;
      this.headerBlock(id, c.flags, Buffer.concat(c.parts));
    }
  }

  /** A whole header block: a new stream's request headers, or trailers on an open one. */
  private headerBlock(id: number, flags: number, block: Buffer): undefined {
    let fields: HeaderField[] | undefined;
    let tooLarge = false;
    try {
      fields = this.decoder.decode(block, this.opts.maxHeaderList);
    } catch (err) {
      if (!(err instanceof HeaderListTooLarge)) {
        // The table is now out of step with the client's: nothing later can be decoded.
        return this.fail(err instanceof HpackError ? H2Error.COMPRESSION_ERROR : H2Error.INTERNAL_ERROR);
      }
      tooLarge = true;
    }
    const existing = this.streams.get(id);
    if (existing) {
      // Trailers: they end the request. Nothing in them matters to a unary call.
      if (existing.remoteEnded || !(flags & END_STREAM)) return this.resetStream(existing, H2Error.PROTOCOL_ERROR);
      return this.remoteEnd(existing);
    }
    if (id % 2 === 0 || id <= this.lastStreamId) {
      // Headers on a stream that is closed, or one a client cannot open.
      if (id % 2 === 0 || id > this.lastStreamId) return this.fail(H2Error.PROTOCOL_ERROR);
      this.write(rstStream(id, H2Error.STREAM_CLOSED));
      return;
    }
    this.lastStreamId = id;
    if (this.goingAway || this.streams.size >= MAX_STREAMS) {
      // Refused before any work: a client may try it again (grpc-go does, on its own).
      this.write(rstStream(id, H2Error.REFUSED_STREAM));
      return;
    }
    const stream = new H2Stream(id, this, this.peerInitialWindow, this.opts.streamWindow);
    this.streams.set(id, stream);
    if (flags & END_STREAM) stream.remoteEnded = true;
    if (tooLarge || !fields) {
      stream.respondAndEnd([[':status', '431']]);
      return;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of fields) if (headers[name] === undefined) headers[name] = value;
    this.handlers.stream(stream, headers);
    if (stream.remoteEnded && !stream.closed) stream.listener?.end();
  }

  private onReset(id: number, payload: Buffer): undefined {
    if (id === 0) return this.fail(H2Error.PROTOCOL_ERROR);
    if (payload.length !== 4) return this.fail(H2Error.FRAME_SIZE_ERROR);
    const stream = this.streams.get(id);
    if (!stream) {
      if (id > this.lastStreamId) this.fail(H2Error.PROTOCOL_ERROR);
      return;
    }
    // A call whose answer is on its way cost the client its wait; one reset before it, nothing.
    if (!stream.pending && !this.takeReset()) return this.fail(H2Error.ENHANCE_YOUR_CALM);
    this.forget(stream);
  }

  /** One more reset of a stream before its answer, if the bucket allows it. */
  private takeReset(): boolean {
    const now = performance.now();
    this.resets = Math.min(RESET_BURST, this.resets + ((now - this.resetsAt) / 1000) * RESETS_PER_SECOND);
    this.resetsAt = now;
    if (this.resets < 1) return false;
    this.resets -= 1;
    return true;
  }

  private onSettings(flags: number, id: number, payload: Buffer): undefined {
    if (id !== 0) return this.fail(H2Error.PROTOCOL_ERROR);
    if (flags & ACK) {
      if (payload.length !== 0) this.fail(H2Error.FRAME_SIZE_ERROR);
      return;
    }
    if (payload.length % 6 !== 0) return this.fail(H2Error.FRAME_SIZE_ERROR);
    for (let at = 0; at < payload.length; at += 6) {
      const key = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR);
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const stream of this.streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR);
        }
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME || value > 16_777_215) return this.fail(H2Error.PROTOCOL_ERROR);
        this.peerMaxFrame = value;
      } else if (key === SETTINGS_ENABLE_PUSH) {
        if (value > 1) return this.fail(H2Error.PROTOCOL_ERROR);
      }
      // HEADER_TABLE_SIZE bounds the client's decoder: this side never indexes, so any size is met.
      // The others (MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_SIZE) bound what a server does not do or send.
    }
    this.write(frameHeader(0, SETTINGS, ACK, 0));
    this.flushBlocked();
  }

  private onPing(flags: number, id: number, payload: Buffer): undefined {
    if (id !== 0) return this.fail(H2Error.PROTOCOL_ERROR);
    if (payload.length !== 8) return this.fail(H2Error.FRAME_SIZE_ERROR);
    if (flags & ACK) {
      const key = payload.readBigUInt64BE(0);
      const answered = this.pings.get(key);
      this.pings.delete(key);
      answered?.();
      return;
    }
    this.write(Buffer.concat([frameHeader(8, PING, ACK, 0), payload]));
  }

  private onWindowUpdate(id: number, payload: Buffer): undefined {
    if (payload.length !== 4) return this.fail(H2Error.FRAME_SIZE_ERROR);
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) return this.fail(H2Error.PROTOCOL_ERROR);
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW) return this.fail(H2Error.FLOW_CONTROL_ERROR);
      return this.flushBlocked();
    }
    const stream = this.streams.get(id);
    if (!stream) {
      if (id > this.lastStreamId) this.fail(H2Error.PROTOCOL_ERROR);
      return;
    }
    if (increment === 0) return this.resetStream(stream, H2Error.PROTOCOL_ERROR);
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) return this.resetStream(stream, H2Error.FLOW_CONTROL_ERROR);
    if (stream.pending) this.flush(stream);
  }

  /** The client ended its side of the stream. */
  private remoteEnd(stream: H2Stream): undefined {
    stream.remoteEnded = true;
    if (stream.localEnded) this.forget(stream);
    else stream.listener?.end();
  }

  /** Grants the connection back what was read, once that is half its window. */
  private grantConnection(): undefined {
    if (this.recvUnacked < this.opts.connectionWindow / 2 || this.closedAll) return;
    this.write(windowUpdate(0, this.recvUnacked));
    this.recvWindow += this.recvUnacked;
    this.recvUnacked = 0;
  }

  // --- writing

  /** @internal A stream's header block, split into CONTINUATIONs if the client's frames are smaller. */
  sendHeaders(stream: H2Stream, block: Buffer, endStream: boolean): undefined {
    const flags = endStream ? END_STREAM : 0;
    const out: Buffer[] = [];
    pushHeaderFrames(out, stream.id, block, flags, this.peerMaxFrame);
    this.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    if (endStream) this.localEnd(stream);
  }

  /** @internal Sends what the windows allow of the stream's answer; then its trailers once all of it is out. */
  flush(stream: H2Stream): undefined {
    const p = stream.pending;
    if (!p || stream.closed || this.closedAll) return;
    const out: Buffer[] = [];
    if (p.headers) {
      pushHeaderFrames(out, stream.id, p.headers, 0, this.peerMaxFrame);
      p.headers = undefined;
    }
    while (p.at < p.data.length) {
      const n = Math.min(p.data.length - p.at, this.peerMaxFrame, stream.sendWindow, this.sendWindow);
      if (n <= 0) break;
      out.push(frameHeader(n, DATA, 0, stream.id), p.data.subarray(p.at, p.at + n));
      p.at += n;
      stream.sendWindow -= n;
      this.sendWindow -= n;
    }
    const done = p.at === p.data.length;
    if (done) {
      stream.pending = undefined;
      this.blocked.delete(stream);
      pushHeaderFrames(out, stream.id, p.trailers, END_STREAM, this.peerMaxFrame);
    } else this.blocked.add(stream);
    if (out.length === 0) return;
    let size = 0;
    for (const part of out) size += part.length;
    const sent = done ? p.sent : undefined;
    if (size <= 64 * 1024) {
      // Small enough to copy: one write. The answer's memory is free at once, unless views of it went
      // out in an earlier flush: those wait in the socket until the callback of this write, which follows theirs.
      const pool = this.opts.pool;
      const block = pool?.take(size);
      const copy = block ? Buffer.from(block, 0, size) : Buffer.allocUnsafe(size);
      let at = 0;
      for (const part of out) at += part.copy(copy, at);
      const waits = sent && p.exposed ? sent : undefined;
      if (sent && !waits) sent();
      if (this.socket.writable) {
        this.socket.write(
          copy,
          block || waits
            ? (err) => {
                if (err) return;
                if (block) pool!.give(block);
                waits?.();
              }
            : undefined,
        );
      }
    } else if (this.socket.writable) {
      p.exposed = true;
      for (let i = 0; i < out.length - 1; i++) this.socket.write(out[i]!);
      this.socket.write(out.at(-1)!, sent ? (err) => !err && sent() : undefined);
    }
    if (done) this.localEnd(stream);
  }

  private flushBlocked(): undefined {
    for (const stream of this.blocked) {
      if (this.sendWindow <= 0) return;
      this.flush(stream);
    }
  }

  /** @internal */
  resetStream(stream: H2Stream, code: number): undefined {
    if (stream.closed) return;
    this.write(rstStream(stream.id, code));
    this.forget(stream);
  }

  /** This side sent END_STREAM: the stream is done if the client's side is; if not, it is closed with NO_ERROR. */
  private localEnd(stream: H2Stream): undefined {
    stream.localEnded = true;
    if (!stream.remoteEnded) this.write(rstStream(stream.id, H2Error.NO_ERROR));
    this.forget(stream);
  }

  /** The stream is gone: its listener hears it once. */
  private forget(stream: H2Stream): undefined {
    if (stream.closed) return;
    stream.closed = true;
    stream.pending = undefined;
    this.blocked.delete(stream);
    this.streams.delete(stream.id);
    stream.listener?.close();
    this.endIfIdle();
  }

  private endIfIdle(): undefined {
    if (!this.goingAway || this.streams.size > 0 || this.closedAll || this.ending) return;
    // The connection ends once what waits to be written is out and the socket closes ('close' calls
    // destroy()): the server hears of it only then, so a drain does not end the process before the last
    // answer's bytes left. A peer that never closes its side is cut 30 s after our end was sent: cut
    // sooner, what the peer still sends would reset the connection and could cost it bytes not yet read.
    this.ending = true;
    this.socket.once('finish', () => setTimeout(() => this.socket.destroy(), 30_000).unref());
    this.socket.end();
  }

  /** A connection error: GOAWAY with its code, then the connection is cut. */
  private fail(code: number): undefined {
    if (this.closedAll) return;
    this.write(goaway(this.lastStreamId, code));
    // GOAWAY goes out before the socket closes; a peer that does not close its side is cut a second later.
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.closeAll();
  }

  private write(bytes: Buffer): undefined {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(bytes);
  }
}

/** A frame's 9-byte header. */
function frameHeader(length: number, type: number, flags: number, id: number): Buffer {
  const h = Buffer.allocUnsafe(FRAME_HEADER);
  h.writeUIntBE(length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(id, 5);
  return h;
}

function windowUpdate(id: number, increment: number): Buffer {
  const f = frameHeader(4, WINDOW_UPDATE, 0, id);
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(increment);
  return Buffer.concat([f, b]);
}

function rstStream(id: number, code: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(code);
  return Buffer.concat([frameHeader(4, RST_STREAM, 0, id), b]);
}

function goaway(lastStreamId: number, code: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(lastStreamId, 0);
  b.writeUInt32BE(code, 4);
  return Buffer.concat([frameHeader(8, GOAWAY, 0, 0), b]);
}

/** A HEADERS frame, then CONTINUATIONs for what does not fit in one frame. */
function pushHeaderFrames(out: Buffer[], id: number, block: Buffer, flags: number, maxFrame: number): undefined {
  let at = 0;
  let type = HEADERS;
  do {
    const n = Math.min(block.length - at, maxFrame);
    const last = at + n === block.length;
    out.push(frameHeader(n, type, (type === HEADERS ? flags : 0) | (last ? END_HEADERS : 0), id));
    out.push(block.subarray(at, at + n));
    at += n;
    type = CONTINUATION;
  } while (at < block.length);
}

/** A payload without its padding, or undefined when the padding claims more than the frame holds. */
function unpad(flags: number, payload: Buffer): Buffer | undefined {
  if (!(flags & PADDED)) return payload;
  if (payload.length < 1) return undefined;
  const pad = payload[0]!;
  if (pad >= payload.length) return undefined;
  return payload.subarray(1, payload.length - pad);
}
