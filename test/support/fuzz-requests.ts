// Requests to throw at the function: what Crossplane would send (specs valid
// and not, observed states reached by earlier calls with whatever statuses
// controllers report, required resources answered or not), the same damaged
// (wrong types, huge strings, deep nesting, missing XR, garbage Struct
// values, unknown kinds), and bytes no client would encode.
//
// Observed states are made the way a cluster makes them: earlier specs run
// through the function in this process, their desired state applied as
// Crossplane would (omitted resources deleted) and given statuses.
import fc from 'fast-check';
import {
  Ready,
  RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
  Status,
} from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import { isObj, num, record, type Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { applyDesired, healthyStatus } from './observed-state.js';

export interface FuzzCase {
  /** What kind of case this is, for counts and failure messages. */
  label: string;
  /** A request Crossplane could send: names, kinds and shapes are real, only values vary. */
  wellFormed: boolean;
  request?: RunFunctionRequest;
  /** Bytes sent as the request message instead of an encoded request. */
  raw?: Uint8Array;
}

// ------------------------------------------------------------ garbage values

const weirdKeys = fc.constantFrom(
  '',
  ' ',
  '__proto__',
  'constructor',
  'toString',
  'a.b/c',
  'spec',
  'ünïcødé',
  '\u0000',
  '😀',
  'x'.repeat(300),
);
const weirdStrings = fc.constantFrom(
  '',
  ' ',
  'null',
  'true',
  '0',
  '-1',
  '1e309',
  'NaN',
  '\u0000',
  '\uD800',
  '😀'.repeat(5),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a hostile string, on purpose
  '${jndi:ldap://x}',
  '<script>',
  "'; DROP TABLE",
  '../../etc/passwd',
  'blue\n',
  'a'.repeat(100),
);

/** Any value a google.protobuf.Struct can carry, biased towards the awkward ones. */
export const structValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.constantFrom(
      0,
      -0,
      1,
      -1,
      2 ** 53 + 1,
      1e308,
      -1e308,
      Number.MAX_VALUE,
      Number.MIN_VALUE,
      NaN,
      Infinity,
      -Infinity,
      0.5,
      1e-7,
    ),
    fc.integer(),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    weirdStrings,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), weirdKeys), tie('value'), {
      maxKeys: 4,
      noNullPrototype: true,
    }),
  ),
})).value;

/** A string of 1 Ki to 1 Mi characters (mostly up to 256 Ki), of one repeated unit: cheap to make, expensive to handle badly. */
export const hugeString: fc.Arbitrary<string> = fc
  .record({
    unit: fc.constantFrom('a', 'é', '😀', '-', ' ', 'ab1.', 'Z', '\\'),
    exp: fc.oneof(
      { arbitrary: fc.integer({ min: 10, max: 18 }), weight: 9 },
      { arbitrary: fc.constant(20), weight: 1 },
    ),
  })
  .map(({ unit, exp }) => unit.repeat(Math.ceil(2 ** exp / unit.length)));

/** Objects or lists nested `depth` deep; past about 30 levels protobuf decoding refuses them. */
export const deepValue: fc.Arbitrary<unknown> = fc
  .record({ depth: fc.integer({ min: 5, max: 45 }), list: fc.boolean(), leaf: structValue })
  .map(({ depth, list, leaf }) => {
    let v: unknown = leaf;
    for (let i = 0; i < depth; i++) v = list ? [v] : { nested: v };
    return v;
  });

// ------------------------------------------------------------ owners and specs

const rareBool = (n: number) => fc.nat({ max: n - 1 }).map((v) => v === 0);

const xrName = fc.oneof(
  fc.constantFrom('my-widget', 'orders', 'a', '9lives', 'my.app', 'x'.repeat(63), 'billing-2024', 'db'),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/),
  fc.stringMatching(/^[a-z0-9]{1,15}(\.[a-z0-9]{1,15}){1,2}$/),
);
const namespaceName = fc.oneof(
  fc.constantFrom('team-a', 'default', 'n'.repeat(63)),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/),
);

interface Owner {
  kind: 'Widget' | 'Database';
  mode: 'namespaced' | 'claim' | 'rendered';
  name: string;
  namespace: string;
  uid: string | undefined;
}

const ownerArb = (kind: Owner['kind']): fc.Arbitrary<Owner> =>
  fc.record({
    kind: fc.constant(kind),
    mode: fc.constantFrom<Owner['mode']>('namespaced', 'namespaced', 'namespaced', 'claim', 'rendered'),
    name: xrName,
    namespace: namespaceName,
    uid: fc.option(fc.uuid(), { freq: 6 }).map((u) => u ?? undefined),
  });

function xrOf(o: Owner, spec: unknown, status?: Obj): Obj {
  const metadata: Obj = { name: o.name };
  if (o.mode === 'namespaced') metadata['namespace'] = o.namespace;
  if (o.mode === 'claim') {
    // Crossplane names a claim's composite <claim>-<5 random>.
    metadata['name'] = `${o.name.slice(0, 57)}-x7k2p`.replace(/^[.-]+/, '');
    metadata['labels'] = { 'crossplane.io/claim-name': o.name, 'crossplane.io/claim-namespace': o.namespace };
  }
  if (o.uid) metadata['uid'] = o.uid;
  return {
    apiVersion: 'example.com/v1',
    kind: o.mode === 'claim' ? `X${o.kind}` : o.kind,
    metadata,
    spec,
    ...(status ? { status } : {}),
  };
}

/** Mostly a valid value, sometimes one the schema refuses. */
const mostly = <T>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<unknown>, odds = 30) =>
  fc.oneof({ arbitrary: valid, weight: odds }, { arbitrary: invalid, weight: 1 });

const envName = fc.oneof(
  fc.constantFrom('PORT', 'LOG_LEVEL', 'DATABASE_URL', '_X'),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/),
);

const widgetSpec: fc.Arbitrary<Obj> = fc
  .record(
    {
      color: mostly(
        fc.oneof(fc.constantFrom('blue', 'green', 'red'), fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$/)),
        fc.constantFrom('Blue', '', 'x'.repeat(31), 'a_b', 7),
      ),
      size: mostly(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0, 101, -1, 2.5, '3', null)),
      image: mostly(
        fc.constantFrom('traefik/whoami:v1.11.0', 'ghcr.io/acme/shop:1.2.3', 'nginx'),
        fc.constantFrom('', 'has space', 'x'.repeat(513)),
      ),
      port: mostly(fc.integer({ min: 1, max: 65535 }), fc.constantFrom(0, 65536, '80')),
      env: mostly(
        fc.dictionary(envName, fc.string({ maxLength: 40 }), { maxKeys: 5 }),
        fc.constantFrom({ '1BAD': 'x' }, { A: 1 }, ['A=1'], 'A=1'),
      ),
      resources: fc.record(
        {
          cpu: mostly(fc.constantFrom('100m', '1', '0.5', '250m'), fc.constant('1 core')),
          memory: mostly(fc.constantFrom('128Mi', '1Gi', '512M'), fc.constant('lots')),
        },
        { requiredKeys: [] },
      ),
      host: mostly(
        fc.constantFrom('shop.example.org', 'a', 'x.y.z'),
        fc.constantFrom('Shop.Example.org', 'http://x', '-a'),
      ),
      autoscale: mostly(
        fc.record(
          { maxSize: fc.integer({ min: 1, max: 100 }), targetCPUPercent: fc.integer({ min: 1, max: 100 }) },
          { requiredKeys: ['maxSize'] },
        ),
        fc.constantFrom({}, { maxSize: 0 }, { maxSize: 'many' }),
      ),
      unknownField: fc.constant('surprise'),
    },
    { requiredKeys: [] },
  )
  .chain((spec) =>
    // Mostly keep autoscale coherent (maxSize >= size), the CEL rule; sometimes not.
    rareBool(8).map((keep) => {
      const fix = !keep;
      const autoscale = record(spec, 'autoscale');
      if (fix && autoscale && typeof autoscale['maxSize'] === 'number' && typeof spec['size'] === 'number') {
        return {
          ...spec,
          autoscale: { ...autoscale, maxSize: Math.max(autoscale['maxSize'], Math.min(100, spec['size'])) },
        };
      }
      return spec;
    }),
  );

const databaseSpec: fc.Arbitrary<Obj> = fc
  .record(
    {
      engine: mostly(fc.constantFrom('postgres', 'mysql'), fc.constantFrom('oracle', 42)),
      version: fc.option(
        mostly(fc.constantFrom('14', '15', '16', '17', '8.0', '8.4'), fc.constantFrom('13', 'latest', 16)),
        { freq: 2 },
      ),
      storageGB: mostly(
        fc.oneof(fc.constantFrom(20, 30, 50), fc.integer({ min: 1, max: 65536 })),
        fc.constantFrom(0, -5, 2.5, '20'),
      ),
      size: mostly(fc.constantFrom('small', 'medium', 'large'), fc.constant('huge')),
      placement: mostly(fc.constantFrom('cluster', 'aws'), fc.constant('gcp')),
      highAvailability: mostly(fc.boolean(), fc.constant('yes')),
      backup: fc.record(
        {
          enabled: fc.boolean(),
          schedule: mostly(
            fc.constantFrom('0 3 * * *', '30 23 * * 0', '*/15 * * * *', '0 0 1 * *'),
            fc.constantFrom('daily', '', '@daily'),
          ),
          retentionDays: mostly(fc.integer({ min: 1, max: 35 }), fc.constantFrom(0, 36)),
        },
        { requiredKeys: [] },
      ),
      aws: fc.record(
        {
          region: mostly(fc.constantFrom('eu-west-1', 'us-east-1'), fc.constantFrom('', 'Ireland')),
          instanceClass: fc.constantFrom('db.t4g.micro', 'db.r7g.large'),
          subnetIds: fc.constantFrom(['subnet-0abc1234'], ['subnet-0abc1234', 'subnet-0def5678'], []),
          securityGroupIds: fc.constantFrom(['sg-0123abcd'], []),
          providerConfigName: fc.constantFrom('default', 'team-a'),
        },
        { requiredKeys: [] },
      ),
      deletionPolicy: mostly(fc.constantFrom('Retain', 'Delete'), fc.constant('Orphan')),
    },
    { requiredKeys: ['placement'] },
  )
  .chain((spec) =>
    // Mostly coherent, as the XRD's CEL rules would have it; sometimes not.
    rareBool(8).map((incoherent) => {
      const out: Obj = { ...spec };
      if (out['version'] === null) delete out['version'];
      if (incoherent) return out;
      const engine = out['engine'] === 'mysql' ? 'mysql' : 'postgres';
      if (typeof out['version'] === 'string' && (engine === 'mysql') !== out['version'].includes('.'))
        out['version'] = engine === 'mysql' ? '8.4' : '17';
      if (out['placement'] === 'aws') {
        out['aws'] = { region: 'eu-west-1', ...(record(out, 'aws') ?? {}) };
        if (typeof out['storageGB'] === 'number' && out['storageGB'] < 20) out['storageGB'] = 20;
      }
      if (out['placement'] === 'cluster' && engine === 'mysql') out['highAvailability'] = false;
      return out;
    }),
  );

/** How a spec changes between calls: the transitions that matter (cutovers, growth, refused changes). */
function evolveSpec(kind: Owner['kind'], spec: Obj, n: number): Obj {
  const s = structuredClone(spec);
  if (kind === 'Widget') {
    switch (n % 5) {
      case 0:
        return { ...s, color: ['blue', 'green', 'red'][n % 3] };
      case 1:
        return { ...s, size: 1 + (n % 7) };
      case 2:
        return s;
      case 3:
        return { ...s, autoscale: undefined, host: undefined };
      default:
        return { ...s, color: s['color'] === 'green' ? 'blue' : 'green' };
    }
  }
  switch (n % 6) {
    case 0:
      return { ...s, storageGB: typeof s['storageGB'] === 'number' ? s['storageGB'] + 10 : 30 };
    case 1:
      return { ...s, storageGB: typeof s['storageGB'] === 'number' ? Math.max(1, s['storageGB'] - 5) : 10 };
    case 2:
      return { ...s, highAvailability: s['highAvailability'] !== true };
    case 3:
      return { ...s, backup: { ...(record(s, 'backup') ?? {}), enabled: record(s, 'backup')?.['enabled'] === false } };
    case 4:
      return { ...s, engine: s['engine'] === 'mysql' ? 'postgres' : 'mysql', version: undefined };
    default:
      return s;
  }
}

// ------------------------------------------------------------ observed states

/** What controllers and providers report for an object, one of a few shapes. */
function statusFor(obj: Obj, pick: number): Obj | undefined {
  const generation = num(obj, 'metadata', 'generation') ?? 1;
  const replicas = num(obj, 'spec', 'replicas') ?? 1;
  const healthy = healthyStatus(obj);
  switch (pick % 8) {
    case 0:
      return undefined;
    case 1:
    case 2:
    case 3:
      return healthy;
    case 4:
      return {
        observedGeneration: generation - 1,
        availableReplicas: Math.floor(replicas / 2),
        conditions: [{ type: 'Ready', status: 'False', reason: 'Creating' }],
        atProvider: { status: 'modifying' },
      };
    case 5:
      return {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'ReconcileError', message: 'boom' },
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'ReplicaSet has timed out progressing',
          },
        ],
        atProvider: { status: 'failed' },
        phase: 'Lost',
      };
    case 6:
      return {
        garbage: true,
        conditions: 'not a list',
        atProvider: 7,
        availableReplicas: 'three',
        loadBalancer: { ingress: [null, 3] },
      };
    default:
      return { ...healthy, availableReplicas: replicas + 1, observedGeneration: generation + 5 };
  }
}

/** Crossplane's side of a call, each desired object reported on as `picks` says (in turn, by sorted key). */
function apply(world: Map<string, Obj>, rsp: RunFunctionResponse, picks: readonly number[]): void {
  applyDesired(world, rsp, (obj, before, key, i) => {
    const pick = picks[i % picks.length]!;
    if (pick === 13 && !before) return false; // creation failed: not observed yet
    obj['metadata'] = {
      ...(obj['metadata'] as Obj),
      uid: `uid-${key}`,
      generation: (num(before, 'metadata', 'generation') ?? 0) + 1,
      ...(pick === 12 ? { deletionTimestamp: '2025-01-02T00:00:00Z' } : {}),
    };
    const status = statusFor(obj, pick);
    if (status) obj['status'] = status;
    return true;
  });
}

type Answer = 'none' | 'empty' | 'found';

/** Crossplane's answer to the requirements of a response. */
function answerFor(
  rsp: RunFunctionResponse | undefined,
  how: Answer,
  password: string,
): RunFunctionRequest['requiredResources'] {
  const out: RunFunctionRequest['requiredResources'] = {};
  for (const [name, sel] of Object.entries(rsp?.requirements?.resources ?? {})) {
    if (how === 'none' || !sel) continue;
    let items: Obj[] = [];
    if (how === 'found' && sel.kind === 'CustomResourceDefinition')
      items = [{ apiVersion: sel.apiVersion, kind: sel.kind, metadata: { name: sel.matchName } }];
    if (how === 'found' && sel.kind === 'Secret') {
      const values = {
        username: 'app',
        password,
        address: 'db.abc.eu-west-1.rds.amazonaws.com',
        port: '5432',
        endpoint: 'db.abc.eu-west-1.rds.amazonaws.com:5432',
      };
      items = [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: sel.matchName, namespace: sel.namespace },
          data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
        },
      ];
    }
    out[name] = {
      items: items.map((resource) => ({ resource, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED })),
    };
  }
  return out;
}

interface History {
  owner: Owner;
  spec: Obj;
  /** Earlier calls: how the spec changed and what controllers reported. */
  steps: Array<{ n: number; picks: number[]; answer: Answer }>;
  answer: Answer;
  password: string;
  /** The XR's previous status as the function last wrote it. */
  keepStatus: boolean;
}

const historyArb = (kind: Owner['kind']): fc.Arbitrary<History> =>
  fc.record({
    owner: ownerArb(kind),
    spec: kind === 'Widget' ? widgetSpec : databaseSpec,
    steps: fc.array(
      fc.record({
        n: fc.nat({ max: 1000 }),
        picks: fc.array(fc.nat({ max: 13 }), { minLength: 1, maxLength: 12 }),
        answer: fc.constantFrom<Answer>('none', 'empty', 'found', 'found'),
      }),
      { maxLength: 3 },
    ),
    answer: fc.constantFrom<Answer>('none', 'empty', 'found', 'found'),
    password: fc.oneof(fc.stringMatching(/^[A-Za-z0-9]{32}$/), fc.constantFrom('p@ss:w/rd?#%', 'short')),
    keepStatus: fc.boolean(),
  });

/** Replays a history in-process and returns the request of its last call. */
function requestOf(h: History): RunFunctionRequest {
  const world = new Map<string, Obj>();
  const condition = h.owner.kind === 'Widget' ? 'WidgetReady' : 'DatabaseReady';
  let last: RunFunctionResponse | undefined;
  let xrStatus: Obj | undefined;
  const specs = h.steps.map((s) => evolveSpec(h.owner.kind, h.spec, s.n));
  // Earlier specs lead up to this one: the last step is the spec of the request.
  for (const [i, step] of h.steps.entries()) {
    const xr = xrOf(h.owner, specs[h.steps.length - 1 - i], xrStatus);
    let rsp = runFunction(
      buildRequest(xr, [...world.values()], [], undefined, answerFor(last, step.answer, h.password)),
    );
    if (Object.keys(rsp.requirements?.resources ?? {}).length > 0 && step.answer !== 'none') {
      rsp = runFunction(buildRequest(xr, [...world.values()], [], undefined, answerFor(rsp, step.answer, h.password)));
    }
    if (rsp.results.some((r) => r.severity === Severity.SEVERITY_FATAL)) continue; // Fatal: Crossplane applies nothing
    apply(world, rsp, step.picks);
    last = rsp;
    const status = record(rsp.desired?.composite?.resource, 'status');
    const cond = rsp.conditions[0];
    xrStatus = {
      ...status,
      conditions: cond
        ? [
            {
              type: condition,
              status: cond.status === Status.STATUS_CONDITION_TRUE ? 'True' : 'False',
              reason: cond.reason,
            },
          ]
        : [],
    };
  }
  const xr = xrOf(h.owner, h.spec, h.keepStatus ? xrStatus : undefined);
  // Requirements are answered the way this call would need them (a first call has none yet).
  const asked = last ?? runFunction(buildRequest(xr, [...world.values()]));
  return buildRequest(xr, [...world.values()], [], undefined, answerFor(asked, h.answer, h.password));
}

/**
 * The next call after `rsp` was applied and every controller reported healthy:
 * the same XR and spec, its answer now observed.
 */
export function nextRequest(req: RunFunctionRequest, rsp: RunFunctionResponse): RunFunctionRequest {
  const world = new Map<string, Obj>();
  for (const [key, res] of Object.entries(req.observed?.resources ?? {}))
    if (isObj(res?.resource)) world.set(key, res.resource);
  apply(world, rsp, [1]);
  const resources: RunFunctionRequest['observed'] = { composite: req.observed?.composite, resources: {} };
  for (const [key, obj] of world)
    resources.resources[key] = { resource: obj, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED };
  return { ...req, observed: resources };
}

export const wellFormedCase = (kind: Owner['kind']): fc.Arbitrary<FuzzCase> =>
  historyArb(kind).map((h) => ({
    label: `${kind.toLowerCase()}${h.owner.mode === 'claim' ? ' (claim)' : ''}`,
    wellFormed: true,
    request: requestOf(h),
  }));

// ------------------------------------------------------------ damage

/** Sets a value at a path, replacing whatever is not an object on the way. */
function setAt(root: Obj, path: readonly string[], value: unknown): void {
  let cur = root;
  for (const key of path.slice(0, -1)) {
    if (!isObj(cur[key])) cur[key] = {};
    cur = cur[key] as Obj;
  }
  cur[path[path.length - 1]!] = value;
}

const XR_PATHS: string[][] = [
  ['spec'],
  ['spec', 'size'],
  ['spec', 'color'],
  ['spec', 'env'],
  ['spec', 'env', 'X'],
  ['spec', 'autoscale'],
  ['spec', 'autoscale', 'maxSize'],
  ['spec', 'engine'],
  ['spec', 'storageGB'],
  ['spec', 'aws'],
  ['spec', 'aws', 'region'],
  ['spec', 'backup'],
  ['spec', 'backup', 'schedule'],
  ['metadata'],
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['metadata', 'uid'],
  ['metadata', 'labels'],
  ['metadata', 'labels', 'crossplane.io/claim-name'],
  ['metadata', 'labels', 'crossplane.io/claim-namespace'],
  ['status'],
  ['status', 'conditions'],
  ['status', 'phase'],
  ['status', 'aws'],
  ['apiVersion'],
  ['kind'],
];
const OBSERVED_PATHS: string[][] = [
  [],
  ['spec'],
  ['status'],
  ['status', 'conditions'],
  ['status', 'availableReplicas'],
  ['status', 'readyReplicas'],
  ['spec', 'replicas'],
  ['spec', 'selector'],
  ['spec', 'selector', 'function-platform.dev/color'],
  ['spec', 'volumeClaimTemplates'],
  ['data'],
  ['data', 'password'],
  ['metadata'],
  ['metadata', 'name'],
  ['metadata', 'labels'],
  ['metadata', 'deletionTimestamp'],
  ['kind'],
  ['apiVersion'],
  ['spec', 'forProvider'],
  ['spec', 'forProvider', 'manifest'],
  ['status', 'atProvider'],
  ['status', 'atProvider', 'manifest'],
  ['spec', 'template'],
];
const DATA_HOLDER_KINDS: Obj[] = [
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
  { apiVersion: 'v1', kind: 'Secret', data: { password: Buffer.from('kept').toString('base64') } },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'rds.aws.m.upbound.io/v1beta1', kind: 'Instance' },
  { apiVersion: 's3.aws.m.upbound.io/v1beta1', kind: 'Bucket' },
  {
    apiVersion: 'kubernetes.m.crossplane.io/v1alpha1',
    kind: 'Object',
    spec: { forProvider: { manifest: { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster' } } },
  },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'example.org/v1', kind: 'Whatever' },
];

type Damage = (req: RunFunctionRequest) => void;

const garbage = fc.oneof(
  { arbitrary: structValue, weight: 6 },
  { arbitrary: hugeString, weight: 1 },
  { arbitrary: deepValue, weight: 1 },
);

const xrOfReq = (req: RunFunctionRequest): Obj => {
  req.observed ??= { composite: undefined, resources: {} };
  req.observed.composite ??= { resource: {}, connectionDetails: {}, ready: Ready.READY_UNSPECIFIED };
  req.observed.composite.resource ??= {};
  return req.observed.composite.resource as Obj;
};

const damageArb: fc.Arbitrary<{ label: string; apply: Damage }> = fc.oneof(
  fc
    .constantFrom<'observed' | 'composite' | 'resource' | 'empty'>('observed', 'composite', 'resource', 'empty')
    .map((what) => ({
      label: 'missing XR',
      apply: (req: RunFunctionRequest) => {
        if (what === 'observed') req.observed = undefined;
        else if (what === 'composite' && req.observed) req.observed.composite = undefined;
        else if (what === 'resource' && req.observed?.composite) req.observed.composite.resource = undefined;
        else if (req.observed?.composite) req.observed.composite.resource = {};
      },
    })),
  fc
    .oneof(
      fc.constantFrom('Gadget', '', 'widget', 'XWidgets', 'Widget ', 'DATABASE', 'Secret'),
      fc.string({ maxLength: 20 }),
      structValue,
    )
    .map((kind) => ({
      label: 'unknown kind',
      apply: (req: RunFunctionRequest) => {
        xrOfReq(req)['kind'] = kind;
      },
    })),
  fc.oneof(fc.constantFrom('widget', 'database', 'Widget', 'nope', ''), structValue).map((blueprint) => ({
    label: 'step input',
    apply: (req: RunFunctionRequest) => {
      req.input = { apiVersion: 'platform.fn.example.com/v1beta1', kind: 'Input', blueprint };
    },
  })),
  fc.record({ path: fc.constantFrom(...XR_PATHS), value: garbage }).map(({ path, value }) => ({
    label: `XR ${path.join('.')} garbage`,
    apply: (req: RunFunctionRequest) => setAt(xrOfReq(req), path, value),
  })),
  fc
    .record({ path: fc.constantFrom(...XR_PATHS.filter((p) => p[0] === 'spec' || p[1] === 'name')), value: hugeString })
    .map(({ path, value }) => ({
      label: 'huge string',
      apply: (req: RunFunctionRequest) => setAt(xrOfReq(req), path, value),
    })),
  fc.record({ path: fc.constantFrom(...XR_PATHS), value: deepValue }).map(({ path, value }) => ({
    label: 'deep nesting',
    apply: (req: RunFunctionRequest) => setAt(xrOfReq(req), path, value),
  })),
  fc
    .record({ which: fc.nat(), path: fc.constantFrom(...OBSERVED_PATHS), value: garbage })
    .map(({ which, path, value }) => ({
      label: 'observed garbage',
      apply: (req: RunFunctionRequest) => {
        const keys = Object.keys(req.observed?.resources ?? {});
        if (keys.length === 0) return;
        const res = req.observed!.resources[keys[which % keys.length]!]!;
        if (path.length === 0) res.resource = isObj(value) ? value : { value };
        else setAt((res.resource ??= {}) as Obj, path, value);
      },
    })),
  fc
    .record({
      key: fc.oneof(
        fc.constantFrom('orphan', 'data-volume', '', 'statefulset', 'credentials', 'x'.repeat(200)),
        fc.string({ maxLength: 20 }),
      ),
      base: fc.constantFrom(...DATA_HOLDER_KINDS),
      extra: fc.option(structValue),
    })
    .map(({ key, base, extra }) => ({
      label: 'observed extra',
      apply: (req: RunFunctionRequest) => {
        req.observed ??= { composite: undefined, resources: {} };
        req.observed.resources[key] = {
          resource: {
            ...structuredClone(base),
            metadata: { name: 'someone-elses' },
            ...(extra === null ? {} : { extra }),
          },
          connectionDetails: {},
          ready: Ready.READY_UNSPECIFIED,
        };
      },
    })),
  fc
    .record({
      name: fc.constantFrom('cnpg-crd', 'rds-connection', 'other', ''),
      items: fc.array(structValue, { maxLength: 3 }),
      v1: fc.boolean(),
    })
    .map(({ name, items, v1 }) => ({
      label: 'required garbage',
      apply: (req: RunFunctionRequest) => {
        const answer = {
          items: items.map((resource) => ({
            resource: isObj(resource) ? resource : { apiVersion: 'v1', kind: 'Secret', data: { password: resource } },
            connectionDetails: {},
            ready: Ready.READY_UNSPECIFIED,
          })),
        };
        if (v1) req.extraResources[name] = answer;
        else req.requiredResources[name] = answer;
      },
    })),
  fc
    .record({
      composite: fc.option(structValue),
      key: fc.constantFrom('from-earlier-step', 'service', 'deployment-blue'),
      resource: structValue,
    })
    .map(({ composite, key, resource }) => ({
      label: 'earlier step desired',
      apply: (req: RunFunctionRequest) => {
        req.desired = {
          composite:
            composite === null
              ? undefined
              : {
                  resource: isObj(composite) ? composite : { status: composite },
                  connectionDetails: {},
                  ready: Ready.READY_UNSPECIFIED,
                },
          resources: {
            [key]: {
              resource: isObj(resource) ? resource : { apiVersion: 'v1', kind: 'ConfigMap', data: { v: resource } },
              connectionDetails: {},
              ready: Ready.READY_TRUE,
            },
          },
        };
      },
    })),
  fc
    .record({ context: structValue, tag: fc.oneof(fc.string(), hugeString), cred: fc.uint8Array({ maxLength: 64 }) })
    .map(({ context, tag, cred }) => ({
      label: 'context, meta, credentials',
      apply: (req: RunFunctionRequest) => {
        req.context = isObj(context) ? context : { value: context };
        req.meta = { tag, capabilities: [] };
        req.credentials = { aws: { credentialData: { data: { credentials: Buffer.from(cred) } } } };
      },
    })),
);

export const malformedCase: fc.Arbitrary<FuzzCase> = fc
  .record({
    base: fc.oneof(wellFormedCase('Widget'), wellFormedCase('Database')),
    damages: fc.array(damageArb, { minLength: 1, maxLength: 3 }),
  })
  .map(({ base, damages }) => {
    const request = base.request!;
    for (const d of damages) d.apply(request);
    return { label: damages.map((d) => d.label).join(' + '), wellFormed: false, request };
  });

// ------------------------------------------------------------ bytes

export const rawCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  fc.uint8Array({ maxLength: 600 }).map((raw) => ({ label: 'random bytes', wellFormed: false, raw })),
  fc
    .record({
      base: wellFormedCase('Widget'),
      edits: fc.array(
        fc.record({
          at: fc.nat(),
          byte: fc.nat({ max: 255 }),
          op: fc.constantFrom('set', 'set', 'insert', 'truncate', 'duplicate'),
        }),
        { minLength: 1, maxLength: 6 },
      ),
    })
    .map(({ base, edits }) => {
      let bytes = Buffer.from(RunFunctionRequest.encode(base.request!).finish());
      for (const e of edits) {
        const at = bytes.length === 0 ? 0 : e.at % bytes.length;
        if (e.op === 'set') bytes[at] = e.byte;
        else if (e.op === 'insert')
          bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([e.byte]), bytes.subarray(at)]);
        else if (e.op === 'truncate') bytes = bytes.subarray(0, at);
        else
          bytes = Buffer.concat([
            bytes.subarray(0, at),
            bytes.subarray(at, at + 1 + (e.byte % 64)),
            bytes.subarray(at),
          ]);
      }
      return { label: 'damaged bytes', wellFormed: false, raw: new Uint8Array(bytes) };
    }),
);

/** The whole mix: about half what Crossplane would send, the rest damaged requests and bytes. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { arbitrary: wellFormedCase('Widget'), weight: 5 },
  { arbitrary: wellFormedCase('Database'), weight: 5 },
  { arbitrary: malformedCase, weight: 8 },
  { arbitrary: rawCase, weight: 2 },
);
