// provider-upjet-aws managed resources: judged by their Ready condition, an
// RDS instance also by what AWS says it is doing. Each namespaced kind names
// its cluster-scoped twin for claims mode.
import { type Composed, condition, numbers, record, str, strings, type Obj } from '../kube.js';
import { byReadyCondition, orphansOnDelete } from './conditions.js';
import { accessor, type Family, type Kind } from './kind.js';
import { failed, progressing, updating, type Verdict } from './verdict.js';

/** RDS instance states that mean a change is being applied (configuring-* included). */
const RDS_CHANGING = /^(modifying|upgrading|storage-optimization|resizing|backing-up|configuring)/;
/** RDS instance states that need someone to act. */
const RDS_FAILED = new Set([
  'failed',
  'storage-full',
  'incompatible-network',
  'incompatible-option-group',
  'incompatible-parameters',
  'incompatible-restore',
  'inaccessible-encryption-credentials',
  'inaccessible-encryption-credentials-recoverable',
  'restore-error',
  'stopped',
  'insufficient-capacity',
]);

/** A whole number written as text (an annotation), or undefined. */
function wholeNumber(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

function rdsInstance(obj: Obj): Verdict {
  const status = str(obj, 'status', 'atProvider', 'status');
  const whenFalse = (detail: string) =>
    status && RDS_CHANGING.test(status)
      ? updating(detail)
      : status && RDS_FAILED.has(status)
        ? failed(detail)
        : progressing(detail);
  return byReadyCondition(obj, whenFalse) ?? progressing('waiting for a Ready condition');
}

function notAReplica(obj: Obj): boolean {
  const forProvider = (obj['spec'] as Obj | undefined)?.['forProvider'] as Obj | undefined;
  return forProvider?.['replicateSourceDbRef'] === undefined && forProvider?.['replicateSourceDb'] === undefined;
}

const managed = (obj: Obj) => byReadyCondition(obj) ?? progressing('waiting for a Ready condition');

function both(group: string, kind: string, clusterScoped: string, extra: Partial<Kind> = {}): Kind[] {
  const judge = extra.judge ?? managed;
  const clusterGroup = clusterScoped.slice(0, clusterScoped.indexOf('/'));
  const data = extra.holdsData ? { holdsData: extra.holdsData, keepsDataWhenDeleted: orphansOnDelete } : {};
  return [
    { group, kind, judge, clusterScoped, ...data },
    { group: clusterGroup, kind, judge, ...data },
  ];
}

export const AWS_RDS: Family = [
  // A read replica is a copy of its primary's data: it may go.
  ...both('rds.aws.m.upbound.io', 'Instance', 'rds.aws.upbound.io/v1beta3', {
    judge: rdsInstance,
    holdsData: notAReplica,
  }),
  ...both('rds.aws.m.upbound.io', 'SubnetGroup', 'rds.aws.upbound.io/v1beta1'),
  // Deleting a Snapshot managed resource deletes the snapshot.
  ...both('rds.aws.m.upbound.io', 'Snapshot', 'rds.aws.upbound.io/v1beta1', { holdsData: true }),
];

export const AWS_S3: Family = [
  ...both('s3.aws.m.upbound.io', 'Bucket', 's3.aws.upbound.io/v1beta2', { holdsData: true }),
  ...both('s3.aws.m.upbound.io', 'BucketVersioning', 's3.aws.upbound.io/v1beta2'),
  ...both('s3.aws.m.upbound.io', 'BucketServerSideEncryptionConfiguration', 's3.aws.upbound.io/v1beta2'),
  ...both('s3.aws.m.upbound.io', 'BucketPublicAccessBlock', 's3.aws.upbound.io/v1beta1'),
  ...both('s3.aws.m.upbound.io', 'BucketLifecycleConfiguration', 's3.aws.upbound.io/v1beta2'),
];

/** The IAM user, policy and access key of a store made for one Database's backups (none of them holds data). */
export const AWS_IAM: Family = [
  ...both('iam.aws.m.upbound.io', 'User', 'iam.aws.upbound.io/v1beta1'),
  ...both('iam.aws.m.upbound.io', 'Policy', 'iam.aws.upbound.io/v1beta1'),
  ...both('iam.aws.m.upbound.io', 'UserPolicyAttachment', 'iam.aws.upbound.io/v1beta1'),
  ...both('iam.aws.m.upbound.io', 'AccessKey', 'iam.aws.upbound.io/v1beta1'),
];

/**
 * An observed RDS Instance: what it is set to (spec.forProvider: its
 * identifier, engine and version, storage, how it was made from a source) and
 * what AWS reports (status.atProvider: its address, its state, the version
 * and storage it has, how far back it can be restored), and the Ready
 * condition's message.
 */
export const rdsInstanceOf = accessor((obj) => {
  const pitr = record(obj, 'spec', 'forProvider', 'restoreToPointInTime');
  const reported = numbers(obj, ['status', 'atProvider'], ['port', 'allocatedStorage']);
  return {
    ...strings(obj, ['metadata'], ['name', 'creationTimestamp']),
    /** The spec.storageGB the function composed it for (an annotation): allocatedStorage may be a grown floor. */
    requestedStorage: wholeNumber(str(obj, 'metadata', 'annotations', 'function-platform.dev/requested-storage-gb')),
    ...strings(obj, ['spec', 'forProvider'], ['identifier', 'engine', 'engineVersion', 'snapshotIdentifier']),
    ...numbers(obj, ['spec', 'forProvider'], ['allocatedStorage', 'maxAllocatedStorage', 'backupRetentionPeriod']),
    ...(pitr ? { restoreToPointInTime: strings(pitr, [], ['sourceDbInstanceIdentifier', 'restoreTime']) } : {}),
    ...strings(obj, ['status', 'atProvider'], ['address', 'status', 'engineVersionActual', 'latestRestorableTime']),
    port: reported.port,
    /** The storage it has, which RDS may have grown past what it is set to. */
    reportedAllocatedStorage: reported.allocatedStorage,
    readyMessage: condition(obj, 'Ready')?.message,
  };
});

/** An observed RDS Snapshot: its name and identifier in AWS, its Ready condition, AWS's state and size. */
export const rdsSnapshotOf = accessor((obj) => ({
  name: str(obj, 'metadata', 'name'),
  instance: str(obj, 'spec', 'forProvider', 'dbInstanceIdentifier'),
  externalName: str(obj, 'metadata', 'annotations', 'crossplane.io/external-name'),
  ready: condition(obj, 'Ready'),
  ...strings(obj, ['status', 'atProvider'], ['status']),
  ...numbers(obj, ['status', 'atProvider'], ['allocatedStorage']),
}));

/** A provider-upjet-aws managed resource as the function composes it. */
export type ManagedResource<Kind extends string, Parameters> = Composed<
  Kind,
  {
    managementPolicies?: string[];
    providerConfigRef: { kind: string; name: string };
    forProvider: Parameters;
    writeConnectionSecretToRef?: { name: string };
  }
>;

/** What the function sets of an RDS Instance (spec.forProvider). */
export type RdsInstanceParameters = {
  /** Required by the spec's rules; typed as the spec has it. */
  region?: string;
  identifier: string;
  engine?: string;
  engineVersion?: string;
  /** A read replica's primary. */
  replicateSourceDbRef?: { name: string };
  snapshotIdentifier?: string;
  restoreToPointInTime?: {
    sourceDbInstanceIdentifier: string;
    restoreTime?: string;
    useLatestRestorableTime?: boolean;
  };
  allowMajorVersionUpgrade?: boolean;
  instanceClass: string;
  allocatedStorage?: number;
  maxAllocatedStorage?: number;
  maintenanceWindow?: string;
  applyImmediately?: boolean;
  storageType: string;
  storageEncrypted: boolean;
  multiAz?: boolean;
  publiclyAccessible: boolean;
  dbName?: string;
  username?: string;
  autoGeneratePassword?: boolean;
  passwordSecretRef?: { name: string; key: string };
  backupRetentionPeriod?: number;
  backupWindow?: string;
  copyTagsToSnapshot?: boolean;
  autoMinorVersionUpgrade: boolean;
  deletionProtection?: boolean;
  skipFinalSnapshot: boolean;
  finalSnapshotIdentifier?: string;
  deleteAutomatedBackups?: boolean;
  dbSubnetGroupNameRef?: { name: string };
  vpcSecurityGroupIds?: string[];
  tags: Record<string, string>;
};

export type RdsInstance = ManagedResource<'Instance', RdsInstanceParameters>;
export type RdsSubnetGroup = ManagedResource<
  'SubnetGroup',
  { region?: string; description: string; subnetIds?: string[]; tags: Record<string, string> }
>;
/** A bucket and its configuration resources: each its own parameters besides the region. */
export type S3Resource = ManagedResource<string, { region?: string } & Record<string, unknown>>;
/** An IAM user, policy, attachment or access key: global, no region. */
export type IamResource = ManagedResource<string, Record<string, unknown>>;

/**
 * The keys provider-upjet-aws writes into an AccessKey's connection Secret
 * (config/iam of the provider): the key's id as username, its secret as
 * password, besides attribute.* keys of its own.
 */
export const ACCESS_KEY_SECRET_KEYS = { accessKeyId: 'username', secretAccessKey: 'password' } as const;

/**
 * S3's regional endpoint. For a client that takes its region from nowhere
 * else (the Barman Cloud plugin reads one only from a Secret key), naming the
 * endpoint is what keeps it from asking us-east-1 for a bucket elsewhere.
 */
export function s3RegionalEndpoint(region: string): string {
  return `https://s3.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

/**
 * The lifecycle rule of a bucket that holds backups: every object and every
 * noncurrent version expires `days` after it was written (or replaced), and an
 * upload left unfinished goes after a day.
 */
export function expireBackups(days: number) {
  return {
    id: 'expire-backups',
    status: 'Enabled',
    filter: [{ prefix: '' }],
    expiration: [{ days }],
    noncurrentVersionExpiration: [{ noncurrentDays: days }],
    abortIncompleteMultipartUpload: [{ daysAfterInitiation: 1 }],
  };
}
