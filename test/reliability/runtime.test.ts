// The runtime as Crossplane runs it, beyond what test/package checks of the
// Dockerfile: the server runs as uid/gid 2000 with no HOME, no TMPDIR and no
// PATH (no shell to find), serves Widgets and Databases of every kind —
// including the AWS path, whose SDK loads lazily — and writes no file
// anywhere, so a read-only root filesystem is enough. Nothing reachable
// from the entry point can start a process.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { type FakeAws, startFakeAws } from '../support/fake-aws.js';
import { fatalOf } from '../support/invariants.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { canSwitchUser, CROSSPLANE_UID, type Started, startWith } from '../support/run-to-exit.js';
import { dialWire, type WireClient } from '../support/wire.js';

/** Where an unprivileged process could write at all on this machine. */
const WRITABLE = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock'];

describe('the runtime as Crossplane runs it', () => {
  test('nothing reachable from dist/main.js imports child_process: no shell or program is needed at run time', () => {
    const seen = new Set<string>();
    const offenders: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(
        /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm,
      )) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        if (/^(node:)?child_process$/.test(spec)) offenders.push(file);
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      }
    };
    visit(join(repoRoot, 'dist', 'main.js'));
    assert.ok(
      seen.has(join(repoRoot, 'dist', 'src', 'server.js')),
      `the walk found the server: ${[...seen].join(', ')}`,
    );
    assert.deepEqual(offenders, []);
  });

  describe(`as uid ${CROSSPLANE_UID}, with nothing writable`, {
    skip: canSwitchUser ? false : 'needs root to run the function as another user',
  }, () => {
    let aws: FakeAws;
    let fn: Started;
    let client: WireClient;
    let marker: string;
    before(async () => {
      marker = join(tmpdir(), `fp-runtime-marker-${process.pid}`);
      writeFileSync(marker, '');
      aws = await startFakeAws();
      fn = await startWith(['--address', '127.0.0.1:0', '--insecure', '--debug'], {
        uid: CROSSPLANE_UID,
        gid: CROSSPLANE_UID,
        // What a distroless image gives it: no shell, no home, no temp dir.
        env: { HOME: '/nonexistent', TMPDIR: '/nonexistent', PATH: '/nonexistent', NODE_ENV: 'production' },
      });
      client = dialWire(`127.0.0.1:${fn.port}`);
    });
    after(async () => {
      client?.close();
      await fn?.stop();
      await aws?.close();
    });

    test('serves every kind of call, starts no process, writes no file, exits 0', async () => {
      const ex = (p: string) => readYamlObjects(join(repoRoot, 'examples', p));
      const credentials = [
        {
          metadata: { name: 'aws' },
          stringData: {
            aws_access_key_id: 'AKIAFAKE0000000000',
            aws_secret_access_key: 'fake',
            endpoint: aws.endpoint,
          },
        },
      ] as Obj[];
      const calls = [
        buildRequest(ex('widget/seed.yaml')[0]!, ex('widget/observed/ready.yaml')),
        buildRequest(ex('database/cluster.yaml')[0]!),
        buildRequest(ex('database/cluster-ha.yaml')[0]!),
        buildRequest(ex('database/aws.yaml')[0]!, [], credentials),
        buildRequest({
          ...ex('widget/seed.yaml')[0]!,
          kind: 'XWidget',
          metadata: {
            name: 'w-x1',
            labels: { 'crossplane.io/claim-name': 'w', 'crossplane.io/claim-namespace': 'team-a' },
          },
        }),
      ];
      for (const [i, req] of calls.entries()) {
        const out = await client.run(req, 20_000);
        assert.ok(out.ok, out.ok ? '' : `call ${i}: ${out.details}`);
        assert.equal(fatalOf(out.rsp), undefined, `call ${i}: ${fatalOf(out.rsp)?.message}`);
      }
      assert.ok(aws.calls > 0, 'the AWS path ran (its SDK loaded as uid 2000 without HOME)');
      const children = readdirSync(`/proc/${fn.pid}/task`).flatMap((t) =>
        readFileSync(`/proc/${fn.pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean),
      );
      assert.deepEqual(children, [], 'the server started processes');
      assert.equal(await fn.stop(), 0, fn.logs());
      const written = execFileSync('find', [...WRITABLE, '-xdev', '-uid', String(CROSSPLANE_UID), '-newer', marker], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      assert.equal(written, '', 'the function wrote files');
      assert.doesNotMatch(fn.logs(), /EACCES|EROFS|ENOENT|permission denied/i);
    });
  });
});
