// Proves the schema validator in test/support can both fail and pass, against
// the real published schemas in ../shared/crds beside the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { celRules, hasSchema, validateObject } from '../support/schemas.js';
import type { SchemaProblem } from '../support/schemas.js';

function deployment(): Record<string, any> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', labels: { 'app.kubernetes.io/name': 'web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'web',
              image: 'nginx:1.27',
              ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
              resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: 256000000 } },
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
            },
          ],
        },
      },
    },
  };
}

function rdsInstance(): Record<string, any> {
  return {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'Instance',
    metadata: { name: 'db', namespace: 'team-a' },
    spec: {
      forProvider: { region: 'eu-west-1', engine: 'postgres', instanceClass: 'db.t3.micro', allocatedStorage: 20 },
    },
  };
}

function has(problems: SchemaProblem[], path: string, message: RegExp): boolean {
  return problems.some((p) => p.path === path && message.test(p.message));
}

test('a valid apps/v1 Deployment passes', () => {
  assert.deepEqual(validateObject(deployment()), []);
});

test('an unknown field in a container is reported with its path', () => {
  const d = deployment();
  d.spec.template.spec.containers[0].foo = 'bar';
  const problems = validateObject(d);
  assert.deepEqual(problems, [{ path: 'spec.template.spec.containers[0].foo', message: 'unknown field "foo"' }]);
});

test('an unknown field in metadata is reported', () => {
  const d = deployment();
  d.metadata.label = { app: 'web' };
  assert.ok(has(validateObject(d), 'metadata.label', /unknown field "label"/));
});

test('a wrong type is reported: replicas as a string', () => {
  const d = deployment();
  d.spec.replicas = '3';
  const problems = validateObject(d);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.ok(has(problems, 'spec.replicas', /must be integer/), JSON.stringify(problems));
});

test('a missing required field is reported', () => {
  const d = deployment();
  delete d.spec.selector;
  assert.ok(has(validateObject(d), 'spec.selector', /missing required field "selector"/));
});

test('a malformed quantity is reported', () => {
  const d = deployment();
  d.spec.template.spec.containers[0].resources.requests.memory = '128 megs';
  assert.ok(has(validateObject(d), 'spec.template.spec.containers[0].resources.requests.memory', /pattern/));
});

test('Service targetPort accepts int-or-string both ways', () => {
  for (const targetPort of ['http', 8080]) {
    const svc = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort }] },
    };
    assert.deepEqual(validateObject(svc), [], `targetPort ${JSON.stringify(targetPort)}`);
  }
  const bad = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { ports: [{ port: 80, targetPort: true }] },
  };
  assert.deepEqual(validateObject(bad), [
    { path: 'spec.ports[0].targetPort', message: 'must be integer or string (got boolean true)' },
  ]);
});

test('an rds.aws.m.upbound.io/v1beta1 Instance validates', () => {
  assert.deepEqual(validateObject(rdsInstance()), []);
  // instanceClass is required by a CEL rule, which is listed rather than run.
  assert.ok(celRules('rds.aws.m.upbound.io/v1beta1', 'Instance').some((r) => r.rule.includes('instanceClass')));
});

test('an unknown forProvider field on the RDS Instance is reported', () => {
  const db = rdsInstance();
  db.spec.forProvider.storageSize = 20;
  assert.deepEqual(validateObject(db), [
    { path: 'spec.forProvider.storageSize', message: 'unknown field "storageSize"' },
  ]);
});

test('the RDS Instance requires forProvider.region', () => {
  const db = rdsInstance();
  delete db.spec.forProvider.region;
  assert.ok(has(validateObject(db), 'spec.forProvider.region', /missing required field/));
});

test('a postgresql.cnpg.io/v1 Cluster passes, and its minimum is enforced', () => {
  const cluster = {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: { name: 'pg', namespace: 'team-a' },
    spec: { instances: 2, storage: { size: '20Gi' } },
  };
  assert.deepEqual(validateObject(cluster), []);
  assert.ok(
    has(validateObject({ ...cluster, spec: { instances: 0, storage: { size: '20Gi' } } }), 'spec.instances', />= 1/),
  );
});

test('a kubernetes.crossplane.io/v1alpha2 Object with an arbitrary embedded manifest passes', () => {
  const obj = {
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Object',
    metadata: { name: 'cm' },
    spec: {
      forProvider: {
        manifest: {
          apiVersion: 'example.org/v1',
          kind: 'Anything',
          metadata: { name: 'x', namespace: 'default' },
          whatever: { nested: [1, 'two', { three: true }] },
        },
      },
      providerConfigRef: { name: 'default' },
    },
  };
  assert.deepEqual(validateObject(obj), []);
  // The server still requires kind on an embedded resource.
  const { kind: _kind, ...noKind } = obj.spec.forProvider.manifest;
  const bad = { ...obj, spec: { ...obj.spec, forProvider: { manifest: noKind } } };
  assert.ok(has(validateObject(bad), 'spec.forProvider.manifest.kind', /missing required field/));
});

test('hasSchema knows built-ins and CRDs, and unknown kinds throw', () => {
  assert.equal(hasSchema('apps/v1', 'Deployment'), true);
  assert.equal(hasSchema('v1', 'ConfigMap'), true);
  assert.equal(hasSchema('postgresql.cnpg.io/v1', 'Cluster'), true);
  assert.equal(hasSchema('example.org/v1', 'Nope'), false);
  assert.throws(() => validateObject({ apiVersion: 'example.org/v1', kind: 'Nope' }), /no schema known/);
});
