// The restore drill of an RDS snapshot (a DatabaseBackup of a Database on
// AWS), run only when someone asks for it (spec.verification.requested): a
// scratch instance costs money by the hour, so the Database's verify
// schedule never asks one of RDS (RDS keeps its own automated backups, and
// the Database schedules no DatabaseBackups there). The snapshot is made
// into a scratch RDS instance, in the Database's subnets and security groups
// so that a Job in the cluster reaches it; once AWS says it is available, the
// Job counts its tables and rows as its master user; once that is recorded,
// the instance goes, with no final snapshot. backup/drill.ts decides when a
// drill runs; this says what it composes and how it ended.
import { jobOf } from '../../../kinds/batch.js';
import { judge, SCRATCH_LABEL } from '../../../kinds/index.js';
import { rdsInstanceOf, type RdsInstance } from '../../../kinds/aws.js';
import { condition, str, type Obj } from '../../../kube.js';
import { boundedLabel, dnsLabel, shortHash } from '../../../names.js';
import { baseName } from '../database.js';
import { INSTANCE_CLASSES } from '../engine.js';
import { countJob, verifyJobName } from '../jobs.js';
import { DRILL_DEADLINE_MS, drillEnded, earlierDrill, judgeDrillJob, VERIFY_KEY } from './backup-methods.js';
import type { BackupCall, Drill, DrillResult } from './placement.js';
import { providerConfigRef } from './rds-names.js';

/** A drill's scratch RDS Instance's composition-resource key (the DatabaseBackup's), and its password Secret's. */
const DRILL_INSTANCE_KEY = 'drill-rds-instance';
const DRILL_PASSWORD_KEY = 'drill-rds-password';
/** AWS states of an instance being made from a snapshot that say the snapshot could not be restored. */
const RESTORE_FAILED = new Set(['incompatible-restore', 'restore-error', 'failed']);
/** AWS states in which a made instance serves connections: counted then (storage optimization can take hours). */
const SERVING = new Set(['available', 'backing-up', 'storage-optimization']);
/**
 * What AWS answers a restore it refuses, as the provider says it (first in
 * its LastAsyncOperation condition: upjet creates in the background, then in
 * Synced): no such snapshot, or a snapshot it cannot restore, judge the
 * backup; the others are the account's or the request's (a quota, a class,
 * a key, a subnet group) and judge nothing, so waiting on them would only
 * wait out the deadline.
 */
const SNAPSHOT_REFUSED = /DBSnapshotNotFound|InvalidRestoreFault/;
const REQUEST_REFUSED =
  /InvalidParameterCombination|InvalidParameterValue|StorageQuotaExceeded|InstanceQuotaExceeded|InsufficientDBInstanceCapacity|DBSubnetGroupNotFoundFault|KMSKeyNotAccessibleFault|StorageTypeNotSupported|AccessDenied|UnauthorizedOperation/;
/** How long the count may take: a restored volume loads from S3 as it is first read, so a full scan is slow. */
const COUNT_DEADLINE_SECONDS = 3 * 3600;
/** The location of a DatabaseBackup's RDS snapshot: this, then its identifier. */
const RDS_SNAPSHOT = 'rds-snapshot:';
/** RDS for PostgreSQL's own database, closed to the master user. */
const RDS_ADMIN_DATABASE = 'rdsadmin';

/** The scratch Instance of drill `request` of a backup, as Kubernetes knows it (its Secrets are named after it). */
export const rdsScratchName = (backup: string, request: string) =>
  boundedLabel(63, backup, 'drill', request.toLowerCase());

/**
 * Its identifier in AWS: unique per account and region, so the namespace is
 * part of it, and a hash of the DatabaseBackup's uid and the request, so two
 * clusters' drills, or two requests of one backup, never share one.
 */
export function rdsScratchIdentifier(backup: { namespace: string; name: string; uid: string }, request: string) {
  const token = shortHash(`${backup.uid || `${backup.namespace}/${backup.name}`}#${request}`, 8);
  return dnsLabel(`${backup.namespace}-${backup.name}`.replace(/-+/g, '-'), 'drill', token).replace(/-+/g, '-');
}

/**
 * A drill's scratch instance: made from snapshot `snapshot`, of the
 * Database's instance class (a smaller one may not take the snapshot's
 * storage), of the snapshot's size, in its subnets and security groups (the
 * count reaches it as applications reach the Database), single-AZ, its
 * automated backups deleted with it, and no final snapshot (it is a copy), and with a master password
 * of its own that the provider generates into a Secret the drill composes
 * (it goes with the drill; the snapshot's own password is not the drill's to
 * read). It carries the scratch label, by which the drill alone may throw it
 * away.
 */
function scratchInstance(call: BackupCall, name: string, identifier: string, snapshot: string): RdsInstance {
  const { input, target } = call;
  const { spec } = target;
  const aws = spec.aws!;
  return {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'Instance',
    metadata: {
      name,
      namespace: input.owner.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'function-platform', [SCRATCH_LABEL]: 'drill' },
    },
    spec: {
      managementPolicies: ['*'],
      providerConfigRef: providerConfigRef(spec),
      forProvider: {
        region: aws.region,
        identifier,
        snapshotIdentifier: snapshot,
        instanceClass: aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
        // No size and no backup retention: the snapshot's own. A larger size would be a storage change after the
        // restore (storage optimization, hours), and a retention of 0 set after it an outage mid-count.
        storageType: 'gp3',
        storageEncrypted: true,
        multiAz: false,
        publiclyAccessible: false,
        autoGeneratePassword: true,
        passwordSecretRef: { name: passwordSecretName(name), key: 'password' },
        autoMinorVersionUpgrade: false,
        applyImmediately: true,
        deletionProtection: false,
        skipFinalSnapshot: true,
        deleteAutomatedBackups: true,
        ...(aws.subnetIds?.length
          ? { dbSubnetGroupNameRef: { name: dnsLabel(baseName(target.owner), 'subnets') } }
          : {}),
        ...(aws.securityGroupIds?.length ? { vpcSecurityGroupIds: aws.securityGroupIds } : {}),
        tags: {
          'managed-by': 'function-platform',
          'function-platform/drill': `${input.owner.namespace}/${input.owner.name}`,
        },
      },
      writeConnectionSecretToRef: { name: connectionSecretName(name) },
    },
  };
}

const passwordSecretName = (scratch: string) => `${scratch}-password`;
const connectionSecretName = (scratch: string) => `${scratch}-rds`;

/**
 * The Secret the provider generates the scratch instance's master password
 * into: composed empty (the provider writes a password only where there is
 * none, and server-side apply leaves what the provider wrote alone), so
 * that it is deleted with the drill.
 */
function passwordSecret(call: BackupCall, scratch: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: passwordSecretName(scratch),
      namespace: call.input.owner.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'function-platform', [SCRATCH_LABEL]: 'drill' },
    },
    type: 'Opaque',
  };
}

/**
 * An RDS snapshot's drill. AWS failing to restore the snapshot (the
 * instance ends incompatible-restore, restore-error or failed), or having no
 * such snapshot, is a Failed drill. The instance stuck in another state that
 * needs someone (no capacity, a network that does not fit), a count that
 * cannot get in, and six hours without a count are Incomplete: they judge
 * nothing.
 */
export function rdsDrill(call: BackupCall, request: string, startedAt: string | undefined): Drill {
  const { input, target, previous } = call;
  const out: Drill = { resources: [], requirements: {}, warnings: [] };
  const since = startedAt ?? input.now.toISOString();
  const running = { request, result: 'Running', startedAt: since };
  const overdue = input.now.getTime() - Date.parse(since) > DRILL_DEADLINE_MS;
  const end = (result: DrillResult, reason: string) => drillEnded(input, request, since, result, reason);
  const location = str(previous, 'location') ?? '';
  const snapshot = location.startsWith(RDS_SNAPSHOT) ? location.slice(RDS_SNAPSHOT.length) : '';
  if (!snapshot)
    return end(
      'Incomplete',
      `DatabaseBackup ${input.owner.name} names no RDS snapshot (its location is ${JSON.stringify(location)}): nothing to restore`,
    );
  const name = rdsScratchName(input.owner.name, request);
  const identifier = rdsScratchIdentifier(input.owner, request);
  const jobName = verifyJobName(input.owner, request);
  // What an earlier request made is still there: it goes first, then this one starts.
  const earlier = earlierDrill(input, DRILL_INSTANCE_KEY, name, jobName);
  if (earlier) {
    if (overdue) return end('Incomplete', `${earlier} of an earlier drill was still not deleted after 6 hours`);
    out.status = running;
    return out;
  }
  const instance = { key: DRILL_INSTANCE_KEY, object: scratchInstance(call, name, identifier, snapshot) };
  const password = { key: DRILL_PASSWORD_KEY, object: passwordSecret(call, name) };
  const observedObj = input.observed.get(DRILL_INSTANCE_KEY);
  const observed = rdsInstanceOf(observedObj);
  // Upjet creates in the background: a refused restore is said first by LastAsyncOperation, then by Synced.
  const said = [condition(observedObj, 'LastAsyncOperation'), condition(observedObj, 'Synced')]
    .filter((c) => c?.status === 'False')
    .map((c) => c?.message ?? '')
    .join(' ');
  if (observed?.status && RESTORE_FAILED.has(observed.status))
    return end(
      'Failed',
      `AWS could not restore RDS snapshot ${snapshot} into scratch instance ${identifier} (AWS status: ${observed.status})`,
    );
  if (SNAPSHOT_REFUSED.test(said))
    return end('Failed', `AWS refused to restore RDS snapshot ${snapshot}: ${said.slice(0, 300)}`);
  if (REQUEST_REFUSED.test(said))
    return end(
      'Incomplete',
      `AWS refused to make scratch instance ${identifier}: ${said.slice(0, 300)}; nothing was judged`,
    );
  const verdict = observedObj ? judge(observedObj) : undefined;
  if (verdict?.state === 'failed')
    return end('Incomplete', `scratch instance ${identifier} needs someone: ${verdict.detail}; nothing was judged`);
  // Counted once available; a count under way goes on whatever AWS says meanwhile.
  const counting = str(input.observed.get(VERIFY_KEY), 'metadata', 'name') === jobName;
  const serving = observed?.address !== undefined && SERVING.has(observed.status ?? '');
  if (!serving && !counting) {
    if (overdue)
      return end(
        'Incomplete',
        `scratch instance ${identifier} was not available after 6 hours (${observed?.status ? `AWS status: ${observed.status}` : said || 'not created'}): nothing was judged`,
      );
    out.resources = [instance, password];
    out.status = running;
    return out;
  }
  // Available for six hours, or a count under way as long, and nothing counted: the count's Job cannot be made or run.
  const count = jobOf(input.observed.get(VERIFY_KEY));
  if (overdue && !count?.complete && !count?.failed)
    return end('Incomplete', `scratch instance ${identifier} was not counted within 6 hours: nothing was judged`);
  const skip = target.spec.engine === 'postgres' ? [RDS_ADMIN_DATABASE] : [];
  const job = {
    key: VERIFY_KEY,
    object: countJob(
      input.owner,
      target,
      { secret: connectionSecretName(name), skip, deadlineSeconds: COUNT_DEADLINE_SECONDS },
      request,
    ),
  };
  return judgeDrillJob(
    call,
    request,
    since,
    jobName,
    [instance, password, job],
    {},
    { verify: 'the count on the scratch RDS instance' },
    'drill',
  );
}
