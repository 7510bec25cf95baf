// The server's event memory (src/events.ts): each thing said once per
// composite, Fatal results always, and a new reason starting a new story.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
  Target,
} from '@crossplane-org/function-sdk-typescript';
import { EventMemory } from '../../src/events.js';

const result = (severity: Severity, reason: string, message = `${reason} happened`) => ({
  severity,
  reason,
  message,
  target: Target.TARGET_COMPOSITE_AND_CLAIM,
});
const rsp = (...results: RunFunctionResponse['results']): RunFunctionResponse =>
  ({ results, conditions: [] }) as unknown as RunFunctionResponse;
const reasons = (r: RunFunctionResponse) => r.results.map((x) => `${x.severity}:${x.reason}`);

describe('event memory', () => {
  test('a Normal reason is said once until another reason is said', () => {
    const m = new EventMemory();
    assert.deepEqual(reasons(m.filter('u1', rsp(result(Severity.SEVERITY_NORMAL, 'RollingOut')))), [
      `${Severity.SEVERITY_NORMAL}:RollingOut`,
    ]);
    // Crossplane called again before the condition was stored, with a new count in the message.
    assert.deepEqual(
      reasons(m.filter('u1', rsp(result(Severity.SEVERITY_NORMAL, 'RollingOut', '3/42 available')))),
      [],
    );
    assert.deepEqual(reasons(m.filter('u1', rsp(result(Severity.SEVERITY_NORMAL, 'Available')))), [
      `${Severity.SEVERITY_NORMAL}:Available`,
    ]);
    assert.deepEqual(
      reasons(m.filter('u1', rsp(result(Severity.SEVERITY_NORMAL, 'RollingOut')))),
      [`${Severity.SEVERITY_NORMAL}:RollingOut`],
      'a later rollout is news again',
    );
  });

  // Found by the fuzz suite: remembering only the last Normal reason made an answer whose Ready and
  // BackupHealthy both moved say its first event again on every call.
  test('two Normal reasons in one answer are said once, and the same answer again says neither', () => {
    const m = new EventMemory();
    const both = () =>
      rsp(
        result(Severity.SEVERITY_NORMAL, 'Available'),
        result(Severity.SEVERITY_NORMAL, 'BackupsHealthy'),
        result(Severity.SEVERITY_WARNING, 'Slow'),
      );
    assert.deepEqual(reasons(m.filter('u1', both())), [
      `${Severity.SEVERITY_NORMAL}:Available`,
      `${Severity.SEVERITY_NORMAL}:BackupsHealthy`,
      `${Severity.SEVERITY_WARNING}:Slow`,
    ]);
    assert.deepEqual(reasons(m.filter('u1', both())), []);
    assert.deepEqual(
      reasons(
        m.filter(
          'u1',
          rsp(result(Severity.SEVERITY_NORMAL, 'Available'), result(Severity.SEVERITY_NORMAL, 'BackupFailing')),
        ),
      ),
      [`${Severity.SEVERITY_NORMAL}:BackupFailing`],
      'only the reason that moved is news',
    );
  });

  test('a warning is said once per message; another message is said', () => {
    const m = new EventMemory();
    const w = (msg: string) => rsp(result(Severity.SEVERITY_WARNING, 'AwsUnavailable', msg));
    assert.equal(m.filter('u1', w('timeout')).results.length, 1);
    assert.equal(m.filter('u1', w('timeout')).results.length, 0);
    assert.equal(m.filter('u1', w('403 from RDS')).results.length, 1);
  });

  test('Fatal results always pass; composites do not share memory; no uid means no memory', () => {
    const m = new EventMemory();
    const fatal = () => rsp(result(Severity.SEVERITY_FATAL, 'InvalidSpec'));
    assert.equal(m.filter('u1', fatal()).results.length, 1);
    assert.equal(m.filter('u1', fatal()).results.length, 1);
    m.filter('u1', rsp(result(Severity.SEVERITY_NORMAL, 'Available')));
    assert.equal(m.filter('u2', rsp(result(Severity.SEVERITY_NORMAL, 'Available'))).results.length, 1);
    assert.equal(m.filter(undefined, rsp(result(Severity.SEVERITY_NORMAL, 'Available'))).results.length, 1);
    assert.equal(m.filter(undefined, rsp(result(Severity.SEVERITY_NORMAL, 'Available'))).results.length, 1);
  });

  // Issue 26: a Database asks for required resources on every reconcile; the first call's results, which
  // Crossplane drops, were remembered as said, and the last call's (the ones it emits) were filtered out.
  test('only the answer Crossplane acts on counts: one asking for what the request did not answer says nothing', () => {
    const m = new EventMemory();
    const asking = (answered: boolean) => {
      const r = rsp(
        result(Severity.SEVERITY_NORMAL, 'Available'),
        result(Severity.SEVERITY_WARNING, 'NoObjectStore'),
        result(Severity.SEVERITY_FATAL, 'InvalidSpec'),
      );
      r.requirements = {
        extraResources: {},
        resources: { 'database-restores': { apiVersion: 'example.com/v1', kind: 'DatabaseRestore' } },
        schemas: {},
      } as RunFunctionResponse['requirements'];
      const req = (answered
        ? { requiredResources: { 'database-restores': { items: [] } } }
        : {}) as unknown as RunFunctionRequest;
      return m.filter('u1', r, req);
    };
    assert.deepEqual(
      reasons(asking(false)),
      [`${Severity.SEVERITY_FATAL}:InvalidSpec`],
      'a first call: only Fatal passes',
    );
    assert.deepEqual(
      reasons(asking(true)),
      [
        `${Severity.SEVERITY_NORMAL}:Available`,
        `${Severity.SEVERITY_WARNING}:NoObjectStore`,
        `${Severity.SEVERITY_FATAL}:InvalidSpec`,
      ],
      'the last call of the reconcile says it',
    );
    assert.deepEqual(reasons(asking(true)), [`${Severity.SEVERITY_FATAL}:InvalidSpec`], 'and it is said once');
    // v1 answers in extra_resources.
    const v1 = rsp(result(Severity.SEVERITY_NORMAL, 'Provisioning'));
    v1.requirements = {
      extraResources: { db: { apiVersion: 'v1', kind: 'X' } },
      resources: {},
      schemas: {},
    } as RunFunctionResponse['requirements'];
    assert.equal(
      m.filter('u2', v1, { extraResources: { db: { items: [] } } } as unknown as RunFunctionRequest).results.length,
      1,
    );
  });

  test('the memory forgets after its time', async () => {
    const m = new EventMemory({ ttlMs: 30 });
    m.filter('u1', rsp(result(Severity.SEVERITY_WARNING, 'X')));
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(m.filter('u1', rsp(result(Severity.SEVERITY_WARNING, 'X'))).results.length, 1);
  });
});
