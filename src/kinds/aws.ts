// provider-upjet-aws managed resources: judged by their Ready condition, an
// RDS instance also by what AWS says it is doing. Each namespaced kind names
// its cluster-scoped twin for claims mode.
import { str, type Obj } from '../kube.js';
import { byReadyCondition, orphansOnDelete } from './conditions.js';
import type { Family, Kind } from './kind.js';
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
