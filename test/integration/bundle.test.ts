// The bundled build (dist/bundle/main.mjs, scripts/bundle.mjs) is the same
// function: started as a process beside dist/main.js, it answers every example
// scenario, a later pipeline step's call and a request with large observed
// state exactly as dist/main.js does (a generated password aside), and stops
// cleanly on SIGTERM.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import type { Obj } from '../../src/kube.js';
import { answer, buildRequest, readYamlObjects } from '../../src/render.js';
import { runFunction } from '../../src/function.js';
import { type FunctionProcess, repoRoot, startFunction } from '../support/function-process.js';
import { fingerprint } from '../support/invariants.js';
import { dialWire, type WireClient } from '../support/wire.js';

/** Every example scenario's request, with its requirements answered, as Crossplane would send it. */
function scenarioRequests(): Array<{ what: string; req: RunFunctionRequest }> {
  const ex = (p: string) => join(repoRoot, 'examples', p);
  const scenarios = parse(readFileSync(ex('scenarios.yaml'), 'utf8')) as Array<{
    xr: string;
    observed: string[];
    required?: string;
  }>;
  return scenarios.flatMap((s) =>
    s.observed.map((o) => {
      let req = buildRequest(readYamlObjects(ex(s.xr))[0]!, readYamlObjects(ex(o)));
      const first = runFunction(req);
      if (first.requirements)
        req = {
          ...req,
          requiredResources: answer(first.requirements, s.required ? readYamlObjects(ex(s.required)) : []),
        };
      return { what: `${s.xr} + ${o}`, req };
    }),
  );
}

describe('the bundled build answers as dist/main.js', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bundle-test-'));
  // One time for both processes: backups count schedule slots from the clock.
  const clock = join(dir, 'clock');
  writeFileSync(clock, '2026-06-01T12:00:00Z');
  const env = { FUNCTION_PLATFORM_CLOCK_FILE: clock, FUNCTION_PLATFORM_AWS_TIMEOUT_MS: '3000' };
  let main: FunctionProcess;
  let bundle: FunctionProcess;
  let toMain: WireClient;
  let toBundle: WireClient;
  before(async () => {
    main = await startFunction({ env });
    bundle = await startFunction({ env, entry: join(repoRoot, 'dist', 'bundle', 'main.mjs') });
    toMain = dialWire(main.target);
    toBundle = dialWire(bundle.target);
  });
  after(async () => {
    toMain.close();
    toBundle.close();
    assert.equal(await bundle.stop(), 0, 'SIGTERM ends the bundled server cleanly');
    await main.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const same = async (what: string, req: RunFunctionRequest) => {
    const [a, b] = await Promise.all([toMain.run(req), toBundle.run(req)]);
    assert.ok(a.ok && b.ok, `${what}: a call failed`);
    assert.equal(fingerprint(req, b.rsp), fingerprint(req, a.rsp), `${what}: the bundle answers differently`);
    return a.rsp;
  };

  test('every example scenario, and each as a later step of a pipeline', async () => {
    const cases = scenarioRequests();
    assert.ok(cases.length >= 20);
    for (const { what, req } of cases) {
      const rsp = await same(what, req);
      await same(`${what} as a later step`, { ...req, desired: rsp.desired });
    }
  });

  test('a Database on AWS with step credentials: the AWS SDK loads (a chunk of its own in the bundle) and fails alike', async () => {
    const ex = (p: string) => join(repoRoot, 'examples', p);
    // Nothing listens on port 1: both servers build their AWS clients, call, and warn the same way.
    const credentials: Obj = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'aws' },
      stringData: {
        aws_access_key_id: 'AKIATEST000000000000',
        aws_secret_access_key: 'not-a-secret',
        endpoint: 'http://127.0.0.1:1',
      },
    };
    let req = buildRequest(
      readYamlObjects(ex('database/aws.yaml'))[0]!,
      readYamlObjects(ex('database/observed/aws-ready.yaml')),
      [credentials],
    );
    const first = runFunction(req);
    req = {
      ...req,
      requiredResources: answer(first.requirements, readYamlObjects(ex('database/required/rds-connection.yaml'))),
    };
    const rsp = await same('AWS with credentials', req);
    assert.ok(
      rsp.results.some((r) => /AWS/.test(r.message)),
      'the AWS path ran and said so',
    );
  });

  test('a request with large observed state (decoded on first read)', async () => {
    const req = buildRequest(
      readYamlObjects(join(repoRoot, 'examples/widget/color-change.yaml'))[0]!,
      readYamlObjects(join(repoRoot, 'examples/widget/observed/cutover-green-ready.yaml')),
    );
    const [key] = Object.keys(req.observed!.resources);
    const observed = req.observed!.resources[key!]!;
    const resource = observed.resource as Obj;
    const rows = Array.from({ length: 5000 }, (_, i) => ({ name: `replica-set-${i}`, ready: i % 2 === 0 }));
    const big = {
      ...req,
      observed: {
        ...req.observed!,
        resources: {
          ...req.observed!.resources,
          [key!]: { ...observed, resource: { ...resource, status: { ...(resource['status'] as Obj), rows } } },
        },
      },
    };
    await same('large observed state', big);
  });
});
