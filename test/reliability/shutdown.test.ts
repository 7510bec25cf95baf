// SIGTERM on a busy server. Calls are made slow the way real ones are: a
// Database on AWS whose step has AWS credentials makes the function ask AWS
// before it answers, and the stand-in AWS endpoint holds its answers. So the
// test knows, without guessing at timings, that every one of those calls is
// inside the server when SIGTERM arrives. Large (but allowed) requests and
// ordinary ones are in flight beside them.
//
// Then: the server says it is shutting down, refuses new connections while
// the calls are still running, every call in flight completes with a sound
// answer once AWS replies, and the process exits 0.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Severity, type RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import { field } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { awsDatabaseRequest } from '../support/aws-requests.js';
import { type FakeAws, startFakeAws } from '../support/fake-aws.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { answerProblems, asReceived, fatalOf } from '../support/invariants.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { alive, dialWire, type Outcome, watchStderr, type WireClient } from '../support/wire.js';

/** Calls held at AWS when SIGTERM arrives (below the AWS SDK's 50 sockets per endpoint). */
const HELD = 40;
const LARGE = 6;

const seed = readYamlObjects(`${repoRoot}/examples/widget/seed.yaml`)[0]!;

function largeWidget(i: number): RunFunctionRequest {
  // 8 MiB, half the limit: slow to send and to decode, in an annotation the function never reads.
  return buildRequest({
    ...seed,
    metadata: { name: `large-${i}`, namespace: 'team-a', annotations: { ballast: 'x'.repeat(8 * 1024 * 1024) } },
  });
}

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SIGTERM on a busy server', () => {
  let aws: FakeAws;
  let fn: FunctionProcess;
  let stderr: () => string;
  let client: WireClient;
  before(async () => {
    aws = await startFakeAws({ hold: true });
    // Each AWS call may take long enough for the test to look around; the grace period (10 s) is the function's own.
    fn = await startFunction({ insecure: true, env: { FUNCTION_PLATFORM_AWS_TIMEOUT_MS: '8000' } });
    stderr = watchStderr(fn);
    client = dialWire(fn.target);
  });
  after(async () => {
    client.close();
    aws.release();
    await fn.stop(1000);
    await aws.close();
  });

  test('stops accepting, finishes every call in flight, exits 0', { timeout: 120_000 }, async (t) => {
    // One connection: the large requests are sent before the held ones, so they are inside the server first.
    const large = Array.from({ length: LARGE }, (_, i) => ({
      req: largeWidget(i),
      out: client.run(largeWidget(i), 60_000),
    }));
    const held = Array.from({ length: HELD }, (_, i) => {
      const req = awsDatabaseRequest(`held-${i}`, aws.endpoint);
      return { req, out: client.run(req, 60_000) };
    });
    const ordinary = Array.from({ length: 20 }, () => ({
      req: buildRequest(seed),
      out: client.run(buildRequest(seed), 60_000),
    }));

    // Every held call has reached AWS: it is inside the server, waiting.
    await aws.waitForCalls(HELD);
    t.diagnostic(`${aws.calls} calls waiting at AWS when SIGTERM is sent`);
    fn.child.kill('SIGTERM');
    await until('the shutting-down log line', () => fn.logs().includes('shutting down'));
    assert.ok(alive(fn), 'the server must still be running: its calls are not finished');

    // New connections are refused while the calls are still being finished.
    const late = dialWire(fn.target);
    const refused = await late.run(buildRequest(seed), 5000);
    late.close();
    assert.equal(refused.ok, false, 'a new connection after SIGTERM was served');
    if (!refused.ok)
      assert.equal(refused.code, grpc.status.UNAVAILABLE, `${grpc.status[refused.code]}: ${refused.details}`);
    assert.ok(alive(fn), 'still running: the held calls keep it');
    assert.equal(aws.calls, HELD, 'no held call was abandoned or retried');

    // AWS answers (with an error: the function turns it into a warning and still answers).
    aws.release();
    /** Every call answered soundly, and about its own request: `own` names what its answer must contain. */
    const check = async (
      what: string,
      items: Array<{ req: RunFunctionRequest; out: Promise<Outcome> }>,
      own: (i: number) => [string, unknown],
    ) => {
      for (const [i, { req, out }] of items.entries()) {
        const o = await out;
        assert.ok(o.ok, o.ok ? '' : `${what} ${i} failed: ${grpc.status[o.code]}: ${o.details}`);
        assert.equal(fatalOf(o.rsp), undefined, `${what} ${i}: ${fatalOf(o.rsp)?.message}`);
        assert.deepEqual(answerProblems(asReceived(req), o.rsp, { wellFormed: true }), [], `${what} ${i}`);
        const [key, name] = own(i);
        assert.equal(
          field(o.rsp.desired?.resources[key]?.resource, 'metadata', 'name'),
          name,
          `${what} ${i} answers another request`,
        );
      }
    };
    await check('held AWS call', held, (i) => ['rds-instance', `held-${i}-db`]);
    for (const [i, { out }] of held.entries()) {
      const o = await out;
      assert.ok(
        o.ok && o.rsp.results.some((r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'AwsUnavailable'),
        `held call ${i} has no AWS warning: it did not wait for AWS`,
      );
    }
    await check('large call', large, (i) => ['deployment-blue', `large-${i}-blue`]);
    await check('ordinary call', ordinary, () => ['deployment-blue', 'my-widget-blue']);

    const code = await fn.stop(15_000);
    assert.equal(code, 0, `exit code ${code}\n${fn.logs().slice(-3000)}`);
    assert.match(fn.logs(), /"msg":"stopped"/);
    assert.equal(stderr(), '');
  });
});
