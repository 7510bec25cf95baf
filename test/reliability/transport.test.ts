// The gRPC transport on node:http2 (src/grpc-http2.ts), judged from the wire:
// a raw HTTP/2 client sees every header and trailer, and grpc-js, the client
// the other suites use, sees the statuses it maps them to. Then the function
// itself on both transports: the default (node:http2) and grpc-js, still
// selectable with FUNCTION_PLATFORM_TRANSPORT, answer the same bytes.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import {
  type CallBytes,
  encodeGrpcMessage,
  frameMessage,
  GrpcError,
  GrpcStatus,
  parseGrpcTimeout,
  REUSED_MAX,
} from '../../src/grpc-call.js';
import { GrpcFramesServer } from '../../src/grpc-frames.js';
import { GrpcHttp2Server } from '../../src/grpc-http2.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { DEFAULT_TRANSPORT } from '../../src/server.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { runToExit } from '../support/run-to-exit.js';
import { dialWire } from '../support/wire.js';

const ECHO = '/test.Echo/Echo';
const HOLD = '/test.Echo/Hold';
const FAIL = '/test.Echo/Fail';
const BUG = '/test.Echo/Bug';
const SYNC_BUG = '/test.Echo/SyncBug';
const BIG = '/test.Echo/Big';
const REUSE = '/test.Echo/Reuse';
const KEEP = '/test.Echo/Keep';
const LATE = '/test.Echo/Late';
/**
 * REUSE's answer: its request's bytes repeated to 30,000 bytes, or, for a request that starts with "big", to
 * 40,000 bytes past the largest block the pool keeps; written into the call's reused memory.
 */
function reuseAnswer(request: Buffer, out: Buffer = Buffer.alloc(reuseAnswerLength(request))): Buffer {
  for (let at = 0; at < out.length; at += request.length)
    request.copy(out, at, 0, Math.min(request.length, out.length - at));
  return out;
}
const reuseAnswerLength = (request: Buffer) =>
  request.subarray(0, 3).toString() === 'big' ? REUSED_MAX + 40_000 : 30_000;
const BIG_ANSWER = 15 * 1024 * 1024;
const MAX = 1024;

interface RawAnswer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders | undefined;
  data: Buffer;
}

/** One request on a raw HTTP/2 session: these headers, these body chunks; all that comes back. */
function rawCall(
  session: http2.ClientHttp2Session,
  path: string,
  body: Buffer[],
  headers: http2.OutgoingHttpHeaders = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    let got: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | undefined;
    const data: Buffer[] = [];
    req.on('response', (h) => (got = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => data.push(c));
    req.on('close', () => resolve({ headers: got, trailers, data: Buffer.concat(data) }));
    req.on('error', reject);
    for (const c of body) req.write(c);
    req.end();
  });
}

/** The status of an answer: in trailers, or in the headers of a trailers-only answer. */
function statusOf(a: RawAnswer): { code: number; message: string } {
  const from = a.trailers ?? a.headers;
  return {
    code: Number(from['grpc-status']),
    message: decodeURIComponent(String(from['grpc-message'] ?? '')),
  };
}

const SERVERS = [
  ['HTTP/2 framed by the function', GrpcFramesServer],
  ['node:http2', GrpcHttp2Server],
] as const;

for (const [transportName, Server] of SERVERS)
  describe(`gRPC on ${transportName}, from the wire`, () => {
    let server: GrpcHttp2Server | GrpcFramesServer;
    let port: number;
    let session: http2.ClientHttp2Session;
    const held: Array<() => void> = [];
    let bugs = 0;
    /** The memory REUSE's requests and answers came in, and the requests KEEP kept. */
    const seen = { requests: new Set<ArrayBufferLike>(), answers: new Set<ArrayBufferLike>() };
    const kept: Buffer[] = [];
    /** What LATE's handler heard when it used its call's memory after answering. */
    const late: Promise<string[]>[] = [];
    before(async () => {
      server = new Server({
        methods: new Map([
          [ECHO, async (b: Buffer) => Buffer.from(b)],
          [HOLD, (b: Buffer) => new Promise<Buffer>((resolve) => held.push(() => resolve(Buffer.from(b))))],
          [
            FAIL,
            async () => {
              throw new GrpcError(GrpcStatus.INTERNAL, 'cannot decode: 100% wrong ✗');
            },
          ],
          [
            BUG,
            async () => {
              throw new TypeError('a bug with a secret=hunter2 in it');
            },
          ],
          [
            SYNC_BUG,
            () => {
              throw new TypeError('thrown before any await');
            },
          ],
          [BIG, async () => Buffer.alloc(BIG_ANSWER, 7)],
          [
            REUSE,
            async (b: Buffer, bytes: CallBytes) => {
              seen.requests.add(b.buffer);
              // A while, so that calls sent together are in flight together.
              await new Promise((r) => setTimeout(r, 2 + (b[0]! % 7)));
              const out = reuseAnswer(b, bytes.answer(reuseAnswerLength(b)));
              seen.answers.add(out.buffer);
              return out;
            },
          ],
          [
            LATE,
            async (_b: Buffer, bytes: CallBytes) => {
              late.push(
                new Promise((resolve) =>
                  setTimeout(() => {
                    const heard: string[] = [];
                    for (const use of [() => bytes.answer(10), () => bytes.keepRequest()]) {
                      try {
                        use();
                        heard.push('allowed');
                      } catch (e) {
                        heard.push((e as Error).message);
                      }
                    }
                    resolve(heard);
                  }, 20),
                ),
              );
              return Buffer.from('answered');
            },
          ],
          [
            KEEP,
            async (b: Buffer, bytes: CallBytes) => {
              bytes.keepRequest();
              kept.push(b);
              return Buffer.from('kept');
            },
          ],
        ]),
        maxReceiveBytes: MAX,
        keepaliveMs: 300,
        keepaliveTimeoutMs: 300,
        onHandlerError: () => bugs++,
      });
      port = await server.listen(0, '127.0.0.1');
      session = http2.connect(`http://127.0.0.1:${port}`);
    });
    after(async () => {
      session.close();
      await server.drain(1000);
    });

    test('an answer: 200, application/grpc, the framed message, then trailers with status 0', async () => {
      const a = await rawCall(session, ECHO, [frameMessage(Buffer.from('hello'))]);
      assert.equal(a.headers[':status'], 200);
      assert.equal(a.headers['content-type'], 'application/grpc');
      assert.deepEqual(a.data, frameMessage(Buffer.from('hello')));
      assert.equal(a.trailers?.['grpc-status'], '0');
    });

    test('a message split across chunks anywhere, even inside its prefix, is read whole', async () => {
      const framed = frameMessage(Buffer.from('split across many chunks'));
      for (const cut of [1, 3, 5, 6, 20]) {
        const a = await rawCall(session, ECHO, [framed.subarray(0, cut), framed.subarray(cut)]);
        assert.deepEqual(a.data, framed, `cut at ${cut}`);
      }
      const empty = await rawCall(session, ECHO, [frameMessage(Buffer.alloc(0))]);
      assert.deepEqual(empty.data, frameMessage(Buffer.alloc(0)), 'an empty message is a message');
    });

    test('refusals are trailers-only answers with the status gRPC defines', async () => {
      const cases: Array<[string, Promise<RawAnswer>, number, RegExp]> = [
        ['unknown method', rawCall(session, '/test.Echo/Nope', [frameMessage(Buffer.from('x'))]), 12, /unknown method/],
        [
          'over the limit',
          rawCall(session, ECHO, [frameMessage(Buffer.alloc(MAX + 1))]),
          8,
          /larger than max \(1025 vs\. 1024\)/,
        ],
        [
          'compressed',
          rawCall(session, ECHO, [Buffer.from([1, 0, 0, 0, 1, 0])], { 'grpc-encoding': 'gzip' }),
          12,
          /compressed messages \(grpc-encoding gzip\) are not accepted/,
        ],
        ['no message', rawCall(session, ECHO, []), 13, /no message/],
        ['cut inside a message', rawCall(session, ECHO, [Buffer.from([0, 0, 0, 0, 9, 1])]), 13, /inside a message/],
        [
          'two messages on a unary method',
          rawCall(session, ECHO, [frameMessage(Buffer.from('a')), frameMessage(Buffer.from('b'))]),
          12,
          /one request message/,
        ],
        ['a flag byte of 7', rawCall(session, ECHO, [Buffer.from([7, 0, 0, 0, 0])]), 13, /flag byte is 7/],
        ['malformed grpc-timeout', rawCall(session, ECHO, [], { 'grpc-timeout': '5 seconds' }), 13, /grpc-timeout/],
        ['the handler refuses', rawCall(session, FAIL, [frameMessage(Buffer.from('x'))]), 13, /100% wrong ✗/],
        ['the handler has a bug', rawCall(session, BUG, [frameMessage(Buffer.from('x'))]), 13, /failed to answer/],
        [
          'the handler throws at once',
          rawCall(session, SYNC_BUG, [frameMessage(Buffer.from('x'))]),
          13,
          /failed to answer/,
        ],
      ];
      for (const [what, call, code, message] of cases) {
        const a = await call;
        assert.equal(a.trailers, undefined, `${what}: trailers-only`);
        assert.equal(a.headers[':status'], 200, what);
        assert.deepEqual(statusOf(a).code, code, `${what}: ${statusOf(a).message}`);
        assert.match(statusOf(a).message, message, what);
        assert.equal(a.data.length, 0, what);
        if (code === 12)
          assert.equal(a.headers['grpc-accept-encoding'], 'identity', `${what}: names the encoding taken`);
      }
      assert.equal(bugs, 2, 'both bugs were handed to onHandlerError');
      const bug = await rawCall(session, BUG, [frameMessage(Buffer.from('x'))]);
      assert.doesNotMatch(String(bug.headers['grpc-message']), /hunter2/, "a handler's error stays out of the answer");
    });

    test('not gRPC at all: another method is HTTP 405, another content type HTTP 415', async () => {
      const get = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
        const r = session.request({ ':method': 'GET', ':path': ECHO });
        r.on('response', resolve);
        r.resume();
        r.end();
      });
      assert.equal(get[':status'], 405);
      const text = await rawCall(session, ECHO, [Buffer.from('hi')], { 'content-type': 'text/plain' });
      assert.equal(text.headers[':status'], 415);
      const plus = await rawCall(session, ECHO, [frameMessage(Buffer.from('p'))], {
        'content-type': 'application/grpc+proto',
      });
      assert.equal(statusOf(plus).code, 0, 'application/grpc+proto is gRPC');
    });

    test('grpc-timeout: past the deadline the call ends DEADLINE_EXCEEDED and the late answer is dropped', async () => {
      const started = Date.now();
      const a = await rawCall(session, HOLD, [frameMessage(Buffer.from('late'))], { 'grpc-timeout': '200m' });
      const took = Date.now() - started;
      assert.equal(statusOf(a).code, GrpcStatus.DEADLINE_EXCEEDED);
      assert.ok(took >= 190 && took < 5000, `ended after ${took} ms`);
      held.shift()!(); // the handler answers late: nothing is sent and nothing breaks
      const next = await rawCall(session, ECHO, [frameMessage(Buffer.from('after'))]);
      assert.deepEqual(next.data, frameMessage(Buffer.from('after')), 'the connection still serves');
      assert.equal(parseGrpcTimeout('3S'), 3000);
      assert.equal(parseGrpcTimeout('1H'), 3_600_000);
      assert.equal(parseGrpcTimeout('500u'), 0.5);
      assert.ok(Number.isNaN(parseGrpcTimeout('123456789S')), 'more than 8 digits');
      assert.equal(parseGrpcTimeout(undefined), undefined);
    });

    test('grpc-js sees the same statuses: deadline, unknown method, too large', async () => {
      const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      const call = (path: string, payload: Buffer, deadlineMs: number) =>
        new Promise<grpc.ServiceError | Buffer>((resolve) =>
          client.makeUnaryRequest(
            path,
            (b: Buffer) => b,
            (b: Buffer) => b,
            payload,
            new grpc.Metadata(),
            { deadline: Date.now() + deadlineMs },
            (err, rsp) => resolve(err ?? rsp!),
          ),
        );
      try {
        assert.deepEqual(await call(ECHO, Buffer.from('ok'), 5000), Buffer.from('ok'));
        assert.equal(((await call('/test.Echo/Nope', Buffer.from('x'), 5000)) as grpc.ServiceError).code, 12);
        assert.equal(((await call(ECHO, Buffer.alloc(MAX + 10), 5000)) as grpc.ServiceError).code, 8);
        assert.equal(((await call(HOLD, Buffer.from('x'), 300)) as grpc.ServiceError).code, 4);
        held.shift()!();
      } finally {
        client.close();
      }
    });

    test('a client that resets its call: the answer is dropped, the connection serves on', async () => {
      await new Promise<void>((resolve) => {
        const req = session.request({ ':method': 'POST', ':path': HOLD, 'content-type': 'application/grpc' });
        req.on('error', () => {});
        req.end(frameMessage(Buffer.from('gone')));
        setTimeout(() => {
          req.close(http2.constants.NGHTTP2_CANCEL);
          resolve();
        }, 50);
      });
      await new Promise((r) => setTimeout(r, 50));
      held.shift()!();
      const next = await rawCall(session, ECHO, [frameMessage(Buffer.from('still'))]);
      assert.equal(statusOf(next).code, 0);
    });

    test('large answers waiting to be read do not refuse the next call on the connection', async () => {
      const s = http2.connect(`http://127.0.0.1:${port}`);
      try {
        // Six answers of 15 MiB each, none read: they wait in the server for the window to open.
        const waiting = Array.from({ length: 6 }, () => {
          const req = s.request({
            ':method': 'POST',
            ':path': BIG,
            'content-type': 'application/grpc',
            te: 'trailers',
          });
          req.on('error', () => {});
          req.pause();
          req.end(frameMessage(Buffer.from('big')));
          return req;
        });
        await new Promise((r) => setTimeout(r, 300));
        const next = await rawCall(s, ECHO, [frameMessage(Buffer.from('still served'))]);
        assert.equal(
          statusOf(next).code,
          0,
          `the next call: ${statusOf(next).message || JSON.stringify(next.headers)}`,
        );
        assert.deepEqual(next.data, frameMessage(Buffer.from('still served')));
        // And the waiting answers arrive whole once read.
        const sizes = await Promise.all(
          waiting.map(
            (req) =>
              new Promise<number>((resolve) => {
                let n = 0;
                req.on('data', (c: Buffer) => (n += c.length));
                req.on('close', () => resolve(n));
                req.resume();
              }),
          ),
        );
        assert.deepEqual(sizes, Array(6).fill(BIG_ANSWER + 5));
      } finally {
        s.close();
      }
    });

    test('flow control: a request of up to 256 KiB fits in its stream window, four of them in the connection window', async () => {
      const c = http2.connect(`http://127.0.0.1:${port}`);
      try {
        await new Promise((resolve) => c.once('remoteSettings', resolve));
        assert.equal(c.remoteSettings.initialWindowSize, 256 * 1024);
        // The connection's window grows by a WINDOW_UPDATE after the settings.
        for (let i = 0; i < 100 && (c.state.remoteWindowSize ?? 0) < 1024 * 1024; i++)
          await new Promise((r) => setTimeout(r, 10));
        assert.equal(c.state.remoteWindowSize, 1024 * 1024);
      } finally {
        c.close();
      }
    });

    test("reused memory: 65 calls at once each get their own answer; a slow reader's answer is not overwritten", async () => {
      const body = (i: number) => Buffer.alloc(600, i === 64 ? 'big one;' : `call ${i};`);
      const expect = (i: number) => frameMessage(reuseAnswer(body(i)));
      // A reader that takes 1 KiB and stops: the rest of its answer waits in the server, in reused memory.
      const slow = http2.connect(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 1024 } });
      try {
        const slowReq = slow.request({
          ':method': 'POST',
          ':path': REUSE,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        const slowData: Buffer[] = [];
        slowReq.on('data', (c: Buffer) => slowData.push(c));
        slowReq.pause();
        slowReq.end(frameMessage(body(-1)));
        await new Promise((r) => setTimeout(r, 100));
        for (let round = 0; round < 3; round++) {
          const answers = await Promise.all(
            Array.from({ length: 65 }, (_, i) => rawCall(session, REUSE, [frameMessage(body(i))])),
          );
          answers.forEach((a, i) => {
            assert.equal(statusOf(a).code, 0);
            assert.ok(a.data.equals(expect(i)), `round ${round}, call ${i}: its own answer`);
          });
        }
        const slowDone = new Promise<void>((resolve) => slowReq.on('close', resolve));
        slowReq.resume();
        await slowDone;
        assert.ok(Buffer.concat(slowData).equals(expect(-1)), "the slow reader's answer, whole and its own");
      } finally {
        slow.close();
      }
      // Reused, not made anew: 196 calls took far fewer blocks than they would have without the pool (the
      // three answers past the largest block each a block of their own).
      assert.ok(seen.requests.size <= 67, `request blocks for 196 calls: ${seen.requests.size}`);
      assert.ok(seen.answers.size <= 70, `answer blocks for 196 calls: ${seen.answers.size}`);
      const before = { requests: seen.requests.size, answers: seen.answers.size };
      for (let i = 0; i < 10; i++) await rawCall(session, REUSE, [frameMessage(body(i))]);
      assert.deepEqual(
        { requests: seen.requests.size, answers: seen.answers.size },
        before,
        'one call at a time reuses',
      );
    });

    test('a request the handler keeps is not reused by the calls after it', async () => {
      const mine = Buffer.alloc(600, 'mine;');
      await rawCall(session, KEEP, [frameMessage(mine)]);
      seen.requests.clear();
      for (let i = 0; i < 5; i++) {
        const a = await rawCall(session, REUSE, [frameMessage(Buffer.alloc(600, `other ${i};`))]);
        assert.equal(statusOf(a).code, 0);
      }
      assert.ok(kept.at(-1)!.equals(mine), 'the kept request, unchanged');
      assert.equal(seen.requests.has(kept.at(-1)!.buffer), false, 'its memory went to no later call');
    });

    test("a call's memory is the handler's only while it runs", async () => {
      assert.equal(statusOf(await rawCall(session, LATE, [frameMessage(Buffer.from('x'))])).code, 0);
      assert.deepEqual(await late[0], [
        'CallBytes.answer after the handler was done',
        'CallBytes.keepRequest after the handler was done',
      ]);
    });

    test('grpc-message is percent-encoded: printable ASCII as is, the rest (and %) as UTF-8 bytes', () => {
      assert.equal(encodeGrpcMessage('plain text: ok'), 'plain text: ok');
      assert.equal(encodeGrpcMessage('100% ✗\n'), '100%25 %E2%9C%97%0A');
    });

    test('keepalive: every connection is pinged; one whose peer stops answering is dropped', async () => {
      const pinged = http2.connect(`http://127.0.0.1:${port}`);
      let pings = 0;
      pinged.on('ping', () => pings++);
      await rawCall(pinged, ECHO, [frameMessage(Buffer.from('x'))]);
      await new Promise((r) => setTimeout(r, 1000));
      assert.ok(pings >= 2, `pings received in 1 s with keepalive every 300 ms: ${pings}`);
      assert.equal(pinged.closed || pinged.destroyed, false, 'a peer that answers keeps its connection');
      pinged.close();

      // A peer that says HTTP/2's preface and SETTINGS, then nothing ever again (no PING ack).
      const silent = net.connect(port, '127.0.0.1');
      const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
      silent.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), settings]));
      silent.resume();
      const closedAfter = await new Promise<number>((resolve) => {
        const t0 = Date.now();
        silent.on('close', () => resolve(Date.now() - t0));
        silent.on('error', () => {});
      });
      assert.ok(closedAfter >= 500 && closedAfter < 5000, `a silent peer dropped after ${closedAfter} ms`);
    });

    test('drain: GOAWAY to every connection, the call on its way finishes, new connections are refused', async () => {
      const s2 = http2.connect(`http://127.0.0.1:${port}`);
      const goaway = new Promise<number>((resolve) => s2.on('goaway', (code) => resolve(code)));
      await rawCall(s2, ECHO, [frameMessage(Buffer.from('warm'))]);
      const inFlight = rawCall(s2, HOLD, [frameMessage(Buffer.from('finish me'))]);
      await new Promise((r) => setTimeout(r, 50));
      session.close();
      const drained = server.drain(5000);
      assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR, 'GOAWAY with NO_ERROR');
      const refused = await new Promise<string>((resolve) => {
        const c = net.connect(port, '127.0.0.1');
        c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        c.on('connect', () => resolve('connected'));
      });
      assert.equal(refused, 'ECONNREFUSED');
      held.shift()!();
      const a = await inFlight;
      assert.deepEqual(a.data, frameMessage(Buffer.from('finish me')), 'the call on its way was answered');
      assert.equal(statusOf(a).code, 0);
      await drained;
    });
  });

describe('the function on each transport', () => {
  const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;
  const fns: FunctionProcess[] = [];
  after(async () => {
    for (const fn of fns) await fn.stop();
  });

  test('every transport (the default, node:http2, grpc-js) answers a Widget with the same bytes', async () => {
    const answers: Buffer[] = [];
    for (const transport of ['', 'http2', 'grpc-js']) {
      const fn = await startFunction({ insecure: true, env: { FUNCTION_PLATFORM_TRANSPORT: transport } });
      fns.push(fn);
      assert.match(fn.logs(), new RegExp(`"transport":"${transport || DEFAULT_TRANSPORT}"`));
      const session = http2.connect(`http://${fn.target}`);
      const req = Buffer.from(RunFunctionRequest.encode(buildRequest(seed)).finish());
      const a = await rawCall(session, '/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction', [
        frameMessage(req),
      ]);
      session.close();
      assert.equal(statusOf(a).code, 0, statusOf(a).message);
      answers.push(a.data);
      const client = dialWire(fn.target);
      const out = await client.run(buildRequest(seed));
      client.close();
      assert.ok(out.ok && out.rsp.desired?.resources['deployment-blue'], `grpc-js client on ${transport || 'default'}`);
    }
    assert.ok(answers[0]!.length > 100, 'an answer of substance');
    assert.deepEqual(answers[1], answers[0], 'the same answer on node:http2');
    assert.deepEqual(answers[2], answers[0], 'the same answer on grpc-js');
  });

  test('an unknown transport is refused at start, naming the variable', async () => {
    const out = await runToExit(['--insecure'], {
      env: { FUNCTION_PLATFORM_TRANSPORT: 'carrier-pigeon' },
      timeoutMs: 20_000,
    });
    assert.equal(out.code, 2);
    assert.match(out.stderr, /FUNCTION_PLATFORM_TRANSPORT must be frames, http2 or grpc-js, not "carrier-pigeon"/);
  });
});
