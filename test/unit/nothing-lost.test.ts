// Nothing is lost, as a property: whatever the spec history, the observed
// state and its statuses, a call either answers Fatal with nothing desired,
// or keeps every observed composed resource that holds data.
//
// The observed state is built by running the function itself on earlier
// specs and applying its answers as Crossplane would (omitted resources
// deleted), so the property walks real transitions: backups turned off after
// a bucket exists, highAvailability toggled, Retain ↔ Delete, storage grown
// and shrunk, engine and placement changed.
//
// FUZZ_RUNS=5000 for a longer run; FUZZ_SEED=<n> to replay a failure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  Ready,
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
} from '@crossplane-org/function-sdk-typescript';
import { runFunction } from '../../src/function.js';
import { groupOf, kindOf, nameOf, num, record, str, type Obj } from '../../src/kube.js';
import { buildRequest, RESOURCE_NAME_ANNOTATION } from '../../src/render.js';
import { holdsData } from '../../src/kinds/index.js';
import { answered, CNPG_CRD_OBJECT, k8sSecret, type Required } from '../support/database.js';
import { applyDesired, healthyStatus } from '../support/observed-state.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

// ---------------------------------------------------------------- specs

/** Mostly valid values, sometimes not: an invalid spec must answer Fatal, never drop anything. */
const mostly = <T, U>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<U>) =>
  fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: invalid, weight: 1 });

const awsSettings = fc.record(
  {
    region: mostly(fc.constantFrom('eu-west-1', 'us-east-1'), fc.constantFrom('Ireland', '')),
    instanceClass: mostly(fc.constantFrom('db.t4g.micro', 'db.r7g.large'), fc.constant('m5.large')),
    subnetIds: fc.constantFrom(['subnet-0abc1234'], ['subnet-0abc1234', 'subnet-0def5678'], []),
    securityGroupIds: fc.constantFrom(['sg-0123abcd'], []),
    providerConfigName: fc.constantFrom('default', 'team-a'),
  },
  { requiredKeys: [] },
);

/** Anything the schema might be handed, valid or not. */
const anyDatabaseSpec: fc.Arbitrary<Obj> = fc.record(
  {
    engine: mostly(fc.constantFrom('postgres', 'mysql'), fc.constantFrom('oracle', 42)),
    version: mostly(fc.constantFrom('14', '16', '17', '8.0', '8.4'), fc.constantFrom('13', '18', 'latest')),
    storageGB: mostly(
      fc.oneof(fc.constantFrom(10, 20, 30, 50), fc.integer({ min: 1, max: 120 })),
      fc.constantFrom(0, -5, 70000, 2.5, '20'),
    ),
    size: mostly(fc.constantFrom('small', 'medium', 'large'), fc.constant('huge')),
    placement: mostly(fc.constantFrom('cluster', 'aws'), fc.constant('gcp')),
    highAvailability: mostly(fc.boolean(), fc.constant('yes')),
    backup: fc.record(
      {
        enabled: fc.boolean(),
        schedule: mostly(fc.constantFrom('0 3 * * *', '30 23 * * 0', '*/15 * * * *'), fc.constant('daily')),
        retentionDays: mostly(fc.integer({ min: 1, max: 35 }), fc.constantFrom(0, 36)),
      },
      { requiredKeys: [] },
    ),
    aws: awsSettings,
    deletionPolicy: mostly(fc.constantFrom('Retain', 'Delete'), fc.constant('Orphan')),
  },
  { requiredKeys: [] },
);

/** A spec the API server would accept, so chains get far enough to compose data. */
const validDatabaseSpec: fc.Arbitrary<Obj> = fc
  .record(
    {
      engine: fc.constantFrom('postgres', 'mysql'),
      pinVersion: fc.boolean(),
      storageGB: fc.constantFrom(20, 30, 50, 25),
      size: fc.constantFrom('small', 'medium', 'large'),
      placement: fc.constantFrom('cluster', 'aws'),
      highAvailability: fc.boolean(),
      backup: fc.record(
        { enabled: fc.boolean(), retentionDays: fc.integer({ min: 1, max: 35 }) },
        { requiredKeys: [] },
      ),
      subnets: fc.boolean(),
      deletionPolicy: fc.constantFrom('Retain', 'Delete', undefined),
    },
    { requiredKeys: ['engine', 'placement', 'highAvailability'] },
  )
  .map(({ pinVersion, subnets, ...s }) => {
    const spec: Obj = { ...s };
    if (s.placement === 'cluster' && s.engine === 'mysql') spec['highAvailability'] = false;
    if (pinVersion) spec['version'] = s.engine === 'mysql' ? '8.0' : '16';
    if (s.placement === 'aws')
      spec['aws'] = { region: 'eu-west-1', ...(subnets ? { subnetIds: ['subnet-0abc1234'] } : {}) };
    if (s.deletionPolicy === undefined) delete spec['deletionPolicy'];
    return spec;
  });

const databaseSpec = fc.oneof({ arbitrary: validDatabaseSpec, weight: 4 }, { arbitrary: anyDatabaseSpec, weight: 1 });

const anyWidgetSpec: fc.Arbitrary<Obj> = fc.record(
  {
    color: mostly(fc.constantFrom('blue', 'green', 'red'), fc.constantFrom('Blue!', '')),
    size: mostly(fc.integer({ min: 1, max: 5 }), fc.constantFrom(0, 101)),
    image: fc.constantFrom('traefik/whoami:v1.11.0', 'ghcr.io/x/shop:1'),
    port: mostly(fc.constantFrom(8080, 9090), fc.constant(0)),
    env: fc.constantFrom({ A: '1' }, { '1BAD': 'x' }),
    host: fc.constantFrom('shop.example.org'),
    autoscale: fc.record({ maxSize: fc.integer({ min: 1, max: 8 }) }),
  },
  { requiredKeys: [] },
);

const widgetSpec = fc.oneof(
  {
    arbitrary: fc.record(
      { color: fc.constantFrom('blue', 'green'), size: fc.integer({ min: 1, max: 4 }) },
      { requiredKeys: [] },
    ),
    weight: 3,
  },
  { arbitrary: anyWidgetSpec, weight: 1 },
);

type DbMutation =
  | 'fresh'
  | 'same'
  | 'backup'
  | 'ha'
  | 'policy'
  | 'storage'
  | 'engine'
  | 'placement'
  | 'version'
  | 'subnets';
type WidgetMutation = 'fresh' | 'same' | 'color' | 'size' | 'autoscale' | 'host';

interface Step {
  mutation: string;
  fresh: Obj;
  /** A number each mutation reads its own way (storage delta, version pick, ...). */
  n: number;
  /** Per desired key (in sorted order): which status the controllers report. */
  statuses: number[];
  /** Per desired key: a new object is not observed yet (its creation failed or is slow). */
  missing: boolean[];
  /** One observed object deleted out of band (by index), or none. */
  vanish: number | null;
  /** How Crossplane answers the requirements of this step: not at all, nothing found, or found. */
  answer: 'none' | 'empty' | 'found';
  /** Overrides the XR's previous status.phase. */
  phase: string | undefined | null;
}

const dbMutations: DbMutation[] = [
  'fresh',
  'same',
  'backup',
  'ha',
  'policy',
  'storage',
  'engine',
  'placement',
  'version',
  'subnets',
];
const widgetMutations: WidgetMutation[] = ['fresh', 'same', 'color', 'size', 'autoscale', 'host'];

function stepArb(kind: 'Database' | 'Widget'): fc.Arbitrary<Step> {
  return fc.record({
    mutation: fc.constantFrom<string>(...(kind === 'Database' ? dbMutations : widgetMutations)),
    fresh: kind === 'Database' ? databaseSpec : widgetSpec,
    n: fc.integer({ min: -20, max: 40 }),
    statuses: fc.array(fc.nat({ max: 9 }), { minLength: 12, maxLength: 12 }),
    missing: fc.array(rarely(8), { minLength: 12, maxLength: 12 }),
    vanish: fc.option(fc.nat({ max: 20 }), { freq: 5 }),
    answer: fc.constantFrom<Step['answer']>('none', 'empty', 'found', 'found'),
    phase: fc.constantFrom<string | undefined | null>(
      null,
      null,
      null,
      undefined,
      'Provisioning',
      'Ready',
      'Updating',
      'Degraded',
      'Bogus',
    ),
  });
}

/** true about once in n. */
function rarely(n: number): fc.Arbitrary<boolean> {
  return fc.nat({ max: n - 1 }).map((v) => v === 0);
}

const flip = <T>(v: unknown, a: T, b: T): T => (v === a ? b : a);

/** The spec of a step: a fresh one, the same again, or the previous one changed as the step says. */
function mutate(kind: Owner['kind'], prev: Obj, s: Step): Obj {
  if (s.mutation === 'fresh') return structuredClone(s.fresh);
  if (s.mutation === 'same') return structuredClone(prev);
  return kind === 'Database' ? mutateDatabase(prev, s) : mutateWidget(prev, s);
}

function mutateDatabase(prev: Obj, s: Step): Obj {
  const spec = structuredClone(prev);
  const backup = (record(spec, 'backup') ?? {}) as Obj;
  switch (s.mutation as Exclude<DbMutation, 'fresh' | 'same'>) {
    case 'backup':
      return { ...spec, backup: { ...backup, enabled: backup['enabled'] === false } };
    case 'ha':
      return { ...spec, highAvailability: spec['highAvailability'] !== true };
    case 'policy':
      return { ...spec, deletionPolicy: flip(spec['deletionPolicy'], 'Delete', 'Retain') };
    case 'storage':
      return {
        ...spec,
        storageGB: Math.max(1, (typeof spec['storageGB'] === 'number' ? spec['storageGB'] : 20) + s.n),
      };
    case 'engine':
      return {
        ...spec,
        engine: flip(spec['engine'], 'mysql', 'postgres'),
        ...(s.n % 2 === 0 ? {} : { version: undefined }),
      };
    case 'placement': {
      const toAws = spec['placement'] !== 'aws';
      return {
        ...spec,
        placement: toAws ? 'aws' : 'cluster',
        ...(toAws && s.n % 3 !== 0
          ? { aws: { region: 'eu-west-1' }, storageGB: Math.max(20, Number(spec['storageGB'] ?? 20) || 20) }
          : {}),
      };
    }
    case 'version':
      return { ...spec, version: ['14', '15', '16', '17', '8.0', '8.4'][Math.abs(s.n) % 6] };
    case 'subnets': {
      const aws = (record(spec, 'aws') ?? { region: 'eu-west-1' }) as Obj;
      return {
        ...spec,
        aws: {
          ...aws,
          subnetIds: Array.isArray(aws['subnetIds']) && aws['subnetIds'].length > 0 ? [] : ['subnet-0abc1234'],
        },
      };
    }
  }
}

function mutateWidget(prev: Obj, s: Step): Obj {
  const spec = structuredClone(prev);
  switch (s.mutation as Exclude<WidgetMutation, 'fresh' | 'same'>) {
    case 'color':
      return { ...spec, color: ['blue', 'green', 'red'][Math.abs(s.n) % 3] };
    case 'size':
      return { ...spec, size: 1 + (Math.abs(s.n) % 5) };
    case 'autoscale':
      return spec['autoscale'] ? { ...spec, autoscale: undefined } : { ...spec, autoscale: { maxSize: 6 } };
    case 'host':
      return spec['host'] ? { ...spec, host: undefined } : { ...spec, host: 'shop.example.org' };
  }
}

// ---------------------------------------------------------------- the world

interface Owner {
  kind: 'Database' | 'Widget';
  name: string;
  claim: boolean;
  uid: boolean;
}

const ownerArb: fc.Arbitrary<Owner> = fc.record({
  kind: fc.constantFrom('Database', 'Widget'),
  name: fc.constantFrom('orders', 'a', 'billing-2024', 'x'.repeat(70), '9lives'),
  claim: fc.boolean(),
  uid: rarely(5).map((noUid) => !noUid),
});

function xrOf(o: Owner, spec: Obj, status: Obj | undefined): Obj {
  const kind = o.claim ? `X${o.kind}` : o.kind;
  const metadata: Obj = o.claim
    ? {
        name: `${o.name.slice(0, 50)}-x7k2p`,
        labels: { 'crossplane.io/claim-name': o.name, 'crossplane.io/claim-namespace': 'team-b' },
      }
    : { name: o.name, namespace: 'team-a' };
  if (o.uid) metadata['uid'] = `0e9f6a52-${o.name.length}-4c1d-9a3e-${o.kind.length}`;
  return { apiVersion: 'example.com/v1', kind, metadata, spec, ...(status ? { status } : {}) };
}

/** What controllers and providers report, one of a few shapes, whatever the kind. */
function statusFor(obj: Obj, pick: number): Obj | undefined {
  const generation = num(obj, 'metadata', 'generation') ?? 1;
  const manifest = record(obj, 'spec', 'forProvider', 'manifest');
  switch (pick) {
    case 0:
    case 1:
      return undefined;
    case 2:
    case 3:
    case 4:
      return healthyStatus(obj);
    case 5:
      return healthyStatus(obj, 10); // RDS storage autoscaling grew it
    case 6:
      return {
        observedGeneration: generation - 1,
        readyReplicas: 0,
        availableReplicas: 0,
        conditions: [{ type: 'Ready', status: 'False', reason: 'Creating' }],
        atProvider: { status: 'modifying' },
      };
    case 7:
      return {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'ReconcileError', message: 'boom' },
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' },
        ],
        atProvider: { status: 'failed', manifest: manifest && { ...manifest, status: { phase: 'Failing over' } } },
        phase: 'Lost',
      };
    case 8:
      return { garbage: true, conditions: 'not a list', atProvider: 7 };
    default:
      return healthyStatus(obj);
  }
}

/** Applies a response as Crossplane does: omitted resources deleted, desired ones written; controllers report statuses. */
function apply(world: Map<string, Obj>, rsp: RunFunctionResponse, step: Step): void {
  applyDesired(world, rsp, (obj, before, key, i) => {
    const generation = num(before, 'metadata', 'generation') ?? 0;
    const changed = !before || JSON.stringify(before['spec']) !== JSON.stringify(obj['spec']);
    obj['metadata'] = {
      ...(obj['metadata'] as Obj),
      uid: str(before, 'metadata', 'uid') ?? `uid-${key}`,
      creationTimestamp: '2025-01-01T00:00:00Z',
      generation: changed ? generation + 1 : generation,
    };
    const pick = step.statuses[i % step.statuses.length]!;
    const status = statusFor(obj, pick);
    if (status !== undefined) obj['status'] = status;
    if (pick === 9) (obj['metadata'] as Obj)['deletionTimestamp'] = '2025-01-02T00:00:00Z';
    return !(step.missing[i % step.missing.length] && !before); // creation failed: not observed
  });
  // Deleted out of band (a user, a namespace cleanup): the next call sees it gone.
  const keys = [...world.keys()].sort();
  if (step.vanish !== null && keys.length > 0) world.delete(keys[step.vanish % keys.length]!);
}

function providerSecret(): Obj {
  return k8sSecret('orders-db-rds', 'team-a', {
    username: 'app',
    password: 'Zr8Kd02mQpL4vW9x',
    address: 'db.abc.eu-west-1.rds.amazonaws.com',
    port: '5432',
  });
}

/** How Crossplane would answer a response's requirements, as the step says. */
function answerFor(rsp: RunFunctionResponse, how: Step['answer']): Required | undefined {
  const asked = rsp.requirements?.resources ?? {};
  if (how === 'none' || Object.keys(asked).length === 0) return undefined;
  const out: Record<string, Obj[]> = {};
  for (const [name, sel] of Object.entries(asked)) {
    if (how === 'empty' || !sel) out[name] = [];
    else if (sel.kind === 'CustomResourceDefinition') out[name] = [CNPG_CRD_OBJECT];
    else if (sel.kind === 'Secret')
      out[name] = [{ ...providerSecret(), metadata: { name: sel.matchName, namespace: sel.namespace } }];
    else out[name] = [];
  }
  return answered(out);
}

// ---------------------------------------------------------------- the property

const isFatal = (rsp: RunFunctionResponse) => rsp.results.some((r) => r.severity === Severity.SEVERITY_FATAL);

/** Who the object is: kind, name, namespace, and for an Object what it wraps. */
function identity(obj: Obj): string {
  const inner = record(obj, 'spec', 'forProvider', 'manifest');
  const ext = str(obj, 'metadata', 'annotations', 'crossplane.io/external-name');
  return JSON.stringify([
    groupOf(obj),
    kindOf(obj),
    nameOf(obj),
    str(obj, 'metadata', 'namespace'),
    inner && [groupOf(inner), kindOf(inner), nameOf(inner), str(inner, 'metadata', 'namespace')],
    ext,
  ]);
}

function wraps(obj: Obj): Obj {
  return kindOf(obj) === 'Object' ? (record(obj, 'spec', 'forProvider', 'manifest') ?? obj) : obj;
}

/** Which assertions a run makes: the rule of API.md, or also how kept objects are kept. */
type Strictness = 'nothing-lost' | 'kept-as-is';

function check(
  req: RunFunctionRequest,
  observed: ReadonlyMap<string, Obj>,
  spec: Obj,
  strictness: Strictness,
  context: () => string,
): RunFunctionResponse {
  let rsp: RunFunctionResponse;
  try {
    rsp = runFunction(req);
  } catch (err) {
    assert.fail(`runFunction threw ${String(err)}\n${context()}`);
  }
  const internal = rsp.results.find((r) => r.reason === 'InternalError');
  assert.equal(internal, undefined, `an unexpected error: ${internal?.message}\n${context()}`);
  const desired = rsp.desired?.resources ?? {};
  if (isFatal(rsp)) {
    assert.deepEqual(Object.keys(desired), [], `a Fatal answer with desired resources\n${context()}`);
    return rsp;
  }
  for (const [key, obj] of observed) {
    if (!holdsData(obj)) continue;
    const kept = desired[key]?.resource as Obj | undefined;
    assert.ok(kept, `observed ${kindOf(wraps(obj))} ${key} holds data but is not desired\n${context()}`);
    if (strictness === 'nothing-lost') continue;
    // Kept as itself: the same object, not a new one under the old key.
    assert.equal(identity(kept), identity(obj), `${key} changed identity\n${context()}`);
    if (kindOf(wraps(obj)) === 'StatefulSet') {
      assert.deepEqual(
        record(wraps(kept), 'spec')?.['volumeClaimTemplates'],
        record(wraps(obj), 'spec')?.['volumeClaimTemplates'],
        `${key}: claim templates are immutable\n${context()}`,
      );
    }
    if (kindOf(wraps(obj)) === 'PersistentVolumeClaim') {
      const size = (o: Obj) => str(wraps(o), 'spec', 'resources', 'requests', 'storage');
      assert.ok(
        Number.parseInt(size(kept) ?? '0', 10) >= Number.parseInt(size(obj) ?? '0', 10),
        `${key}: volume request shrank from ${size(obj)} to ${size(kept)}\n${context()}`,
      );
    }
    if (kindOf(obj) === 'Instance') {
      assert.equal(
        str(kept, 'spec', 'forProvider', 'identifier'),
        str(obj, 'spec', 'forProvider', 'identifier'),
        `${key}: RDS identifier changed\n${context()}`,
      );
      assert.equal(
        str(kept, 'spec', 'forProvider', 'engine'),
        str(obj, 'spec', 'forProvider', 'engine'),
        `${key}: engine changed\n${context()}`,
      );
      assert.ok(
        (num(kept, 'spec', 'forProvider', 'allocatedStorage') ?? 0) >=
          (num(obj, 'spec', 'forProvider', 'allocatedStorage') ?? 0),
        `${key}: storage shrank\n${context()}`,
      );
    }
    if (kindOf(wraps(obj)) === 'Cluster') {
      const size = (o: Obj) => str(wraps(o), 'spec', 'storage', 'size');
      assert.ok(
        Number.parseInt(size(kept) ?? '0', 10) >= Number.parseInt(size(obj) ?? '0', 10),
        `${key}: CloudNativePG storage shrank\n${context()}`,
      );
    }
  }
  for (const [key, res] of Object.entries(desired)) {
    assert.ok(
      res.ready === Ready.READY_TRUE || res.ready === Ready.READY_FALSE,
      `${key} has ready ${res.ready}\n${context()}`,
    );
  }
  // Retain (the default) keeps the data when the Database is deleted.
  if (
    strictness === 'kept-as-is' &&
    str(req.observed?.composite?.resource, 'kind')?.endsWith('Database') &&
    spec['deletionPolicy'] !== 'Delete'
  ) {
    for (const [key, res] of Object.entries(desired)) {
      const obj = res.resource as Obj;
      // What would take data along if deleted: volumes, clusters, instances, buckets (a StatefulSet keeps its claims itself).
      if (['PersistentVolumeClaim', 'Cluster', 'Instance', 'Bucket'].includes(kindOf(wraps(obj)))) {
        const policies = record(obj, 'spec')?.['managementPolicies'];
        assert.ok(
          Array.isArray(policies) && !policies.includes('*') && !policies.includes('Delete'),
          `${key} may be deleted under Retain: ${String(policies)}\n${context()}`,
        );
        assert.notEqual(
          str(obj, 'spec', 'deletionPolicy'),
          'Delete',
          `${key} has deletionPolicy Delete under Retain\n${context()}`,
        );
      }
      if (kindOf(wraps(obj)) === 'StatefulSet')
        assert.equal(
          str(wraps(obj), 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted'),
          'Retain',
          `${key}\n${context()}`,
        );
      if (kindOf(obj) === 'Instance') {
        assert.equal(record(obj, 'spec', 'forProvider')?.['deletionProtection'], true, `${key}\n${context()}`);
        assert.equal(record(obj, 'spec', 'forProvider')?.['skipFinalSnapshot'], false, `${key}\n${context()}`);
      }
    }
  }
  return rsp;
}

interface Stats {
  calls: number;
  fatal: number;
  holdersSeen: number;
  transitions: Map<string, number>;
}

function runScenario(
  owner: Owner,
  first: Obj,
  steps: Step[],
  foreign: boolean,
  stats: Stats,
  strictness: Strictness = 'nothing-lost',
): void {
  const world = new Map<string, Obj>();
  let spec = first;
  let status: Obj | undefined;
  const history: string[] = [];
  const context = () =>
    `owner ${JSON.stringify(owner)}\nspecs:\n  ${history.join('\n  ')}\nobserved: ${[...world.keys()].sort().join(', ')}`;

  steps.forEach((step, index) => {
    if (index > 0) spec = mutate(owner.kind, spec, step);
    history.push(`${step.mutation}: ${JSON.stringify(spec)}`);
    const last = index === steps.length - 1;
    if (last && foreign) {
      // Something that holds data under a key no blueprint composes: it must never be dropped.
      world.set('legacy-data', {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'old-data', namespace: 'team-a', annotations: { [RESOURCE_NAME_ANNOTATION]: 'legacy-data' } },
      });
    }
    const phase = step.phase === null ? status : { ...(status ?? {}), phase: step.phase };
    const xr = xrOf(owner, spec, phase);
    const objects = [...world.values()];
    const holders = objects.filter(holdsData).length;
    stats.holdersSeen += holders;
    if (holders > 0 && index > 0) stats.transitions.set(step.mutation, (stats.transitions.get(step.mutation) ?? 0) + 1);
    // Crossplane's first call of a reconcile, then again with the requirements answered.
    const base = buildRequest(xr, objects);
    let rsp = check(base, world, spec, strictness, context);
    stats.calls++;
    const required = answerFor(rsp, step.answer);
    if (required) {
      rsp = check({ ...base, requiredResources: required }, world, spec, strictness, context);
      stats.calls++;
    }
    if (isFatal(rsp)) {
      stats.fatal++;
      return;
    }
    apply(world, rsp, step);
    const s = record(rsp.desired?.composite?.resource, 'status');
    status = s && {
      ...s,
      conditions: rsp.conditions.map((c) => ({
        type: c.type,
        status: c.status === 2 ? 'True' : 'False',
        reason: c.reason,
        message: c.message,
      })),
    };
  });
}

const scenario = ownerArb.chain((owner) =>
  fc.record({
    owner: fc.constant(owner),
    first: owner.kind === 'Database' ? databaseSpec : widgetSpec,
    steps: fc.array(stepArb(owner.kind), { minLength: 1, maxLength: 6 }),
    foreign: rarely(16),
  }),
);

function property(strictness: Strictness): Stats {
  const stats: Stats = { calls: 0, fatal: 0, holdersSeen: 0, transitions: new Map() };
  fc.assert(
    fc.property(scenario, ({ owner, first, steps, foreign }) =>
      runScenario(owner, first, steps, foreign, stats, strictness),
    ),
    { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  return stats;
}

describe('nothing is lost (property)', () => {
  test(`every observed data holder stays desired, or the call is Fatal with nothing desired; ready is always set (${RUNS} runs)`, () => {
    const stats = property('nothing-lost');
    // The property is only worth something if it walked real transitions with data at stake.
    assert.ok(stats.holdersSeen > RUNS, `too few calls had data holders observed: ${stats.holdersSeen}`);
    for (const m of ['backup', 'ha', 'policy', 'storage', 'engine', 'placement'])
      assert.ok((stats.transitions.get(m) ?? 0) > 0, `no ${m} transition with data at stake`);
    assert.ok(stats.fatal > 0 && stats.fatal < stats.calls, `fatal ${stats.fatal} of ${stats.calls}`);
  });

  test(`kept data holders stay themselves: same object, immutable claim templates, storage never shrinks, Retain keeps them (${RUNS} runs)`, () => {
    property('kept-as-is');
  });

  test('a hand-picked walk: backups off after the bucket exists, HA toggled, Retain ↔ Delete, a foreign volume', () => {
    const stats: Stats = { calls: 0, fatal: 0, holdersSeen: 0, transitions: new Map() };
    const strict: Strictness = 'kept-as-is';
    const step = (mutation: string, n = 0, answer: Step['answer'] = 'found'): Step => ({
      mutation,
      fresh: {},
      n,
      statuses: Array(12).fill(2),
      missing: Array(12).fill(false),
      vanish: null,
      answer,
      phase: null,
    });
    const aws = { placement: 'aws', aws: { region: 'eu-west-1' } };
    runScenario(
      { kind: 'Database', name: 'orders', claim: false, uid: true },
      aws,
      [
        step('same'),
        step('backup'),
        step('policy'),
        step('ha'),
        step('policy'),
        step('storage', 10),
        step('storage', -5),
        step('placement'),
      ],
      false,
      stats,
      strict,
    );
    runScenario(
      { kind: 'Database', name: 'orders', claim: true, uid: true },
      { highAvailability: true },
      [step('same'), step('backup'), step('ha'), step('ha', 0, 'empty'), step('policy')],
      true,
      stats,
      strict,
    );
    runScenario(
      { kind: 'Database', name: 'orders', claim: false, uid: true },
      { highAvailability: true },
      [step('same', 0, 'empty'), step('ha')],
      false,
      stats,
      strict,
    );
    runScenario(
      { kind: 'Widget', name: 'shop', claim: false, uid: true },
      { color: 'blue', size: 2 },
      [step('same'), step('color', 1), step('color', 1), step('autoscale')],
      true,
      stats,
      strict,
    );
    assert.ok(
      stats.fatal > 0,
      'the refused steps (placement, HA on an existing StatefulSet, the foreign volume) were Fatal',
    );
  });
});
