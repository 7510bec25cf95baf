// A client that sends requests to a Widget's Service without pause and
// writes one JSON line per answer, for the real-node suites: started in the
// node's network namespace (real-node.ts: startTraffic), where kube-proxy's
// rules route a ClusterIP to the pods, it sees what an application in the
// cluster would see during a cutover.
//
// Each request opens its own connection, so each one goes where the Service's
// rules send it at that moment (a kept-alive connection would stay with the
// pod it first reached). The answer is whoami's: its Hostname line names the
// pod, and so the color.
//
//   node dist/test/support/traffic-client.js URL [PAUSE_MS]
// ends on SIGTERM, after the request in flight.
import { request } from 'node:http';

const [url, pauseArg] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: traffic-client URL [PAUSE_MS]\n');
  process.exit(2);
}
const pause = Number(pauseArg ?? '10');
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
});

/** One request: the pod that answered, or why none did. */
function once(): Promise<{ ok: boolean; pod?: string; status?: number; error?: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = request(url!, { agent: false, timeout: 3000, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const pod = /^Hostname: (\S+)/m.exec(body)?.[1];
        const ok = res.statusCode === 200 && pod !== undefined;
        resolve({ ok, status: res.statusCode ?? 0, ...(pod ? { pod } : {}), ms: Date.now() - started });
      });
      res.on('error', (e) => resolve({ ok: false, error: e.message, ms: Date.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out after 3 s')));
    req.on('error', (e) => resolve({ ok: false, error: e.message, ms: Date.now() - started }));
    req.end();
  });
}

while (!stopping) {
  const r = await once();
  process.stdout.write(`${JSON.stringify({ t: Date.now(), ...r })}\n`);
  await new Promise((resolve) => setTimeout(resolve, pause));
}
