// Secrets through every path of the real server, with --debug logging on:
// env values of Widgets (valid and invalid specs), passwords in observed
// Secrets of Databases (valid specs and refused changes, both modes), the RDS
// provider's connection Secret as a required resource and as connection
// details, AWS keys and a session token in the step's credentials (with an
// AWS endpoint whose errors quote them back), and Secrets nobody asked for.
//
// Then every log line (stdout and stderr), result, condition, status and
// composed object is scanned for them, whole, base64-encoded, URL-encoded
// and as 16-character fragments. The only places a secret may be are the
// data of the composed Secrets (the generated or kept password: that is the
// product) and the container env the user wrote into the spec.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Ready,
  type RunFunctionRequest,
  type Resources,
  type RunFunctionResponse,
  Severity,
} from '@crossplane-org/function-sdk-typescript';
import { STORE_CREDENTIALS } from '../../src/blueprints/database/backups.js';
import { isObj, type Obj } from '../../src/kube.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { type FakeAws, startFakeAws } from '../support/fake-aws.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { fatalOf, wrapped } from '../support/invariants.js';
import { dialWire, type WireClient } from '../support/wire.js';

const ENV_URL_PASSWORD = 'EnvUrlPw-Kd93mQa71';
const S = {
  envToken: 'sk_live_51EnvTokenQz8Lm3Vt7Xw2',
  envUrl: `postgresql://admin:${ENV_URL_PASSWORD}@db.internal:5432/prod`,
  envUrlPassword: ENV_URL_PASSWORD,
  dbPassword: 'DbPassw0rd-Hx72kLq9Zt4Wm',
  rdsPassword: 'RdsMaster-Pw81Jd5Nq2Vy6',
  otherPassword: 'Unrelated-Secret-Rb47Tc9Wx3',
  awsKeyId: 'AKIAZ7QX4EXAMPLE9K2M',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYz4Sx9Q2kLmPb',
  sessionToken: 'FwoGZXIvYXdzEXAMPLEsessionTOKEN0f3Kq8Lz5Wn2Rt',
  // The object store's keys, in the Secret a Database's backups name (read as a required resource).
  storeKeyId: 'AKIASTORE7Q4EXAMPLE3W',
  storeSecret: 'StoreSecret/Kq82Lm5Nv7Xb3Zw9Pt4Yr6',
} as const;

/** Shorter than this, a piece of a secret could be a word; from this length on it is a leak. */
const FRAGMENT = 10;

/**
 * Every form a secret could leak in: itself, base64, URL-encoded, and any
 * 10 characters of it (a cut-off secret is still a leak). The connection
 * string is looked for whole; its password, like every other secret, in pieces.
 */
function leaksIn(text: string): string[] {
  const found: string[] = [];
  for (const [name, secret] of Object.entries(S)) {
    const forms = [secret, Buffer.from(secret).toString('base64'), encodeURIComponent(secret)];
    if (forms.some((f) => text.includes(f))) {
      found.push(name);
      continue;
    }
    if (name === 'envUrl') continue;
    for (let i = 0; i + FRAGMENT <= secret.length; i++) {
      if (text.includes(secret.slice(i, i + FRAGMENT))) {
        found.push(`${name} (fragment "${secret.slice(i, i + FRAGMENT)}")`);
        break;
      }
    }
  }
  return found;
}

const secretData = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
const annotate = (key: string, obj: Obj): Obj => ({
  ...obj,
  metadata: { ...((obj['metadata'] as Obj) ?? {}), annotations: { [RESOURCE_NAME_ANNOTATION]: key } },
});

/** What of an answer must be free of secrets: all of it but composed Secrets' data and the env values the user wrote. */
function scannable(rsp: RunFunctionResponse, userEnv: readonly string[]): string {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip).filter((v) => v !== STRIPPED);
    if (!isObj(value)) return value;
    if (typeof value['name'] === 'string' && typeof value['value'] === 'string' && userEnv.includes(value['value']))
      return STRIPPED;
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) out[k] = strip(v);
    return out;
  };
  const resources = Object.fromEntries(
    Object.entries(rsp.desired?.resources ?? {}).map(([key, res]) => {
      const obj = structuredClone((res.resource ?? {}) as Obj);
      const inner = wrapped(obj);
      if (inner['kind'] === 'Secret') delete inner['data'];
      return [key, strip(obj)];
    }),
  );
  return JSON.stringify({
    results: rsp.results,
    conditions: rsp.conditions,
    composite: rsp.desired?.composite,
    resources,
    requirements: rsp.requirements,
    meta: rsp.meta,
  });
}
const STRIPPED = Symbol('stripped');

function widget(spec: unknown): RunFunctionRequest {
  return buildRequest({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'shop', namespace: 'team-a', uid: 'uid-shop' },
    spec,
  });
}

/** An in-cluster Database that exists: its credentials and connection Secrets hold dbPassword. */
function clusterDatabase(spec: Obj, claim = false): RunFunctionRequest {
  const xr: Obj = claim
    ? {
        apiVersion: 'example.com/v1',
        kind: 'XDatabase',
        metadata: {
          name: 'orders-x7k2p',
          uid: 'uid-orders',
          labels: { 'crossplane.io/claim-name': 'orders', 'crossplane.io/claim-namespace': 'team-a' },
        },
        spec,
      }
    : {
        apiVersion: 'example.com/v1',
        kind: 'Database',
        metadata: { name: 'orders', namespace: 'team-a', uid: 'uid-orders' },
        spec,
      };
  const secrets: Array<[string, Obj]> = [
    [
      'credentials',
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'orders-db-credentials', namespace: 'team-a' },
        data: secretData({ username: 'app', password: S.dbPassword }),
      },
    ],
    [
      'connection',
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'orders-db-connection', namespace: 'team-a' },
        data: secretData({
          password: S.dbPassword,
          uri: `postgresql://app:${S.dbPassword}@orders-db.team-a.svc.cluster.local:5432/orders`,
        }),
      },
    ],
  ];
  const sts: Obj = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'orders-db', namespace: 'team-a', labels: { 'function-platform.dev/engine': 'postgres' } },
    spec: {
      replicas: 1,
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '20Gi' } } } }],
    },
    status: { readyReplicas: 1, replicas: 1 },
  };
  const observed = [...secrets, ['statefulset', sts] as [string, Obj]].map(([key, obj]) =>
    annotate(
      key,
      claim
        ? {
            apiVersion: 'kubernetes.crossplane.io/v1alpha2',
            kind: 'Object',
            metadata: { name: `x-${key}` },
            spec: { forProvider: { manifest: obj } },
            status: { atProvider: { manifest: { ...obj, data: undefined } } },
          }
        : obj,
    ),
  );
  return buildRequest(xr, observed);
}

/** A Database on AWS that exists, with the provider's connection Secret required, connection details, and step credentials. */
function awsDatabase(spec: Obj, endpoint: string, exists = true): RunFunctionRequest {
  const xr: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'Database',
    metadata: { name: 'ledger', namespace: 'team-a', uid: 'uid-ledger' },
    spec,
  };
  const instance = annotate('rds-instance', {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'Instance',
    metadata: { name: 'ledger-db', namespace: 'team-a', labels: { 'function-platform.dev/engine': 'postgres' } },
    spec: { forProvider: { engine: 'postgres', engineVersion: '17', allocatedStorage: 20 } },
    status: {
      atProvider: { address: 'ledger.abc.eu-west-1.rds.amazonaws.com', port: 5432, status: 'available' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }],
    },
  });
  const bucket = annotate('backup-bucket', {
    apiVersion: 's3.aws.m.upbound.io/v1beta1',
    kind: 'Bucket',
    metadata: { name: 'ledger-db-backups' },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const providerSecret: Obj = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'ledger-db-rds', namespace: 'team-a' },
    data: secretData({
      username: 'app',
      password: S.rdsPassword,
      address: 'ledger.abc.eu-west-1.rds.amazonaws.com',
      port: '5432',
      endpoint: `postgresql://app:${S.rdsPassword}@ledger:5432`,
    }),
  };
  const credentials = [
    {
      metadata: { name: 'aws' },
      stringData: {
        aws_access_key_id: S.awsKeyId,
        aws_secret_access_key: S.awsSecret,
        aws_session_token: S.sessionToken,
        endpoint,
      },
    },
    { metadata: { name: 'db' }, stringData: { password: S.otherPassword } },
  ];
  const required = (secret: Obj) => ({
    items: [{ resource: secret, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED }],
  });
  const req = buildRequest(xr, exists ? [instance, bucket] : [], credentials as Obj[], undefined, {
    'rds-connection': required(providerSecret),
    unrelated: required({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'x' },
      data: secretData({ password: S.otherPassword }),
    }),
  });
  req.extraResources = { 'rds-connection': required(providerSecret) };
  // Crossplane passes a composed resource's connection details along with it, and the XR's own.
  if (exists)
    req.observed!.resources['rds-instance']!.connectionDetails = {
      password: Buffer.from(S.rdsPassword),
      username: Buffer.from('app'),
    };
  req.observed!.composite!.connectionDetails = {
    password: Buffer.from(S.rdsPassword),
    token: Buffer.from(S.sessionToken),
  };
  return req;
}

/** The object store's credentials Secret, as a cluster holds it, for every Database that names one. */
function storeSecret(): Resources {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'backup-store', namespace: 'team-a' },
    data: { AWS_ACCESS_KEY_ID: b64(S.storeKeyId), AWS_SECRET_ACCESS_KEY: b64(S.storeSecret) },
  };
  return { items: [{ resource: secret, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED }] };
}
let storeAnswered = 0;
const STORE = {
  bucket: 'team-a-backups',
  region: 'eu-west-1',
  credentialsSecretRef: { name: 'backup-store' },
};

describe('secrets never leak', () => {
  let aws: FakeAws;
  let fn: FunctionProcess;
  let client: WireClient;
  const answers: Array<{ what: string; rsp: RunFunctionResponse; userEnv: string[] }> = [];

  before(async () => {
    // An AWS that denies everything and quotes the caller's credentials back. In us-east-2 its first sentence
    // is long enough that the function's 200-character cut falls in the middle of the secret key.
    aws = await startFakeAws({
      message: ({ headers }) => {
        const auth = String(headers['authorization'] ?? '');
        const head = `Request ${auth.slice(0, 60)} with token ${String(headers['x-amz-security-token'])} denied for key ${S.awsKeyId} `;
        if (auth.includes('/us-east-2/'))
          return `${head}${'x'.repeat(Math.max(0, 185 - head.length))}${S.awsSecret} and more`;
        return `Denied: secret ${S.awsSecret}, key ${S.awsKeyId}, token ${String(headers['x-amz-security-token'])}. Go away.`;
      },
    });
    fn = await startFunction({ insecure: true, args: ['--debug'] });
    client = dialWire(fn.target);
  });
  after(async () => {
    client.close();
    await fn.stop();
    await aws.close();
  });

  /**
   * One reconcile as Crossplane runs it: called again with an (empty) answer for each resource the function
   * requires, until it asks for nothing new; every answer is scanned, and the last is what Crossplane acts on
   * (its events: the server says them only there).
   */
  async function call(what: string, req: RunFunctionRequest, userEnv: string[] = []): Promise<RunFunctionResponse> {
    let current = req;
    for (let i = 0; ; i++) {
      const out = await client.run(current, 30_000);
      assert.ok(out.ok, out.ok ? '' : `${what}: ${out.details}`);
      answers.push({ what, rsp: out.rsp, userEnv });
      const asked = Object.keys(out.rsp.requirements?.resources ?? {});
      const answered = { ...(current.requiredResources ?? {}) };
      const missing = asked.filter((name) => !(name in answered));
      if (missing.length === 0) return out.rsp;
      assert.ok(i < 5, `${what}: its requirements never settle (still asking for ${missing.join(', ')})`);
      // The store's credentials Secret is answered with real-looking keys: they must show nowhere.
      for (const name of missing) answered[name] = name === STORE_CREDENTIALS ? storeSecret() : { items: [] };
      if (missing.includes(STORE_CREDENTIALS)) storeAnswered++;
      current = { ...current, requiredResources: answered };
    }
  }

  function assertClean(what: string, rsp: RunFunctionResponse, userEnv: string[] = []) {
    assert.deepEqual(
      leaksIn(scannable(rsp, userEnv)),
      [],
      `${what}: a secret in the answer outside Secret data\n${scannable(rsp, userEnv).slice(0, 3000)}`,
    );
  }

  test('Widget env: in the Deployment the user asked for, nowhere else', async () => {
    const env = { API_TOKEN: S.envToken, DATABASE_URL: S.envUrl };
    const rsp = await call('valid Widget', widget({ size: 2, env }), Object.values(env));
    assert.equal(fatalOf(rsp), undefined);
    assert.ok(
      JSON.stringify(rsp.desired?.resources['deployment-blue']).includes(S.envToken),
      'the env value reached the Deployment',
    );
    assertClean('valid Widget', rsp, Object.values(env));
  });

  test('invalid Widget specs with secrets in env values: Fatal, and the message names the field, not the value', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['an invalid env name', { env: { 'BAD-NAME': S.envToken } }, /spec\.env\["BAD-NAME"\]/],
      [
        'an env value too long',
        { env: { API_TOKEN: `${S.envToken}${'x'.repeat(40_000)}` } },
        /spec\.env\.API_TOKEN is too long/,
      ],
      [
        'an env value that is an object',
        { env: { API_TOKEN: { value: S.envToken } } },
        /spec\.env\.API_TOKEN is an object/,
      ],
      ['env as a Kubernetes env list', { env: [{ name: 'DATABASE_URL', value: S.envUrl }] }, /spec\.env is a list/],
      [
        'too many env entries',
        { env: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`K${i}`, S.envToken])) },
        /spec\.env has too many entries/,
      ],
      [
        'other errors beside secret env values',
        { size: 0, color: 'Blue', env: { 'NOT OK': S.envUrl, OK: S.envToken } },
        /spec\.size is 0/,
      ],
    ];
    for (const [what, spec, message] of cases) {
      const rsp = await call(what, widget(spec));
      assert.match(fatalOf(rsp)?.message ?? '(no Fatal result)', message, what);
      assertClean(what, rsp);
    }
  });

  test('an env given as one string, or an env value given as a number, is not echoed in the error', async () => {
    // src/spec/validate.ts shows the offending value in every schema error; under spec.env that value is a secret.
    const cases: Array<[string, unknown]> = [
      ['env as one string', { env: `DATABASE_URL=${S.envUrl}` }],
      ['an env value that is a number (an unquoted PIN in YAML)', { env: { API_PIN: 4_829_137_305_118_264 } }],
    ];
    const leaks: string[] = [];
    for (const [what, spec] of cases) {
      const rsp = await call(what, widget(spec));
      assert.ok(fatalOf(rsp), `${what}: Fatal`);
      const message = fatalOf(rsp)!.message;
      if (leaksIn(message).length > 0 || message.includes('4829137305118264')) leaks.push(`${what}: "${message}"`);
    }
    assert.deepEqual(leaks, [], 'env values echoed in Fatal messages (events and conditions on the XR and claim)');
  });

  test('in-cluster Database passwords: kept in its Secrets, nowhere else, also when a change is refused', async () => {
    const cases: Array<[string, Obj, boolean, boolean]> = [
      ['a valid spec', { engine: 'postgres', storageGB: 20 }, false, false],
      ['a valid spec, claim', { engine: 'postgres', storageGB: 20 }, true, false],
      ['an engine change', { engine: 'mysql', storageGB: 20 }, false, true],
      ['shrinking storage', { engine: 'postgres', storageGB: 10 }, false, true],
      ['turning on highAvailability', { engine: 'postgres', storageGB: 20, highAvailability: true }, false, true],
      ['an invalid spec', { engine: 'postgres', storageGB: 'lots' }, true, true],
      [
        'backups to a store whose Secret holds its keys',
        { engine: 'postgres', storageGB: 20, backup: { objectStore: STORE } },
        false,
        false,
      ],
    ];
    for (const [what, spec, claim, refused] of cases) {
      const rsp = await call(what, clusterDatabase(spec, claim));
      assert.equal(Boolean(fatalOf(rsp)), refused, `${what}: ${fatalOf(rsp)?.message ?? 'not refused'}`);
      if (!refused) {
        const connection = wrapped((rsp.desired?.resources['connection']?.resource ?? {}) as Obj);
        assert.equal(
          Buffer.from(String((connection['data'] as Obj)['password']), 'base64').toString(),
          S.dbPassword,
          `${what}: the password is kept`,
        );
      }
      assertClean(what, rsp);
    }
    assert.ok(storeAnswered > 0, "the store's Secret was asked for and answered with its keys");
  });

  test('AWS: the provider’s Secret, connection details and step credentials (with AWS errors quoting them) stay out', async () => {
    const cases: Array<[string, RunFunctionRequest, boolean]> = [
      [
        'an existing RDS Database',
        awsDatabase(
          { placement: 'aws', engine: 'postgres', version: '17', aws: { region: 'eu-west-1' } },
          aws.endpoint,
        ),
        false,
      ],
      [
        'a new RDS Database (orderable check)',
        awsDatabase({ placement: 'aws', engine: 'postgres', aws: { region: 'eu-west-1' } }, aws.endpoint, false),
        false,
      ],
      [
        'a refused change',
        awsDatabase({ placement: 'aws', engine: 'mysql', aws: { region: 'eu-west-1' } }, aws.endpoint),
        true,
      ],
    ];
    for (const [what, req, refused] of cases) {
      const rsp = await call(what, req);
      assert.equal(Boolean(fatalOf(rsp)), refused, `${what}: ${fatalOf(rsp)?.message ?? 'not refused'}`);
      if (!refused) {
        const warnings = rsp.results.filter(
          (r) => r.severity === Severity.SEVERITY_WARNING && r.reason === 'AwsUnavailable',
        );
        assert.ok(warnings.length > 0, `${what}: AWS was asked and its error reported`);
      }
      assertClean(what, rsp);
    }
    const connection = (await call('the existing one again', cases[0]![1])).desired?.resources['connection']
      ?.resource as Obj;
    assert.equal(
      Buffer.from(String((connection['data'] as Obj)['password']), 'base64').toString(),
      S.rdsPassword,
      'the provider’s password reached the connection Secret',
    );
    assert.ok(
      aws.received.some((r) => String(r.headers['authorization']).includes(S.awsKeyId)),
      'the step credentials were used',
    );
  });

  test('an AWS error quoting a credential across the 200-character cut leaves no piece of it', async () => {
    // src/aws/facts.ts cuts the error to 200 characters, then scrubs credentials: a secret the cut splits is not recognised.
    const rsp = await call(
      'AWS in us-east-2',
      awsDatabase({ placement: 'aws', engine: 'postgres', version: '17', aws: { region: 'us-east-2' } }, aws.endpoint),
    );
    const warnings = rsp.results.filter((r) => r.reason === 'AwsUnavailable').map((r) => r.message);
    assert.ok(warnings.length > 0, 'AWS was asked and its error reported');
    assert.deepEqual(leaksIn(warnings.join('\n')), [], `a piece of a credential in: ${warnings.join(' | ')}`);
  });

  test('the logs (stdout and stderr, --debug) hold none of them', () => {
    const logs = fn.logs();
    assert.match(logs, /"severity":"DEBUG"/, 'debug logging is on');
    assert.ok(answers.length >= 15);
    assert.deepEqual(leaksIn(logs), [], `secrets in the logs:\n${logs.slice(-4000)}`);
  });
});
