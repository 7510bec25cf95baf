// A stand-in AWS endpoint on loopback for reliability tests: it counts the
// calls the function makes (so a test knows they are in flight), can hold its
// answers until told to let go, and answers every call with an AWS-shaped
// error whose message can quote what the request carried (credentials
// included) — the worst an upstream error could do.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface FakeAwsOptions {
  /** Keep every answer until release() is called. */
  hold?: boolean;
  /** The error message to answer with; `quote` gets the request's headers and body to put in it. */
  message?: (quote: { headers: IncomingMessage['headers']; body: string }) => string;
}

export interface FakeAws {
  endpoint: string;
  /** Calls received so far. */
  readonly calls: number;
  /** Headers and bodies received, in order. */
  readonly received: Array<{ headers: IncomingMessage['headers']; body: string }>;
  /** Resolves once `n` calls have arrived. */
  waitForCalls(n: number, timeoutMs?: number): Promise<void>;
  /** Answers every held call, and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function startFakeAws(opts: FakeAwsOptions = {}): Promise<FakeAws> {
  let hold = opts.hold ?? false;
  const held: Array<() => void> = [];
  const received: FakeAws['received'] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      for (const w of waiters.filter((w) => received.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const message = opts.message?.({ headers: req.headers, body }) ?? 'The service is unavailable.';
      // RDS speaks the query protocol (ErrorResponse), S3 its REST XML (Error); both parse either's Code and Message.
      const answer = () => {
        res.writeHead(403, { 'content-type': 'text/xml' });
        res.end(
          `<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>${xmlEscape(message)}</Message></Error><Code>AccessDenied</Code><Message>${xmlEscape(message)}</Message><RequestId>fake-1</RequestId></ErrorResponse>`,
        );
      };
      if (hold) held.push(answer);
      else answer();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({
        endpoint: `http://127.0.0.1:${port}`,
        get calls() {
          return received.length;
        },
        received,
        waitForCalls(n, timeoutMs = 60_000) {
          if (received.length >= n) return Promise.resolve();
          return new Promise((ok, fail) => {
            const timer = setTimeout(
              () => fail(new Error(`only ${received.length} of ${n} AWS calls arrived in ${timeoutMs} ms`)),
              timeoutMs,
            );
            waiters.push({
              n,
              resolve: () => {
                clearTimeout(timer);
                ok();
              },
            });
          });
        },
        release() {
          hold = false;
          for (const answer of held.splice(0)) answer();
        },
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
