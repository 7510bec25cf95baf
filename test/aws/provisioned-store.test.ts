// The store the function makes for a Database (spec.backup.provision),
// replayed against moto's server through the AWS SDK: what provider-upjet-aws
// would send for each composed managed resource (its spec.forProvider, its
// external name), call by call: CreateBucket, PutBucketVersioning,
// PutPublicAccessBlock, PutBucketEncryption, PutBucketLifecycleConfiguration,
// CreateUser, CreatePolicy and AttachUserPolicy, CreateAccessKey. The replay
// is a stand-in for the provider (it maps forProvider to API calls the way
// the provider's Terraform resources do); the API answering is moto's. moto
// runs with IAM authentication on (INITIAL_NO_AUTH_ACTION_COUNT), so the
// access key is held to the policy the function wrote: a dump lands in the
// Database's bucket with it, and the same key is refused on another bucket.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AttachUserPolicyCommand,
  CreateAccessKeyCommand,
  CreatePolicyCommand,
  CreateUserCommand,
  IAMClient,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import {
  CreateBucketCommand,
  GetBucketEncryptionCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetPublicAccessBlockCommand,
  ListObjectsV2Command,
  PutBucketEncryptionCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { STORE_KEYS } from '../../src/blueprints/lifecycle/object-store.js';
import { runFunction } from '../../src/function.js';
import type { Obj } from '../../src/kube.js';
import { buildRequest } from '../../src/render.js';
import { answered, asObserved, databaseXr, k8sSecret, NAMESPACE } from '../support/database.js';
import { healthyStatus } from '../support/observed-state.js';
import { type Moto, motoSkipReason, startMoto } from '../support/moto.js';

const skip = motoSkipReason();
const region = 'eu-west-1';
const KEY_SECRET = 'orders-db-backup-store-key';

const spec = { engine: 'postgres', storageGB: 20, backup: { provision: { aws: { region } } } };
const xr = (status?: Obj) => {
  const o = databaseXr(spec, { bare: true, ...(status ? { status } : {}) });
  (o['metadata'] as Obj)['creationTimestamp'] = '2026-11-01T00:00:00Z';
  return o;
};
const call = (x: Obj, observed: Obj[] = [], required = {}) =>
  runFunction(buildRequest(x, observed, [], undefined, required));
const desired = (rsp: RunFunctionResponse, key: string) => rsp.desired!.resources[key]!.resource as Obj;
const fp = (rsp: RunFunctionResponse, key: string) => (desired(rsp, key)['spec'] as Obj)['forProvider'] as Obj;
const external = (rsp: RunFunctionResponse, key: string) =>
  String(((desired(rsp, key)['metadata'] as Obj)['annotations'] as Obj)['crossplane.io/external-name']);

/** HTTP status of an SDK error (403 for a refusal). */
const statusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

describe('the made store replayed against moto (IAM authentication on)', { skip }, () => {
  let moto: Moto;
  let admin: { s3: S3Client; iam: IAMClient };
  let composed: RunFunctionResponse;
  let bucket: string;
  let key: { accessKeyId: string; secretAccessKey: string };

  before(async () => {
    // Three calls without authentication: an administrator and its key. Everything after is signed and judged.
    moto = await startMoto({ INITIAL_NO_AUTH_ACTION_COUNT: '3' });
    const anonymous = new IAMClient({
      region,
      endpoint: moto.endpoint,
      credentials: { accessKeyId: 'AKIABOOTSTRAP0000000', secretAccessKey: 'bootstrap' },
    });
    await anonymous.send(new CreateUserCommand({ UserName: 'platform-admin' }));
    await anonymous.send(
      new PutUserPolicyCommand({
        UserName: 'platform-admin',
        PolicyName: 'everything',
        PolicyDocument: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
        }),
      }),
    );
    const made = await anonymous.send(new CreateAccessKeyCommand({ UserName: 'platform-admin' }));
    anonymous.destroy();
    const credentials = {
      accessKeyId: made.AccessKey!.AccessKeyId!,
      secretAccessKey: made.AccessKey!.SecretAccessKey!,
    };
    admin = {
      s3: new S3Client({ region, endpoint: moto.endpoint, credentials, forcePathStyle: true }),
      iam: new IAMClient({ region, endpoint: moto.endpoint, credentials }),
    };
    composed = call(xr());
    bucket = external(composed, STORE_KEYS.bucket);
  });
  after(async () => {
    admin?.s3.destroy();
    admin?.iam.destroy();
    await moto?.stop();
  });

  test('every bucket setting the function composes is accepted, and reads back as composed', async () => {
    const bucketFp = fp(composed, STORE_KEYS.bucket);
    assert.equal(bucketFp['region'], region);
    await admin.s3.send(
      new CreateBucketCommand({ Bucket: bucket, CreateBucketConfiguration: { LocationConstraint: region } }),
    );
    const versioning = fp(composed, STORE_KEYS.versioning)['versioningConfiguration'] as Obj;
    await admin.s3.send(
      new PutBucketVersioningCommand({
        Bucket: bucket,
        VersioningConfiguration: { Status: versioning['status'] as 'Enabled' },
      }),
    );
    const block = fp(composed, STORE_KEYS.publicAccessBlock);
    await admin.s3.send(
      new PutPublicAccessBlockCommand({
        Bucket: bucket,
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: block['blockPublicAcls'] as boolean,
          BlockPublicPolicy: block['blockPublicPolicy'] as boolean,
          IgnorePublicAcls: block['ignorePublicAcls'] as boolean,
          RestrictPublicBuckets: block['restrictPublicBuckets'] as boolean,
        },
      }),
    );
    const sse = (fp(composed, STORE_KEYS.encryption)['rule'] as Obj[]).map((r) => ({
      ApplyServerSideEncryptionByDefault: {
        SSEAlgorithm: (r['applyServerSideEncryptionByDefault'] as Obj)['sseAlgorithm'] as 'AES256',
      },
      BucketKeyEnabled: r['bucketKeyEnabled'] as boolean,
    }));
    await admin.s3.send(
      new PutBucketEncryptionCommand({ Bucket: bucket, ServerSideEncryptionConfiguration: { Rules: sse } }),
    );
    const rules = (fp(composed, STORE_KEYS.lifecycle)['rule'] as Obj[]).map((r) => ({
      ID: r['id'] as string,
      Status: r['status'] as 'Enabled',
      Filter: { Prefix: ((r['filter'] as Obj[])[0]!['prefix'] as string) ?? '' },
      Expiration: { Days: (r['expiration'] as Obj[])[0]!['days'] as number },
      NoncurrentVersionExpiration: {
        NoncurrentDays: (r['noncurrentVersionExpiration'] as Obj[])[0]!['noncurrentDays'] as number,
      },
      AbortIncompleteMultipartUpload: {
        DaysAfterInitiation: (r['abortIncompleteMultipartUpload'] as Obj[])[0]!['daysAfterInitiation'] as number,
      },
    }));
    await admin.s3.send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: rules } }),
    );

    assert.equal((await admin.s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status, 'Enabled');
    const pab = (await admin.s3.send(new GetPublicAccessBlockCommand({ Bucket: bucket })))
      .PublicAccessBlockConfiguration!;
    assert.deepEqual(
      [pab.BlockPublicAcls, pab.BlockPublicPolicy, pab.IgnorePublicAcls, pab.RestrictPublicBuckets],
      [true, true, true, true],
    );
    const enc = await admin.s3.send(new GetBucketEncryptionCommand({ Bucket: bucket }));
    assert.equal(
      enc.ServerSideEncryptionConfiguration!.Rules![0]!.ApplyServerSideEncryptionByDefault!.SSEAlgorithm,
      'AES256',
    );
    const life = await admin.s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    const rule = life.Rules![0]!;
    assert.ok((rule.Expiration!.Days ?? 0) >= 7 + 1, `objects expire after ${rule.Expiration!.Days} days`);
    assert.ok((rule.NoncurrentVersionExpiration!.NoncurrentDays ?? 0) >= 7 + 1);
  });

  test('the IAM user, its policy, the attachment and the access key are accepted', async () => {
    const userName = external(composed, STORE_KEYS.user);
    const user = fp(composed, STORE_KEYS.user);
    await admin.iam.send(new CreateUserCommand({ UserName: userName, Path: user['path'] as string }));
    const policy = fp(composed, STORE_KEYS.policy);
    const created = await admin.iam.send(
      new CreatePolicyCommand({
        PolicyName: external(composed, STORE_KEYS.policy),
        Path: policy['path'] as string,
        Description: policy['description'] as string,
        PolicyDocument: policy['policy'] as string,
      }),
    );
    // The attachment names both by reference: the User object (its external name) and the Policy's ARN.
    const attachment = fp(composed, STORE_KEYS.attachment);
    assert.equal(
      (attachment['userRef'] as Obj)['name'],
      (desired(composed, STORE_KEYS.user)['metadata'] as Obj)['name'],
    );
    assert.equal(
      (attachment['policyArnRef'] as Obj)['name'],
      (desired(composed, STORE_KEYS.policy)['metadata'] as Obj)['name'],
    );
    await admin.iam.send(new AttachUserPolicyCommand({ UserName: userName, PolicyArn: created.Policy!.Arn! }));
    const made = await admin.iam.send(new CreateAccessKeyCommand({ UserName: userName }));
    key = { accessKeyId: made.AccessKey!.AccessKeyId!, secretAccessKey: made.AccessKey!.SecretAccessKey! };
    assert.ok(key.accessKeyId && key.secretAccessKey);
  });

  test("a dump uploaded with the key, where the function's Job puts it, lands; the same key is refused elsewhere", async () => {
    assert.ok(key, 'the access key was made (the test before)');
    // The connection Secret as provider-upjet-aws writes it for an AccessKey: the id as username, the secret as password.
    const connection = k8sSecret(KEY_SECRET, NAMESPACE, {
      username: key.accessKeyId,
      password: key.secretAccessKey,
      'attribute.secret': key.secretAccessKey,
    });
    // The Database once its store is there (the replay made it: every managed resource Ready, the Secret written).
    const observed = asObserved(composed, (k, obj) =>
      Object.values(STORE_KEYS).includes(k as never)
        ? { conditions: [{ type: 'Ready', status: 'True', reason: 'Available' }] }
        : healthyStatus(obj),
    );
    const there = call(xr({ phase: 'Ready' }), observed, answered({ 'store-access-key-secret': [connection] }));
    const status = (there.desired!.composite!.resource as Obj)['status'] as Obj;
    const store = (status['backup'] as Obj)['objectStore'] as Obj;
    assert.equal(store['source'], 'provisioned');
    assert.equal(store['bucket'], bucket);
    // A DatabaseBackup of it: the dump Job's upload step, its environment resolved from the Secret as the kubelet would.
    const backup = runFunction(
      buildRequest(
        {
          apiVersion: 'example.com/v1',
          kind: 'DatabaseBackup',
          metadata: { name: 'orders-replayed', namespace: NAMESPACE, uid: 'uid-replayed' },
          spec: { databaseRef: { name: 'orders' } },
        },
        [],
        [],
        undefined,
        answered({ database: [{ ...xr(), status }] }),
      ),
    );
    const job = Object.values(backup.desired!.resources).find((r) => (r.resource as Obj)['kind'] === 'Job');
    assert.ok(job, 'the DatabaseBackup composes its dump Job');
    const upload = (
      ((((job!.resource as Obj)['spec'] as Obj)['template'] as Obj)['spec'] as Obj)['containers'] as Obj[]
    )[0]!;
    const data = connection['data'] as Record<string, string>;
    const env: Record<string, string> = {};
    for (const e of upload['env'] as Obj[]) {
      const ref = (e['valueFrom'] as Obj | undefined)?.['secretKeyRef'] as Obj | undefined;
      if (ref) {
        assert.equal(ref['name'], KEY_SECRET);
        const value = data[String(ref['key'])];
        assert.ok(value !== undefined, `the Secret has the key ${String(ref['key'])} the Job reads`);
        env[String(e['name'])] = Buffer.from(value, 'base64').toString('utf8');
      } else env[String(e['name'])] = String(e['value']);
    }
    assert.equal(env['BUCKET'], bucket);
    assert.equal(env['AWS_REGION'], region);
    const asJob = new S3Client({
      region: env['AWS_REGION'],
      endpoint: moto.endpoint,
      credentials: { accessKeyId: env['AWS_ACCESS_KEY_ID']!, secretAccessKey: env['AWS_SECRET_ACCESS_KEY']! },
      forcePathStyle: true,
    });
    try {
      const dump = Buffer.from('PGDMP stand-in dump body: what pg_dump -Fc would write');
      await asJob.send(new PutObjectCommand({ Bucket: env['BUCKET'], Key: env['KEY'], Body: dump }));
      const listed = await asJob.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'orders/' }));
      assert.deepEqual(
        listed.Contents?.map((c) => c.Key),
        [env['KEY']],
      );
      const got = await admin.s3.send(new GetObjectCommand({ Bucket: bucket, Key: env['KEY'] }));
      assert.equal(Buffer.from(await got.Body!.transformToByteArray()).toString(), dump.toString());

      // Another bucket: the key has no business there.
      await admin.s3.send(
        new CreateBucketCommand({
          Bucket: 'someone-elses-backups',
          CreateBucketConfiguration: { LocationConstraint: region },
        }),
      );
      const refused = async (what: string, send: () => Promise<unknown>) => {
        const err = await send().then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err, `${what} is refused`);
        assert.equal(statusOf(err), 403, `${what}: ${String(err)}`);
      };
      await refused('a write to another bucket', () =>
        asJob.send(new PutObjectCommand({ Bucket: 'someone-elses-backups', Key: 'orders/x.dump', Body: 'x' })),
      );
      await refused('a read of another bucket', () =>
        asJob.send(new ListObjectsV2Command({ Bucket: 'someone-elses-backups' })),
      );
      await refused('a write outside the Database folder', () =>
        asJob.send(new PutObjectCommand({ Bucket: bucket, Key: 'elsewhere/x.dump', Body: 'x' })),
      );
      await refused('bucket administration', () =>
        asJob.send(
          new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Suspended' } }),
        ),
      );
    } finally {
      asJob.destroy();
    }
  });
});
