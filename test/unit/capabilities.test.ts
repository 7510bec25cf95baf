// What the caller says it can do (src/capabilities.ts): a caller that lists
// its capabilities without required resources or custom conditions is told
// what that costs; one that lists none (a Crossplane before v2.2) is not
// second-guessed; Crossplane v2.2's full list says nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Capability, type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import { buildRequest } from '../../src/render.js';
import { databaseXr } from '../support/database.js';

const ALL = [
  Capability.CAPABILITY_CAPABILITIES,
  Capability.CAPABILITY_REQUIRED_RESOURCES,
  Capability.CAPABILITY_CREDENTIALS,
  Capability.CAPABILITY_CONDITIONS,
  Capability.CAPABILITY_REQUIRED_SCHEMAS,
];

function callWith(capabilities: Capability[]): RunFunctionResponse {
  const req = buildRequest(databaseXr({ engine: 'postgres', storageGB: 20 }), [], []);
  req.meta = { tag: 'test', capabilities };
  return runFunction(req);
}

const missing = (rsp: RunFunctionResponse) =>
  rsp.results.filter((r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'CapabilityMissing');

describe('capabilities the caller lists', () => {
  test("Crossplane v2.2's list, and no list at all: nothing said", () => {
    assert.deepEqual(missing(callWith(ALL)), []);
    assert.deepEqual(missing(callWith([])), [], 'a caller that lists nothing may predate the list');
  });

  test('a list without required resources or conditions: a warning for each, naming what it costs', () => {
    const rsp = callWith([Capability.CAPABILITY_CAPABILITIES, Capability.CAPABILITY_CREDENTIALS]);
    // A Database asks for what it reads (its backups, restores) and sets its own conditions on every call.
    assert.ok(rsp.requirements, 'the Database asked for required resources');
    const said = missing(rsp).map((r) => r.message ?? '');
    assert.equal(said.length, 2);
    assert.match(said[0]!, /does not answer required resources .* waits for it; Crossplane answers them since v1\.15/);
    assert.match(said[1]!, /does not take custom conditions .*BackupHealthy are not shown/);
    // Nothing else changes: what is composed is what a full caller gets.
    assert.deepEqual(Object.keys(rsp.desired!.resources).sort(), Object.keys(callWith(ALL).desired!.resources).sort());
  });
});
