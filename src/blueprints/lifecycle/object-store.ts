// A store made for one Database's backups (spec.backup.provision, or the
// platform's default provision in the Composition's Input): an S3 bucket of
// its own and an IAM user whose only permission is that bucket, through
// provider-upjet-aws's namespaced managed resources. The access key's
// connection Secret lands in the Database's namespace; the backup and restore
// Jobs and CloudNativePG's ObjectStore read it under the provider's own key
// names. The store counts as where backups go only once the bucket, the key
// and its Secret are there: until then nothing is written, and the Database
// says which one it waits for. Once made, none of it leaves desired state,
// whatever the spec says later: the bucket holds the backups, and the key is
// how they are reached.
import {
  ACCESS_KEY_SECRET_KEYS,
  expireBackups,
  type IamResource,
  type ManagedResource,
  type S3Resource,
} from '../../kinds/aws.js';
import { describe, judge } from '../../kinds/index.js';
import { record, str, type Obj } from '../../kube.js';
import { dnsLabel } from '../../names.js';
import { nextFiring } from '../../spec/cron.js';
import type { Context, Desired, Requirement } from '../blueprint.js';
import { holdBucket, USAGES, usagesRequirement } from './deletion-order.js';
import { appName, baseName, type DatabaseSpec, identity, meta, type ObjectStore, secretValue } from './database.js';

/** Composition-resource keys: one space with every placement's, so each says it is the store's. */
export const STORE_KEYS = {
  bucket: 'store-bucket',
  versioning: 'store-bucket-versioning',
  publicAccessBlock: 'store-bucket-public-access-block',
  encryption: 'store-bucket-encryption',
  lifecycle: 'store-bucket-lifecycle',
  user: 'store-user',
  policy: 'store-policy',
  attachment: 'store-policy-attachment',
  accessKey: 'store-access-key',
} as const;

/** Required resource: the access key's connection Secret, read to know it is there (never echoed). */
export const STORE_KEY_SECRET = 'store-access-key-secret';

/** What provision.aws says, with its default filled in. */
export interface Provision {
  region: string;
  providerConfigName: string;
}

const EXTERNAL_NAME = 'crossplane.io/external-name';
const DAY_MS = 86_400_000;

/**
 * The bucket's name: S3 names are global across every account, 3 to 63
 * characters, lowercase letters, digits and hyphens here (no dots: they
 * break TLS to virtual-hosted buckets). The namespace and name say whose it
 * is; a hash of the Database's identity (its uid) makes it unique, so a
 * Database made again under the same name after a Retain gets a bucket of
 * its own and never the one kept.
 */
export function bucketNameFor(owner: Context['owner']): string {
  const hash = identity(owner, 8);
  let stem = `${owner.namespace}-${appName(owner)}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/-+/g, '-');
  // Prefixes AWS keeps for itself.
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(stem) || !/^[a-z0-9]/.test(stem)) stem = `db-${stem}`;
  stem = stem.slice(0, 63 - '-backups-'.length - hash.length).replace(/-+$/, '');
  return `${stem}-backups-${hash}`;
}

/** The bucket's name, read back from the bucket once it exists: a name never changes under its data. */
function bucketName(ctx: Pick<Context, 'owner' | 'observed'>): string {
  return str(ctx.observed.get(STORE_KEYS.bucket), 'metadata', 'annotations', EXTERNAL_NAME) ?? bucketNameFor(ctx.owner);
}

/** The Secret the access key's id and secret are written to, in the Database's namespace. */
export function keySecretName(owner: Context['owner']): string {
  return dnsLabel(baseName(owner), 'backup-store-key');
}

/** The store as backups use it: its bucket and region, and the access key's Secret under the provider's key names. */
export function provisionedStore(ctx: Pick<Context, 'owner' | 'observed'>, provision: Provision): ObjectStore {
  return {
    bucket: bucketName(ctx),
    region: provision.region,
    credentialsSecretRef: { name: keySecretName(ctx.owner) },
    credentialKeys: { ...ACCESS_KEY_SECRET_KEYS },
  };
}

/** Whether backups go to a store made for this Database (only such a store names the provider's key names). */
export function madeForDatabase(store: ObjectStore): boolean {
  return store.credentialKeys !== undefined;
}

/** Whether observed state holds any part of a made store: then all of it stays composed. */
export function hasProvisionedStore(observed: ReadonlyMap<string, Obj>): boolean {
  return Object.values(STORE_KEYS).some((k) => observed.has(k));
}

/** What a store was made with, read back from its observed bucket (for a store no longer asked for). */
export function observedProvision(observed: ReadonlyMap<string, Obj>): Provision | undefined {
  const bucket = observed.get(STORE_KEYS.bucket);
  const region = str(bucket, 'spec', 'forProvider', 'region');
  if (!region) return undefined;
  return { region, providerConfigName: str(bucket, 'spec', 'providerConfigRef', 'name') ?? 'default' };
}

/**
 * The longest gap between two firings of a schedule, in days (rounded up):
 * over a year from a fixed day, so the answer is the same on every call.
 */
export function longestGapDays(schedule: string): number {
  let at = nextFiring(schedule, new Date(Date.UTC(2025, 0, 1)));
  const end = Date.UTC(2026, 0, 1);
  let longest = 0;
  for (let i = 0; at && at.getTime() < end && i < 1000; i++) {
    const next = nextFiring(schedule, at);
    if (!next) break;
    longest = Math.max(longest, next.getTime() - at.getTime());
    at = next;
  }
  return Math.max(1, Math.ceil(longest / DAY_MS));
}

/**
 * Days after which the bucket's lifecycle expires an object, and then its
 * noncurrent version: never sooner than retentionDays plus one day, plus the
 * longest gap of the schedule, so the newest backup (which retention never
 * removes) is not expired before the next one is taken, and what a
 * CloudNativePG base backup within retention needs stays. Retention itself
 * is the function's (removal Jobs, CloudNativePG's policy); the lifecycle is
 * the backstop for what no longer gets reconciled.
 */
export function expiryDays(spec: Pick<DatabaseSpec, 'backup'>): number {
  return spec.backup.retentionDays + 1 + longestGapDays(spec.backup.schedule);
}

/** The IAM policy: list the bucket (HeadBucket, and listing inside the Database's folder), read, write and remove objects in that folder. */
export function bucketPolicy(bucket: string, folder: string): string {
  const arn = `arn:aws:s3:::${bucket}`;
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'ListTheDatabaseFolder',
        Effect: 'Allow',
        Action: ['s3:ListBucket'],
        Resource: [arn],
        // IfExists: HeadBucket (which Barman Cloud asks before writing) names no prefix.
        Condition: { StringLikeIfExists: { 's3:prefix': [`${folder}*`] } },
      },
      {
        Sid: 'ReadWriteTheDatabaseFolder',
        Effect: 'Allow',
        Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        Resource: [`${arn}/${folder}*`],
      },
    ],
  });
}

/**
 * Retain: nothing of it is deleted with the Database (namespaced managed
 * resources have no deletionPolicy: leaving Delete out of the management
 * policies is what orphans the external resource). Delete: all of it goes,
 * the bucket only when empty (forceDestroy is never set).
 */
function managementPolicies(spec: Pick<DatabaseSpec, 'deletionPolicy'>): string[] {
  return spec.deletionPolicy === 'Delete' ? ['*'] : ['Observe', 'Create', 'Update', 'LateInitialize'];
}

type Ctx = Pick<Context, 'owner' | 'observed'>;

function managed<R extends ManagedResource<string, Obj>>(
  ctx: Ctx,
  spec: DatabaseSpec,
  provision: Provision,
  apiVersion: string,
  kind: string,
  name: string,
  forProvider: Obj,
  extra: Partial<R['spec']> = {},
): R {
  return {
    apiVersion,
    kind,
    metadata: meta(ctx.owner, spec, name),
    spec: {
      managementPolicies: managementPolicies(spec),
      providerConfigRef: { kind: 'ClusterProviderConfig', name: provision.providerConfigName },
      forProvider,
      ...extra,
    },
  } as R;
}

function tags(owner: Context['owner']): Record<string, string> {
  return { 'managed-by': 'function-platform', 'function-platform/database': `${owner.namespace}/${appName(owner)}` };
}

/** Every managed resource of the store, independent of the Database's readiness (a serving database is Ready). */
export function storeResources(ctx: Ctx, spec: DatabaseSpec, provision: Provision): Desired[] {
  const bucket = bucketName(ctx);
  const s3 = (kind: string, name: string, forProvider: Obj, extra = {}) =>
    managed<S3Resource>(
      ctx,
      spec,
      provision,
      's3.aws.m.upbound.io/v1beta1',
      kind,
      name,
      { region: provision.region, ...forProvider },
      extra,
    );
  const iam = (kind: string, name: string, forProvider: Obj, extra = {}) =>
    managed<IamResource>(ctx, spec, provision, 'iam.aws.m.upbound.io/v1beta1', kind, name, forProvider, extra);
  const ref = { bucketRef: { name: bucket } };
  const days = expiryDays(spec);
  const folder = `${appName(ctx.owner)}/`;

  // AWS refuses to delete a bucket that holds objects; forceDestroy would empty it first. Never: under Delete the
  // bucket goes only once someone has emptied it, and its Bucket resource says why it stays until then.
  const bucketObj = s3('Bucket', bucket, { forceDestroy: false, tags: tags(ctx.owner) });
  // Its name in AWS, said outright: a default never renames a bucket that holds backups.
  bucketObj.metadata.annotations = { [EXTERNAL_NAME]: bucket };
  const user = iam('User', bucket, { path: '/function-platform/', tags: tags(ctx.owner) });
  user.metadata.annotations = { [EXTERNAL_NAME]: bucket };
  const policy = iam('Policy', `${bucket}-policy`, {
    description: `Backups of Database ${ctx.owner.namespace}/${appName(ctx.owner)}: its own bucket only`,
    path: '/function-platform/',
    policy: bucketPolicy(bucket, folder),
    tags: tags(ctx.owner),
  });
  policy.metadata.annotations = { [EXTERNAL_NAME]: bucket };
  const userRef = { userRef: { name: bucket } };

  const all: Array<[string, Obj]> = [
    [STORE_KEYS.bucket, bucketObj],
    [
      STORE_KEYS.versioning,
      s3('BucketVersioning', `${bucket}-versioning`, { ...ref, versioningConfiguration: { status: 'Enabled' } }),
    ],
    [
      STORE_KEYS.publicAccessBlock,
      s3('BucketPublicAccessBlock', `${bucket}-public-access-block`, {
        ...ref,
        blockPublicAcls: true,
        blockPublicPolicy: true,
        ignorePublicAcls: true,
        restrictPublicBuckets: true,
      }),
    ],
    [
      STORE_KEYS.encryption,
      s3('BucketServerSideEncryptionConfiguration', `${bucket}-encryption`, {
        ...ref,
        rule: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: 'AES256' }, bucketKeyEnabled: true }],
      }),
    ],
    [
      STORE_KEYS.lifecycle,
      s3('BucketLifecycleConfiguration', `${bucket}-lifecycle`, {
        ...ref,
        rule: [expireBackups(days)],
      }),
    ],
    [STORE_KEYS.user, user],
    [STORE_KEYS.policy, policy],
    [
      STORE_KEYS.attachment,
      iam('UserPolicyAttachment', `${bucket}-attachment`, { ...userRef, policyArnRef: { name: `${bucket}-policy` } }),
    ],
    [
      STORE_KEYS.accessKey,
      iam('AccessKey', `${bucket}-key`, userRef, { writeConnectionSecretToRef: { name: keySecretName(ctx.owner) } }),
    ],
  ];
  return all.map(([key, object]) => ({ key, object, independent: true }));
}

/** What the store composes and says on a call. */
export interface StorePlan {
  resources: Desired[];
  requirements: Record<string, Requirement>;
  /** The store backups go to: only once the bucket, the key and its Secret are there. */
  store?: ObjectStore;
  /** What it waits for, in the user's words, until then. */
  waiting?: string;
}

/** Whether the Database published this very store before: it stays the store, whatever its resources say now. */
function publishedBefore(xr: Obj, bucket: string): boolean {
  const published = record(xr, 'status', 'backup', 'objectStore');
  return str(published, 'source') === 'provisioned' && str(published, 'bucket') === bucket;
}

/**
 * The store of a call. `provision` is what the spec or the platform asks for
 * now (undefined when neither does: a store made before is still composed,
 * as it was made, and no longer where backups go).
 */
export function planProvisionedStore(
  ctx: Pick<Context, 'owner' | 'observed' | 'required' | 'xr'>,
  spec: DatabaseSpec,
  provision: Provision | undefined,
): StorePlan | undefined {
  const asked = provision !== undefined;
  const made = hasProvisionedStore(ctx.observed);
  // Asked for with backups off: nothing is made for nothing; what was made stays.
  if (!made && (!asked || !spec.backup.enabled)) return undefined;
  const using = provision ?? observedProvision(ctx.observed);
  // Parts observed without their bucket (an interrupted creation) and nothing asked: nothing to compose them from.
  if (!using) return undefined;
  const resources = [...storeResources(ctx, spec, using), ...holdBucket(ctx, bucketName(ctx))];
  if (!asked) return { resources, requirements: { [USAGES]: usagesRequirement } };
  const store = provisionedStore(ctx, using);
  const secret = store.credentialsSecretRef.name;
  const requirements: Record<string, Requirement> = {
    [STORE_KEY_SECRET]: { apiVersion: 'v1', kind: 'Secret', matchName: secret, namespace: ctx.owner.namespace },
    [USAGES]: usagesRequirement,
  };
  if (publishedBefore(ctx.xr, store.bucket)) return { resources, requirements, store };
  const waiting = waitingFor(ctx, resources, secret);
  return waiting ? { resources, requirements, waiting } : { resources, requirements, store };
}

/** The first of bucket, access key and its Secret that is not there yet, said; undefined when all are. */
function waitingFor(
  ctx: Pick<Context, 'owner' | 'observed' | 'required'>,
  resources: Desired[],
  secret: string,
): string | undefined {
  for (const key of [STORE_KEYS.bucket, STORE_KEYS.accessKey]) {
    const seen = ctx.observed.get(key);
    const verdict = judge(seen);
    if (verdict.state === 'ready') continue;
    const what = describe(seen ?? resources.find((r) => r.key === key)!.object, key);
    return `waiting for the backup store made for this Database: ${what} is ${seen ? `not ready (${verdict.detail})` : 'not created yet'}; no backup is taken until it is`;
  }
  const answer = ctx.required.get(STORE_KEY_SECRET);
  const found = answer?.[0];
  const missing = Object.values(ACCESS_KEY_SECRET_KEYS).filter((k) => !secretValue(found, k));
  if (answer === undefined || !found || missing.length > 0)
    return `waiting for the backup store made for this Database: Secret ${secret} (the access key's connection Secret) ${found ? `has no ${missing.join(' or ')} yet` : 'is not written yet'}; no backup is taken until it is`;
  return undefined;
}
