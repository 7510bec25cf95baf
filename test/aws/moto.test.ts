// The AWS path against moto's server: the real SDK, real HTTP, real RDS and
// S3 APIs on loopback. Nothing here stubs a client.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createServer, type Server } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  CreateDBInstanceCommand,
  CreateDBSnapshotCommand,
  DeleteDBInstanceCommand,
  DescribeDBInstancesCommand,
  DescribeDBSnapshotsCommand,
  DescribeOrderableDBInstanceOptionsCommand,
  ModifyDBInstanceCommand,
  RDSClient,
  RestoreDBInstanceFromDBSnapshotCommand,
  RestoreDBInstanceToPointInTimeCommand,
} from '@aws-sdk/client-rds';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type RunFunctionResponse, Severity } from '@crossplane-org/function-sdk-typescript';
import { AwsFactsSource, type AwsQuery } from '../../src/aws/facts.js';
import { runFunction } from '../../src/function.js';
import { runFunctionLive } from '../../src/live.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest, readYamlObjects } from '../../src/render.js';
import { crankSkipReason, render, xrOf } from '../support/crank.js';
import { type FunctionProcess, startFunction } from '../support/function-process.js';
import { dial } from '../support/grpc-client.js';
import { freePort, type Moto, motoSkipReason, startMoto } from '../support/moto.js';
import { repoRoot } from '../../dev/infra/paths.js';

const ACCESS_KEY = 'AKIAFUNCTIONPLATFORM1';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYfunctionplatform';

const region = 'eu-west-1';
const xr = readYamlObjects(`${repoRoot}/examples/database/aws.yaml`)[0]!;
const ready = readYamlObjects(`${repoRoot}/examples/database/observed/aws-ready.yaml`);
const identifier = 'team-a-orders-db';
const bucket = 'orders-db-backups-75c1a60b89';

/** A Secret in the format provider-upjet-aws reads, as Crossplane passes step credentials. */
function credentialsSecret(endpoint: string, format: 'ini' | 'keys' = 'ini'): Obj {
  const stringData: Record<string, string> =
    format === 'ini'
      ? { credentials: `[default]\naws_access_key_id = ${ACCESS_KEY}\naws_secret_access_key = ${SECRET_KEY}\n` }
      : { aws_access_key_id: ACCESS_KEY, aws_secret_access_key: SECRET_KEY };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'aws', namespace: 'crossplane-system' },
    stringData: { ...stringData, endpoint },
  };
}

/** An RDS instance created through the API, as the provider would have created it. */
async function createInstance(endpoint: string, engineVersion = '17.2'): Promise<void> {
  const rds = new RDSClient({
    region,
    endpoint,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });
  try {
    await rds.send(
      new CreateDBInstanceCommand({
        DBInstanceIdentifier: identifier,
        Engine: 'postgres',
        EngineVersion: engineVersion,
        DBInstanceClass: 'db.t4g.small',
        AllocatedStorage: 20,
        MasterUsername: 'app',
        MasterUserPassword: 'not-used-by-the-tests',
        BackupRetentionPeriod: 7,
      }),
    );
  } finally {
    rds.destroy();
  }
}

const warnings = (rsp: RunFunctionResponse) =>
  rsp.results.filter((r) => r.severity === Severity.SEVERITY_WARNING).map((r) => r.message);
const fatal = (rsp: RunFunctionResponse) => rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL)?.message;
const statusOf = (rsp: RunFunctionResponse) =>
  ((rsp.desired?.composite?.resource as Obj | undefined)?.['status'] ?? {}) as Obj;

function assertNoSecret(rsp: RunFunctionResponse): void {
  const text = JSON.stringify({ results: rsp.results, conditions: rsp.conditions, status: statusOf(rsp) });
  assert.ok(!text.includes(SECRET_KEY), 'the secret key appears in the answer');
  assert.ok(!text.includes(ACCESS_KEY), 'the access key id appears in the answer');
}

const skip = motoSkipReason();

/** moto is slow on a busy machine (it decodes its data on first use): tests that expect answers allow it time. */
const PATIENT = { timeoutMs: 15_000 };

describe('AWS facts against moto', { skip }, () => {
  let moto: Moto;
  let clients: { rds: RDSClient; s3: S3Client };
  before(async () => {
    moto = await startMoto();
    const common = {
      region,
      endpoint: moto.endpoint,
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    };
    clients = { rds: new RDSClient(common), s3: new S3Client({ ...common, forcePathStyle: true }) };
    // moto loads its table of orderable options on the first question (15 s and more on a busy
    // machine, past any timeout the function would use): asked once here, without a timeout.
    await clients.rds.send(new DescribeOrderableDBInstanceOptionsCommand({ Engine: 'aurora-postgresql' }));
  });
  after(async () => {
    clients?.rds.destroy();
    clients?.s3.destroy();
    await moto?.stop();
  });

  const query = (over: Partial<AwsQuery>): AwsQuery => ({
    cacheKey: `q-${Math.random()}`,
    region: 'us-east-1',
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    endpoint: moto.endpoint,
    beforeCreation: true,
    identifier: 'x',
    engine: 'aurora-postgresql',
    version: '15',
    instanceClass: 'db.r6g.large',
    instanceClassField: 'spec.aws.instanceClass',
    ...over,
  });

  // moto implements DescribeOrderableDBInstanceOptions for aurora-postgresql and neptune only;
  // the check is engine-agnostic, so its answers are exercised on aurora-postgresql.
  test('orderable check passes for an orderable class and version', async () => {
    const facts = await new AwsFactsSource(PATIENT).gather(query({}));
    assert.deepEqual(facts.warnings, []);
    assert.equal(facts.notOrderable, undefined);
  });

  test('orderable check fails for a class AWS does not sell, naming the field and what is orderable', async () => {
    const facts = await new AwsFactsSource(PATIENT).gather(query({ instanceClass: 'db.t1.nano' }));
    assert.equal(facts.notOrderable?.field, 'spec.aws.instanceClass');
    assert.match(
      facts.notOrderable?.message ?? '',
      /^db\.t1\.nano cannot be ordered for aurora-postgresql 15 in us-east-1; orderable there: .*db\.r6g\.large/,
    );
  });

  test('orderable check fails for a version AWS does not offer', async () => {
    const facts = await new AwsFactsSource(PATIENT).gather(query({ version: '99' }));
    assert.equal(facts.notOrderable?.field, 'spec.version');
    assert.match(
      facts.notOrderable?.message ?? '',
      /aurora-postgresql 99 cannot be ordered in us-east-1; orderable major versions there: .*15/,
    );
  });

  test('a definite no is a Fatal result naming the field, before anything is created', () => {
    const rsp = runFunction(buildRequest(xr), undefined, {
      aws: {
        observedAt: new Date().toISOString(),
        warnings: [],
        notOrderable: {
          field: 'spec.aws.instanceClass',
          message: 'db.t1.nano cannot be ordered for postgres 17 in eu-west-1; orderable there: db.t4g.small',
        },
      },
    });
    assert.match(fatal(rsp) ?? '', /spec\.aws\.instanceClass: db\.t1\.nano cannot be ordered/);
    assert.deepEqual(rsp.desired?.resources, {});
  });

  test('before creation against moto: postgres options are unknown there, so the function warns and composes', async () => {
    const rsp = await runFunctionLive(
      buildRequest(xr, [], [credentialsSecret(moto.endpoint)]),
      new AwsFactsSource(PATIENT),
    );
    assert.equal(fatal(rsp), undefined);
    assert.ok(rsp.desired?.resources['rds-instance'], 'the instance is still composed');
    assert.ok(
      warnings(rsp).some((w) => /could not be checked/.test(w)),
      warnings(rsp).join('\n'),
    );
    assertNoSecret(rsp);
  });

  test('an instance created through the API shows its status in the XR; no bucket is read (RDS keeps the backups)', async () => {
    await createInstance(moto.endpoint);
    // An earlier version's bucket, with objects in it: nothing is read from it, and it is named nowhere.
    await clients.s3.send(
      new CreateBucketCommand({ Bucket: bucket, CreateBucketConfiguration: { LocationConstraint: region } }),
    );
    await clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'orders-1.dump', Body: 'one' }));
    const aws = new AwsFactsSource(PATIENT);
    for (const format of ['ini', 'keys'] as const) {
      const rsp = await runFunctionLive(buildRequest(xr, ready, [credentialsSecret(moto.endpoint, format)]), aws);
      assert.equal(fatal(rsp), undefined);
      const status = statusOf(rsp);
      const facts = status['aws'] as Obj;
      assert.equal(facts['dbInstanceStatus'], 'available');
      assert.equal(facts['engineVersion'], '17.2');
      assert.match(String(facts['latestRestorableTime']), /^\d{4}-\d\d-\d\dT/);
      assert.match(String(facts['observedAt']), /^\d{4}-\d\d-\d\dT/);
      assert.doesNotMatch(JSON.stringify(status['backup'] ?? {}), /s3:|lastSuccessfulTime/);
      assert.deepEqual(warnings(rsp), []);
      assertNoSecret(rsp);
    }
  });

  test('restores: the window read from AWS, and what the function composes, restored by RDS itself', async () => {
    // The instance exists (the test before made it). Its window, as the function reads it from AWS.
    const aws = new AwsFactsSource(PATIENT);
    const rsp = await runFunctionLive(buildRequest(xr, ready, [credentialsSecret(moto.endpoint)]), aws);
    const facts = statusOf(rsp)['aws'] as Obj;
    const earliest = Date.parse(String(facts['earliestRestorableTime']));
    const latest = Date.parse(String(facts['latestRestorableTime']));
    assert.ok(
      earliest <= latest,
      `window ${String(facts['earliestRestorableTime'])} to ${String(facts['latestRestorableTime'])}`,
    );
    assert.ok(Date.now() - earliest <= 7 * 86_400_000 + 60_000, 'not further back than the retention period');

    // A DatabaseRestore to a point inside it: the RDS instance the function composes beside the live one.
    const point = new Date(Math.max(earliest, latest - 60_000)).toISOString();
    const request = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseRestore',
      metadata: { name: 'undo', namespace: 'team-a', creationTimestamp: new Date().toISOString() },
      spec: { databaseRef: { name: 'orders' }, pointInTime: point },
    };
    // The provider observes what AWS says: the instance's latest restorable time as moto gives it.
    const observed = structuredClone(ready);
    for (const o of observed)
      if (o['kind'] === 'Instance')
        ((o['status'] as Obj)['atProvider'] as Obj)['latestRestorableTime'] = facts['latestRestorableTime'];
    const withRestore = runFunction(
      buildRequest({ ...xr, status: statusOf(rsp) }, observed, [], undefined, {
        'database-restores': { items: [{ resource: request, connectionDetails: {}, ready: 0 }] },
      }),
    );
    assert.equal(fatal(withRestore), undefined, fatal(withRestore));
    const composed = withRestore.desired?.resources['rds-instance-r1']?.resource as Obj;
    const fp = (composed['spec'] as Obj)['forProvider'] as Obj;
    const pitr = fp['restoreToPointInTime'] as Obj;
    assert.deepEqual(pitr, { sourceDbInstanceIdentifier: identifier, restoreTime: point });
    // What provider-upjet-aws would ask RDS for, with these very values.
    const restored = await clients.rds.send(
      new RestoreDBInstanceToPointInTimeCommand({
        SourceDBInstanceIdentifier: String(pitr['sourceDbInstanceIdentifier']),
        TargetDBInstanceIdentifier: String(fp['identifier']),
        RestoreTime: new Date(String(pitr['restoreTime'])),
        DBInstanceClass: String(fp['instanceClass']),
      }),
    );
    assert.equal(restored.DBInstance?.DBInstanceIdentifier, 'team-a-orders-db-r1');
    assert.equal(restored.DBInstance?.Engine, 'postgres');

    // A snapshot (a DatabaseBackup on AWS), and a new Database made from it.
    await clients.rds.send(
      new CreateDBSnapshotCommand({ DBInstanceIdentifier: identifier, DBSnapshotIdentifier: 'undo-snapshot' }),
    );
    const snapshotBackup = {
      apiVersion: 'example.com/v1',
      kind: 'DatabaseBackup',
      metadata: { name: 'undo-snapshot', namespace: 'team-a' },
      spec: { databaseRef: { name: 'orders' } },
      status: {
        phase: 'Completed',
        method: 'rds-snapshot',
        engine: 'postgres',
        version: '17',
        location: 'rds-snapshot:undo-snapshot',
        restorable: true,
      },
    };
    const copy = runFunction(
      buildRequest(
        {
          ...xr,
          metadata: { name: 'orders-copy', namespace: 'team-a' },
          spec: { ...(xr['spec'] as Obj), restore: { fromBackup: { name: 'undo-snapshot' } } },
        },
        [],
        [],
        undefined,
        { 'restore-backup': { items: [{ resource: snapshotBackup, connectionDetails: {}, ready: 0 }] } },
      ),
    );
    assert.equal(fatal(copy), undefined, fatal(copy));
    const copyInstance = copy.desired?.resources['rds-instance']?.resource as Obj;
    const copyFp = (copyInstance['spec'] as Obj)['forProvider'] as Obj;
    const fromSnapshot = await clients.rds.send(
      new RestoreDBInstanceFromDBSnapshotCommand({
        DBSnapshotIdentifier: String(copyFp['snapshotIdentifier']),
        DBInstanceIdentifier: String(copyFp['identifier']),
        DBInstanceClass: String(copyFp['instanceClass']),
      }),
    );
    assert.equal(fromSnapshot.DBInstance?.DBInstanceIdentifier, 'team-a-orders-copy-db');

    // The snapshot's restore drill, asked for: the scratch instance the DatabaseBackup composes, made by RDS from
    // the snapshot with these very values, then deleted as the provider deletes it (no final snapshot); the
    // snapshot stays.
    const drillBackup = {
      ...snapshotBackup,
      metadata: { ...snapshotBackup.metadata, uid: 'uid-undo-snapshot' },
      spec: { ...snapshotBackup.spec, verification: { requested: 'check-1' } },
    };
    const drill = runFunction(
      buildRequest(drillBackup, [], [], undefined, {
        database: { items: [{ resource: xr, connectionDetails: {}, ready: 0 }] },
      }),
    );
    assert.equal(fatal(drill), undefined, fatal(drill));
    const scratch = drill.desired?.resources['drill-rds-instance']?.resource as Obj;
    const sp = (scratch['spec'] as Obj)['forProvider'] as Obj;
    const made = await clients.rds.send(
      new RestoreDBInstanceFromDBSnapshotCommand({
        DBSnapshotIdentifier: String(sp['snapshotIdentifier']),
        DBInstanceIdentifier: String(sp['identifier']),
        DBInstanceClass: String(sp['instanceClass']),
        StorageType: String(sp['storageType']),
        MultiAZ: Boolean(sp['multiAz']),
        PubliclyAccessible: Boolean(sp['publiclyAccessible']),
        DeletionProtection: Boolean(sp['deletionProtection']),
        AutoMinorVersionUpgrade: Boolean(sp['autoMinorVersionUpgrade']),
      }),
    );
    assert.equal(made.DBInstance?.DBInstanceIdentifier, sp['identifier']);
    // No size and no retention asked: the snapshot's own (20 GB, as the instance it was taken of).
    assert.equal(sp['allocatedStorage'], undefined);
    assert.equal(sp['backupRetentionPeriod'], undefined);
    assert.equal(made.DBInstance?.AllocatedStorage, 20);
    assert.equal(made.DBInstance?.Engine, 'postgres', 'the snapshot’s engine');
    // The provider then sets what a restore cannot: its own master password (generated).
    await clients.rds.send(
      new ModifyDBInstanceCommand({
        DBInstanceIdentifier: String(sp['identifier']),
        MasterUserPassword: 'generated-by-the-provider-0123',
        ApplyImmediately: Boolean(sp['applyImmediately']),
      }),
    );
    await clients.rds.send(
      new DeleteDBInstanceCommand({
        DBInstanceIdentifier: String(sp['identifier']),
        SkipFinalSnapshot: Boolean(sp['skipFinalSnapshot']),
        DeleteAutomatedBackups: Boolean(sp['deleteAutomatedBackups']),
      }),
    );
    const left = await clients.rds.send(new DescribeDBInstancesCommand({}));
    assert.ok(!left.DBInstances?.some((i) => i.DBInstanceIdentifier === sp['identifier']), 'the scratch is gone');
    const snapshots = await clients.rds.send(new DescribeDBSnapshotsCommand({ DBSnapshotIdentifier: 'undo-snapshot' }));
    assert.equal(snapshots.DBSnapshots?.length, 1, 'the snapshot stays');
    const finals = await clients.rds.send(new DescribeDBSnapshotsCommand({}));
    assert.ok(!finals.DBSnapshots?.some((x) => x.DBInstanceIdentifier === sp['identifier']), 'no final snapshot');
  });

  test('answers are cached per composite, and concurrent calls share one request', async () => {
    const aws = new AwsFactsSource({ ...PATIENT, ttlMs: 60_000 });
    const req = buildRequest(xr, ready, [credentialsSecret(moto.endpoint)]);
    await Promise.all(Array.from({ length: 20 }, () => runFunctionLive(req, aws)));
    const afterStorm = aws.calls;
    assert.equal(afterStorm, 1, 'DescribeDBInstances, once for 20 concurrent calls');
    await runFunctionLive(req, aws);
    assert.equal(aws.calls, afterStorm, 'within the TTL nothing is asked again');
  });

  test('AWS unreachable mid-test: a warning, the last known facts kept, and the same desired state', async () => {
    const down = await startMoto();
    await createInstance(down.endpoint);
    const aws = new AwsFactsSource(PATIENT);
    const seenBefore = statusOf(
      await runFunctionLive(buildRequest(xr, ready, [credentialsSecret(down.endpoint)]), aws),
    );
    await down.stop();
    // The observed XR carries what was written before.
    const withStatus = {
      ...xr,
      status: {
        aws: { dbInstanceStatus: 'available', engineVersion: '17.2', observedAt: '2026-11-30T10:00:00.000Z' },
        phase: 'Ready',
      },
    };
    const live = await runFunctionLive(
      buildRequest(withStatus, ready, [credentialsSecret(down.endpoint)]),
      new AwsFactsSource({ timeoutMs: 1000 }),
    );
    const offline = runFunction(buildRequest(withStatus, ready));
    assert.deepEqual(live.desired?.resources, offline.desired?.resources, 'AWS trouble never changes what is composed');
    assert.ok(
      warnings(live).some((w) => /AWS DescribeDBInstances failed/.test(w)),
      warnings(live).join('\n'),
    );
    assert.deepEqual(
      (statusOf(live)['aws'] as Obj)['observedAt'],
      '2026-11-30T10:00:00.000Z',
      'status.aws keeps the facts last read, with their time',
    );
    assert.equal((seenBefore['aws'] as Obj)['dbInstanceStatus'], 'available', 'read while moto was up');
    assertNoSecret(live);
  });

  test('a server that never answers costs one timeout, not a hung reconcile', async () => {
    const sockets: Array<import('node:net').Socket> = [];
    const silent: Server = createServer((s) => sockets.push(s));
    const port = await freePort();
    await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
    try {
      const started = Date.now();
      const rsp = await runFunctionLive(
        buildRequest(xr, ready, [credentialsSecret(`http://127.0.0.1:${port}`)]),
        new AwsFactsSource({ timeoutMs: 500 }),
      );
      const took = Date.now() - started;
      assert.ok(took < 5000, `took ${took} ms`);
      assert.equal(fatal(rsp), undefined);
      assert.ok(warnings(rsp).length > 0);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe('AWS access denied (moto with IAM authentication on)', { skip }, () => {
  let moto: Moto;
  before(async () => {
    moto = await startMoto({ INITIAL_NO_AUTH_ACTION_COUNT: '0' });
  });
  after(async () => moto?.stop());

  test('unknown credentials give a warning that carries no secret', async () => {
    const rsp = await runFunctionLive(
      buildRequest(xr, ready, [credentialsSecret(moto.endpoint)]),
      new AwsFactsSource(PATIENT),
    );
    assert.equal(fatal(rsp), undefined);
    const w = warnings(rsp);
    assert.ok(
      w.some((m) => /DescribeDBInstances failed: \S+ \(HTTP 403\)/.test(m)),
      w.join('\n'),
    );
    assertNoSecret(rsp);
  });
});

describe('the gRPC server reads AWS with step credentials', { skip }, () => {
  let moto: Moto;
  let fn: FunctionProcess;
  before(async () => {
    moto = await startMoto();
    fn = await startFunction({ insecure: true, args: ['--debug'], env: { FUNCTION_PLATFORM_AWS_TIMEOUT_MS: '15000' } });
    await createInstance(moto.endpoint);
  });
  after(async () => {
    await fn?.stop();
    await moto?.stop();
  });

  test('status.aws comes back over the wire, and the secret is in no log', async () => {
    const client = dial(fn.target);
    try {
      const rsp = await client.run(buildRequest(xr, ready, [credentialsSecret(moto.endpoint)]));
      assert.equal((statusOf(rsp)['aws'] as Obj)?.['dbInstanceStatus'], 'available', JSON.stringify(rsp.results));
      assert.ok(!fn.logs().includes(SECRET_KEY) && !fn.logs().includes(ACCESS_KEY), 'credentials in the logs');
    } finally {
      client.close();
    }
  });
});

describe('crossplane render with --function-credentials, against moto', {
  skip: skip || crankSkipReason('render with credentials'),
}, () => {
  let moto: Moto;
  let fn: FunctionProcess;
  before(async () => {
    moto = await startMoto();
    fn = await startFunction({ insecure: true, env: { FUNCTION_PLATFORM_AWS_TIMEOUT_MS: '15000' } });
    await createInstance(moto.endpoint, '16.4');
  });
  after(async () => {
    await fn?.stop();
    await moto?.stop();
  });

  test('the example composition passes the Secret as the step credentials; the XR shows what AWS says', async () => {
    // The example Secret, pointed at moto: Crossplane passes every key of it, endpoint included.
    const secret = readYamlObjects(`${repoRoot}/examples/database/aws-credentials.yaml`)[0]!;
    const data = { ...(secret['data'] as Obj), endpoint: Buffer.from(moto.endpoint).toString('base64') };
    const dir = mkdtempSync(join(tmpdir(), 'fp-creds-'));
    const file = join(dir, 'credentials.yaml');
    writeFileSync(file, stringify({ ...secret, data }));
    // moto accepts any key pair: the placeholder keys of the example do.
    const r = await render({
      xr: 'examples/database/aws.yaml',
      composition: 'examples/database/composition-with-aws-credentials.yaml',
      functionsTarget: fn.target,
      observed: 'examples/database/observed/aws-ready.yaml',
      extraArgs: [
        '--function-credentials',
        file,
        '-e',
        join(repoRoot, 'examples/database/required/rds-connection.yaml'),
      ],
    });
    assert.equal(r.code, 0, `${r.stderr}\n${fn.logs()}`);
    const status = xrOf(r)['status'];
    assert.equal(status?.['aws']?.['dbInstanceStatus'], 'available');
    assert.equal(status?.['aws']?.['engineVersion'], '16.4');
    assert.ok(!r.stdout.includes('placeholder/placeholder'), 'the secret key is in the output');
  });
});
