// The local control plane's default store (npm run cluster): the Configuration
// it installs has the Database Composition name moto's store as the
// platform's default in its step's Input. Checked here without starting
// anything: the package copy it pushes, and what the function makes of that
// Input for a two-line Database.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { repoRoot } from '../../dev/infra/paths.js';
import { type ObjectStore, withPlatformStore } from '../support/control-plane.js';
import { databaseXr, fatalOf, statusOf } from '../support/database.js';

const store: ObjectStore = {
  endpoint: 'http://127.0.0.1:45123',
  region: 'us-east-1',
  bucket: 'team-a-backups',
  accessKeyId: 'local-object-store',
  secretAccessKey: 'local-object-store-secret',
  secretFile: '/dev/null',
  endpointFile: '/dev/null',
};

describe("the local control plane's platform store", () => {
  for (const config of ['configuration', 'configuration-claims'])
    test(`${config}: the Database Composition's Input names the store; a two-line Database backs up to it`, () => {
      const root = withPlatformStore(
        join(repoRoot, 'package', config),
        join(mkdtempSync(join(tmpdir(), 'fp-store-')), config),
        store,
      );
      const composition = parse(readFileSync(join(root, 'apis', 'database', 'composition.yaml'), 'utf8')) as Obj;
      const step = ((composition['spec'] as Obj)['pipeline'] as Obj[])[0]!;
      assert.equal((step['functionRef'] as Obj)['name'], 'function-platform');
      const input = step['input'] as Obj;
      // The package's own files are untouched.
      const original = parse(
        readFileSync(join(repoRoot, 'package', config, 'apis', 'database', 'composition.yaml'), 'utf8'),
      ) as Obj;
      assert.equal(((original['spec'] as Obj)['pipeline'] as Obj[])[0]!['input'], undefined);

      const twoLine = databaseXr({ engine: 'postgres', storageGB: 20 }, { bare: true });
      const rsp = runFunction(buildRequest(twoLine, [], [], input));
      assert.equal(fatalOf(rsp), undefined, fatalOf(rsp)?.message);
      assert.deepEqual((statusOf(rsp)['backup'] as Obj)['objectStore'], {
        bucket: 'team-a-backups',
        region: 'us-east-1',
        endpoint: 'http://127.0.0.1:45123',
        prefix: 'databases',
        credentialsSecretRef: { name: 'backup-store' },
        source: 'platform',
      });
      assert.notEqual(rsp.conditions.find((c) => c.type === 'BackupHealthy')?.reason, 'NoObjectStore');
    });
});
