// HTTP/2 framed by the function (src/h2/): HPACK decoding judged by RFC 7541's
// own examples and by what node:http2's encoder (nghttp2: Huffman strings, the
// dynamic table, evictions) really sends; the connection judged by a real
// HTTP/2 client and by bytes no client would send.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { GrpcFramesServer } from '../../src/grpc-frames.js';
import { H2Connection, H2Error, MAX_STREAMS } from '../../src/h2/connection.js';
import { encodeHeaders, HeaderListTooLarge, HpackDecoder, HpackError } from '../../src/h2/hpack.js';
import { HuffmanError, huffmanDecode } from '../../src/h2/huffman.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const BIG = 1 << 20;

describe('HPACK decoding', () => {
  test("RFC 7541's requests with Huffman coding (C.4), in order through one table", () => {
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'), BIG), [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ]);
    assert.deepEqual(d.decode(hex('8286 84be 5886 a8eb 1064 9cbf'), BIG), [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
      ['cache-control', 'no-cache'],
    ]);
    assert.deepEqual(d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'), BIG), [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]);
  });

  test('what a decoder must refuse', () => {
    const refuses = (block: string, why: RegExp) =>
      assert.throws(
        () => new HpackDecoder().decode(hex(block), BIG),
        (e: Error) => e instanceof HpackError && why.test(e.message),
      );
    refuses('80', /index 0/);
    refuses('be', /past the table/);
    refuses('3fe21f', /table size of 4097/); // a size update to 4097, over the 4096 announced
    refuses('82 20', /after a header field/);
    refuses('ff', /inside an integer/);
    refuses('0f', /inside an integer/);
    refuses('00 85 61', /past its header block/);
    refuses('ffffffffff7f', /too large/);
    // A Huffman string of one byte 0xff: 8 bits of padding.
    refuses('00 81 ff 00', /padding/);
  });

  test('Huffman: a long string decodes whole (200,000 octets)', () => {
    // "0" is 00000: 200,000 of them are 125,000 zero bytes, no padding.
    assert.equal(huffmanDecode(Buffer.alloc(125_000), 0, 125_000), '0'.repeat(200_000));
  });

  test('Huffman: EOS inside a string and padding that is not all ones are refused', () => {
    assert.throws(() => huffmanDecode(hex('ffffffff'), 0, 4), HuffmanError);
    // "0" is 00000 (5 bits); then 3 bits of padding that are zeros.
    assert.throws(() => huffmanDecode(hex('00'), 0, 1), /padding/);
    assert.equal(huffmanDecode(hex('07'), 0, 1), '0');
  });

  test('a size update evicts what no longer fits', () => {
    const d = new HpackDecoder();
    // custom-key: custom-value, added (size 54).
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'), BIG);
    assert.deepEqual(d.decode(hex('be'), BIG), [['custom-key', 'custom-header']]);
    // A table of size 0, then the same index: gone.
    assert.throws(() => d.decode(hex('20 be'), BIG), /past the table/);
  });

  test('a header list over the limit is refused after the whole block is decoded, so the table stays right', () => {
    const d = new HpackDecoder();
    const block = hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572');
    assert.throws(() => d.decode(block, 40), HeaderListTooLarge);
    assert.deepEqual(d.decode(hex('be'), BIG), [['custom-key', 'custom-header']], 'the entry was still added');
  });

  test('the encoder writes literals the decoder reads back', () => {
    const fields = [
      [':status', '200'],
      [':status', '415'],
      ['content-type', 'application/grpc'],
      ['grpc-message', 'x'.repeat(300)],
    ] as const;
    assert.deepEqual(new HpackDecoder().decode(encodeHeaders(fields), BIG), fields);
  });
});

/** A server whose every stream answers with the request headers it decoded, as JSON. */
function echoServer(): Promise<{ port: number; close: () => void }> {
  const server = net.createServer((socket) => {
    new H2Connection(
      socket,
      { streamWindow: 65_535, connectionWindow: 1 << 20, maxHeaderList: 64 * 1024 },
      {
        stream: (stream, headers) => {
          stream.listener = {
            data: () => {},
            end: () =>
              stream.answer(
                encodeHeaders([[':status', '200']]),
                Buffer.from(JSON.stringify(headers)),
                encodeHeaders([['done', 'yes']]),
              ),
            close: () => {},
          };
        },
        closed: () => {},
      },
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as net.AddressInfo).port, close: () => server.close() }),
    ),
  );
}

function request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': '/echo', ...headers });
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () => resolve(JSON.parse(Buffer.concat(body).toString()) as Record<string, string>));
    req.on('error', reject);
    req.end();
  });
}

describe('an HTTP/2 connection framed by the function', () => {
  test("node:http2's encoder (Huffman, the dynamic table, evictions): every header arrives as sent", async () => {
    const server = await echoServer();
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const name = fc.stringMatching(/^x-[a-z0-9-]{1,20}$/);
      const value = fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        maxLength: 200,
      });
      await fc.assert(
        fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 12 }), async (headers) => {
          // Values keep no leading or trailing blanks: HTTP says they are not part of the value.
          const sent = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.trim()]));
          const got = await request(session, sent);
          for (const [k, v] of Object.entries(sent)) assert.equal(got[k], v, k);
          assert.equal(got[':path'], '/echo');
        }),
        { numRuns: 300 },
      );
    } finally {
      session.close();
      server.close();
    }
  });

  test('bytes no client would send end the connection, never the process', async () => {
    const server = await echoServer();
    const preface = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), hex('000000 04 00 00000000')]);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              type: fc.integer({ min: 0, max: 10 }),
              flags: fc.integer({ min: 0, max: 255 }),
              id: fc.oneof(fc.constant(0), fc.constant(1), fc.constant(3), fc.integer({ min: 0, max: 2 ** 31 - 1 })),
              // Mostly the sizes frames have (RST_STREAM and WINDOW_UPDATE 4, PRIORITY 5, SETTINGS 6, PING 8).
              payload: fc.oneof(
                fc.uint8Array({ maxLength: 64 }),
                ...[4, 5, 6, 8].map((n) => fc.uint8Array({ minLength: n, maxLength: n })),
              ),
            }),
            { maxLength: 8 },
          ),
          async (frames) => {
            const bytes = [preface];
            for (const f of frames) {
              const h = Buffer.alloc(9);
              h.writeUIntBE(f.payload.length, 0, 3);
              h[3] = f.type;
              h[4] = f.flags;
              h.writeUInt32BE(f.id, 5);
              bytes.push(h, Buffer.from(f.payload));
            }
            const c = await rawClient(server.port);
            c.socket.end(Buffer.concat(bytes));
            await c.closed;
            // A bug of ours would have ended the connection INTERNAL_ERROR (or the process, uncaught).
            const goaway = c.frames.find((f) => f.type === 7);
            assert.notEqual(goaway?.payload.readUInt32BE(4), H2Error.INTERNAL_ERROR);
          },
        ),
        { numRuns: 300 },
      );
      // And the server still serves.
      const session = http2.connect(`http://127.0.0.1:${server.port}`);
      assert.equal((await request(session, { 'x-after': 'fuzz' }))['x-after'], 'fuzz');
      session.close();
    } finally {
      server.close();
    }
  });
});

// --- a raw client: frames written and read by hand, for what no well-behaved client sends.

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

function frame(type: number, flags: number, id: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(id, 5);
  return Buffer.concat([h, payload]);
}
const SETTINGS_FRAME = frame(4, 0, 0);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const requestHeaders = (id: number, endStream = false) =>
  frame(
    1,
    0x4 | (endStream ? 1 : 0),
    id,
    encodeHeaders([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/t.T/M'],
      [':authority', 'x'],
      ['content-type', 'application/grpc'],
    ]),
  );
const grpcMessage = (id: number, message: Buffer) => {
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, 5);
  return frame(0, 1, id, framed);
};

interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
}

/** A raw connection: everything the server sends, parsed into frames as it comes. */
async function rawClient(port: number, opts: { read?: boolean } = {}) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  const frames: Frame[] = [];
  let buf = Buffer.alloc(0);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  if (opts.read !== false) {
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9 && buf.length >= 9 + buf.readUIntBE(0, 3)) {
        const len = buf.readUIntBE(0, 3);
        frames.push({ type: buf[3]!, flags: buf[4]!, id: buf.readUInt32BE(5), payload: buf.subarray(9, 9 + len) });
        buf = buf.subarray(9 + len);
      }
    });
  } else socket.pause();
  const goaway = async () => {
    await closed;
    const g = frames.find((f) => f.type === 7);
    return g ? g.payload.readUInt32BE(4) : undefined;
  };
  return { socket, frames, closed, goaway };
}

describe('what a client may not make the server do', () => {
  async function framesServer(handler: (b: Buffer) => Promise<Buffer> = async (b) => b) {
    const server = new GrpcFramesServer({ methods: new Map([['/t.T/M', handler]]), maxReceiveBytes: 1 << 20 });
    const port = await server.listen(0, '127.0.0.1');
    return { server, port };
  }

  test('the first frame must be SETTINGS', async () => {
    const { server, port } = await framesServer();
    try {
      const c = await rawClient(port);
      c.socket.end(Buffer.concat([PREFACE, frame(6, 0, 0, Buffer.alloc(8))]));
      assert.equal(await c.goaway(), H2Error.PROTOCOL_ERROR);
    } finally {
      await server.drain(100);
    }
  });

  test('a header block that never ends (empty CONTINUATIONs) ends the connection, ENHANCE_YOUR_CALM', async () => {
    const { server, port } = await framesServer();
    try {
      const c = await rawClient(port);
      const headers = requestHeaders(1);
      headers[4] = 0; // no END_HEADERS
      c.socket.write(Buffer.concat([PREFACE, SETTINGS_FRAME, headers]));
      const empty = frame(9, 0, 1);
      c.socket.end(Buffer.concat(Array(40_000).fill(empty)));
      assert.equal(await c.goaway(), H2Error.ENHANCE_YOUR_CALM);
    } finally {
      await server.drain(100);
    }
  });

  test(`at most ${MAX_STREAMS} streams at once: SETTINGS say so, the next is refused (REFUSED_STREAM)`, async () => {
    const { server, port } = await framesServer();
    try {
      const c = await rawClient(port);
      const open = Array.from({ length: MAX_STREAMS + 1 }, (_, i) => requestHeaders(2 * i + 1));
      c.socket.write(Buffer.concat([PREFACE, SETTINGS_FRAME, ...open]));
      const last = 2 * MAX_STREAMS + 1;
      for (let i = 0; i < 200 && !c.frames.some((f) => f.type === 3 && f.id === last); i++)
        await new Promise((r) => setTimeout(r, 10));
      const settings = c.frames.find((f) => f.type === 4 && !(f.flags & 1))!;
      const announced = new Map<number, number>();
      for (let at = 0; at < settings.payload.length; at += 6)
        announced.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
      assert.equal(announced.get(3), MAX_STREAMS, 'SETTINGS_MAX_CONCURRENT_STREAMS');
      const resets = c.frames.filter((f) => f.type === 3);
      assert.deepEqual(
        resets.map((f) => [f.id, f.payload.readUInt32BE(0)]),
        [[last, H2Error.REFUSED_STREAM]],
        'only the one past the limit',
      );
      c.socket.destroy();
    } finally {
      await server.drain(100);
    }
  });

  test('a client that sends and never reads: past 1 MiB owed, the server stops reading', async () => {
    let serverSocket: net.Socket | undefined;
    const server = net.createServer((socket) => {
      serverSocket = socket;
      new H2Connection(
        socket,
        { streamWindow: 65_535, connectionWindow: 1 << 20, maxHeaderList: 64 * 1024 },
        { stream: () => {}, closed: () => {} },
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const c = await rawClient((server.address() as net.AddressInfo).port, { read: false });
    try {
      c.socket.write(Buffer.concat([PREFACE, SETTINGS_FRAME]));
      // Each PING is owed an ACK of its own size: 20 MB of them, never read.
      const pings = Buffer.concat(Array(50_000).fill(frame(6, 0, 0, Buffer.alloc(8))));
      let most = 0;
      for (let i = 0; i < 24; i++) {
        c.socket.write(pings);
        await new Promise((r) => setTimeout(r, 20));
        most = Math.max(most, serverSocket?.writableLength ?? 0);
      }
      assert.ok(most < 4 * 1024 * 1024, `the server held ${most} bytes for the client`);
      assert.ok(
        c.socket.writableLength > 5 * 1024 * 1024,
        'the client could not send it all: the server stopped reading',
      );
    } finally {
      c.socket.destroy();
      server.close();
    }
  });

  test('rapid reset: calls reset before their turn are not run; resetting without end ends the connection', async () => {
    let runs = 0;
    const { server, port } = await framesServer(async (b) => {
      runs++;
      return b;
    });
    try {
      const c = await rawClient(port);
      const calls = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) => {
          const id = from + 2 * i;
          return Buffer.concat([requestHeaders(id), grpcMessage(id, Buffer.from('x')), frame(3, 0, id, u32(8))]);
        });
      c.socket.write(Buffer.concat([PREFACE, SETTINGS_FRAME, ...calls(1, 500)]));
      await new Promise((r) => setTimeout(r, 200));
      // A call whose reset came in a later read than its message may run; in one write, almost none do.
      assert.ok(runs < 25, `reset calls run: ${runs} of 500`);
      assert.equal(c.frames.filter((f) => f.type === 7).length, 0, '500 resets are within the bucket');
      c.socket.write(Buffer.concat(calls(1001, 1000)));
      assert.equal(await c.goaway(), H2Error.ENHANCE_YOUR_CALM);
    } finally {
      await server.drain(100);
    }
  });

  test('a broken header block, more data than the window, a header list too large: each answered as HTTP/2 says', async () => {
    // On a socket whose bytes arrive in one piece: the window is overrun before any grant could follow.
    const connect = (bytes: Buffer) => {
      const written: Buffer[] = [];
      const socket = new Duplex({
        read() {},
        write(chunk, _encoding, callback) {
          written.push(chunk as Buffer);
          callback();
        },
      });
      new H2Connection(
        socket,
        { streamWindow: 1 << 20, connectionWindow: 65_535, maxHeaderList: 400 },
        { stream: (stream) => stream.respondAndEnd([[':status', '200']]), closed: () => {} },
      );
      socket.push(Buffer.concat([PREFACE, SETTINGS_FRAME, bytes]));
      return new Promise<Frame[]>((resolve) =>
        setImmediate(() => {
          const frames: Frame[] = [];
          let buf = Buffer.concat(written);
          while (buf.length >= 9) {
            const len = buf.readUIntBE(0, 3);
            frames.push({ type: buf[3]!, flags: buf[4]!, id: buf.readUInt32BE(5), payload: buf.subarray(9, 9 + len) });
            buf = buf.subarray(9 + len);
          }
          resolve(frames);
        }),
      );
    };
    const goawayOf = (frames: Frame[]) => frames.find((f) => f.type === 7)?.payload.readUInt32BE(4);
    // An index no table has: the decoder is out of step for good, so the connection ends.
    assert.equal(goawayOf(await connect(frame(1, 0x4, 1, Buffer.from([0x80])))), H2Error.COMPRESSION_ERROR);
    // 70,000 bytes on a connection granted 65,535.
    const data = Array.from({ length: 5 }, () => frame(0, 0, 1, Buffer.alloc(14_000)));
    assert.equal(goawayOf(await connect(Buffer.concat([requestHeaders(1), ...data]))), H2Error.FLOW_CONTROL_ERROR);
    // A header list over the 400 announced: HTTP 431 on that stream; the connection serves on.
    const big = frame(
      1,
      0x5,
      1,
      encodeHeaders([
        [':method', 'POST'],
        [':path', '/t.T/M'],
        ['x-large', 'x'.repeat(500)],
      ]),
    );
    const frames = await connect(Buffer.concat([big, requestHeaders(3, true)]));
    const statuses = new HpackDecoder();
    const answers = frames.filter((f) => f.type === 1).map((f) => [f.id, statuses.decode(f.payload, BIG)[0]![1]]);
    assert.deepEqual(answers, [
      [1, '431'],
      [3, '200'],
    ]);
    assert.equal(goawayOf(frames), undefined);
  });

  test('a drain ends the connection only once its last answer is out, however slowly the client reads', async () => {
    let closed = false;
    let conn: H2Connection | undefined;
    let serverSocket: net.Socket | undefined;
    // Larger than the kernel's socket buffers hold: part of it waits in the server's socket.
    const ANSWER = 16_000_000;
    const server = net.createServer((socket) => {
      serverSocket = socket;
      conn = new H2Connection(
        socket,
        { streamWindow: 65_535, connectionWindow: 1 << 20, maxHeaderList: 64 * 1024 },
        {
          stream: (stream) => {
            stream.listener = {
              data: () => {},
              end: () => stream.answer(encodeHeaders([[':status', '200']]), Buffer.alloc(ANSWER, 7), encodeHeaders([])),
              close: () => {},
            };
          },
          closed: () => {
            closed = true;
          },
        },
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const c = await rawClient((server.address() as net.AddressInfo).port, { read: false });
    try {
      // Windows large enough for the whole answer: it all goes to the socket, and waits there for the client.
      const windows = frame(4, 0, 0, Buffer.concat([Buffer.from([0, 4]), u32(1 << 24)]));
      c.socket.write(Buffer.concat([PREFACE, windows, frame(8, 0, 0, u32(1 << 24)), requestHeaders(1, true)]));
      for (let i = 0; i < 200 && !(serverSocket && serverSocket.writableLength > 0); i++)
        await new Promise((r) => setTimeout(r, 10));
      conn!.close();
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(closed, false, 'not closed while the answer waits in the socket');
      let received = 0;
      c.socket.on('data', (d: Buffer) => (received += d.length));
      c.socket.resume();
      await c.closed;
      assert.ok(received > ANSWER, `the client received ${received} bytes`);
      for (let i = 0; i < 200 && !closed; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(closed, true, 'closed once the socket closed');
    } finally {
      c.socket.destroy();
      server.close();
    }
  });

  test("an answer sent partly as views of its memory: `sent` waits for the socket's callbacks, not the last copy", async () => {
    // A socket that takes writes and calls back only when told: the first part of the answer (over 64 KiB,
    // as far as the client's 64 KiB window allows) goes to it as views of the answer's memory; the rest,
    // after a WINDOW_UPDATE, as a copy. The memory may be reused only once the socket took the views.
    const held: Array<() => void> = [];
    const socket = new Duplex({
      read() {},
      write(_chunk, _encoding, callback) {
        held.push(() => callback());
      },
    });
    let sent = false;
    new H2Connection(
      socket,
      { streamWindow: 65_535, connectionWindow: 1 << 20, maxHeaderList: 64 * 1024 },
      {
        stream: (stream) => {
          stream.listener = {
            data: () => {},
            end: () =>
              stream.answer(encodeHeaders([[':status', '200']]), Buffer.alloc(100_005, 1), encodeHeaders([]), () => {
                sent = true;
              }),
            close: () => {},
          };
        },
        closed: () => {},
      },
    );
    socket.push(Buffer.concat([PREFACE, SETTINGS_FRAME, requestHeaders(1, true)]));
    await new Promise((r) => setImmediate(r));
    socket.push(Buffer.concat([frame(8, 0, 0, u32(40_000)), frame(8, 0, 1, u32(40_000))]));
    await new Promise((r) => setImmediate(r));
    assert.equal(sent, false, 'the views still wait in the socket');
    while (held.length > 0) {
      held.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(sent, true, 'once the socket took every byte');
  });
});
