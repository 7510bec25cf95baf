// A Database on AWS: an RDS instance, as provider-upjet-aws v2 namespaced
// managed resources, with read replicas and a subnet group when asked. Its
// backups are RDS's own automated backups (retention and window from
// spec.backup, point-in-time restore), mirrored into status; a DatabaseBackup
// adds a snapshot on demand. Made from a snapshot or from the source instance
// at a time; a DatabaseRestore makes the next generation's instance the same
// way beside the live one, and the connection Secret's host switches to it.
// RDS grows the storage itself up to spec.maxStorageGB and upgrades in its
// maintenance window. An S3 bucket that an earlier version composed stays
// composed (it may hold objects) but is not named as a backup location:
// nothing ever wrote backups to it.
import { earliestRestorable, type ExternalFacts } from '../../../facts.js';
import {
  type RdsInstance,
  type RdsInstanceParameters,
  rdsInstanceOf,
  type RdsSubnetGroup,
  rdsSnapshotOf,
  type S3Resource,
} from '../../../kinds/aws.js';
import { expireBackups } from '../../../kinds/aws.js';
import { judge, type Verdict } from '../../../kinds/index.js';
import { str, type Obj } from '../../../kube.js';
import { dnsLabel, shortHash } from '../../../names.js';
import type { Desired, Requirement, Summary } from '../../blueprint.js';
import { backedUp, backupSummary, oneObject } from './backup-methods.js';
import { rdsDrill } from './rds-drill.js';
import { AWS_KEYS, providerConfigRef, rdsIdentifierOf } from './rds-names.js';
import {
  APP_USER,
  baseName,
  compareVersions,
  connectionSecret,
  type DatabaseInput,
  dbname,
  identity,
  majorVersion,
  meta,
  type ResolvedSpec,
  secretValue,
} from '../database.js';
import { backupWindow, databaseName, INSTANCE_CLASSES } from '../engine.js';
import type { Source } from '../source.js';
import {
  asMade,
  byConnection,
  CONNECTION_KEY,
  handOver,
  hasInstance,
  instanceName,
  keyOf,
  madeFrom,
  withInstanceMeta,
} from '../instances.js';
import type {
  BackupMethod,
  ComposeCall,
  Composed,
  DatabaseCall,
  Deletion,
  InstanceMeta,
  Placement,
  RestoreTarget,
} from './placement.js';

/** How an RDS instance is created from the source: its snapshot, or the source instance at a time. */
export type RdsRestore =
  | { snapshotIdentifier: string }
  | {
      restoreToPointInTime: {
        sourceDbInstanceIdentifier: string;
        restoreTime?: string;
        useLatestRestorableTime?: boolean;
      };
    };

/** The live generation: the instance whose address the connection Secret names. */
const { liveGeneration, liveInstance, live } = byConnection(AWS_KEYS.instance, rdsInstanceOf, (seen) => seen.address);

/** The provider's own connection Secret, read through Crossplane's required resources. */
export const RDS_CONNECTION = 'rds-connection';

/**
 * Retain must survive the Database's deletion. Namespaced (v2) managed
 * resources have no deletionPolicy; leaving Delete out of the management
 * policies is what makes the provider orphan the external resource.
 */
function managementPolicies(spec: ResolvedSpec, keep = false): string[] {
  return keep || spec.deletionPolicy === 'Retain' ? ['Observe', 'Create', 'Update', 'LateInitialize'] : ['*'];
}

/** The provider's connection Secret of a generation's instance. */
const rdsSecretName = (input: DatabaseInput, generation = 0) => dnsLabel(instanceName(input.owner, generation), 'rds');
const masterPasswordName = (input: DatabaseInput) => dnsLabel(baseName(input.owner), 'master-password');

/**
 * RDS identifiers are unique per account and region, so two namespaces'
 * "orders" must differ: the namespace is part of it, and a hash of the XR
 * keeps it unique when it has to be shortened. RDS allows 63 characters,
 * letters, digits and single hyphens, starting with a letter.
 */
export function rdsIdentifier(input: Pick<DatabaseInput, 'owner'>, generation = 0): string {
  const first = rdsIdentifierOf(input.owner);
  return generation === 0 ? first : dnsLabel(first, `r${generation}`).replace(/-+/g, '-');
}

/** Bucket names are global: stable (from the XR's uid), lowercase, at most 63 characters. */
export function bucketName(input: DatabaseInput): string {
  const token = identity(input.owner, 10);
  const stem = `${baseName(input.owner)}-backups`.slice(0, 63 - token.length - 1).replace(/-+$/, '');
  return `${stem}-${token}`;
}

/**
 * One generation's RDS instance. `restore` makes it from a snapshot or the
 * source instance at a time (it then takes the source's database and master
 * user); `keep` orphans it when deleted, whatever the deletion policy (an
 * instance a restore replaced is handed to the user).
 */
function instance(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation = 0,
  opts: { restore?: RdsRestore; keep?: boolean; meta?: InstanceMeta; holdVersion?: string } = {},
): RdsInstance {
  const aws = spec.aws!;
  const retain = spec.deletionPolicy === 'Retain';
  const finalSnapshot = keepsFinalSnapshot(spec);
  const window = backupWindow(spec.backup.schedule);
  const identifier = rdsIdentifier(input, generation);
  const forProvider: RdsInstanceParameters = {
    region: aws.region,
    identifier,
    engine: spec.engine,
    engineVersion: opts.holdVersion ?? spec.version,
    ...(opts.restore ?? {}),
    // Only when the spec asks for a newer major version than RDS runs, and the instance is let move to it.
    ...(upgrading(input, spec) && !opts.holdVersion ? { allowMajorVersionUpgrade: true } : {}),
    instanceClass: aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
    // A disk RDS grew (autoscaling, or by hand) is the floor: asking for less would ask RDS to shrink it.
    allocatedStorage: storageFloorGB(input, spec, generation),
    // Storage autoscaling: RDS grows the instance by itself up to this.
    ...(spec.maxStorageGB !== undefined ? { maxAllocatedStorage: spec.maxStorageGB } : {}),
    ...(spec.maintenance?.window ? { maintenanceWindow: spec.maintenance.window } : {}),
    // Storage changes now, version changes in the maintenance window, unless the spec says otherwise.
    applyImmediately: spec.maintenance?.applyImmediately ?? !upgrading(input, spec, true),
    storageType: 'gp3',
    storageEncrypted: true,
    multiAz: spec.highAvailability,
    publiclyAccessible: false,
    // A restored instance has the source's database and master user.
    ...(opts.restore ? {} : { dbName: dbname(input.owner), username: APP_USER }),
    // The provider generates the password into this Secret once and never replaces it.
    autoGeneratePassword: true,
    passwordSecretRef: { name: masterPasswordName(input), key: 'password' },
    // Backups off keeps one day: 0 would make RDS delete the automated backups it has.
    backupRetentionPeriod: spec.backup.enabled ? spec.backup.retentionDays : 1,
    ...(spec.backup.enabled && window ? { backupWindow: window } : {}),
    copyTagsToSnapshot: true,
    autoMinorVersionUpgrade: true,
    deletionProtection: retain,
    // Retain orphans the instance (no Delete in the management policies); Delete takes it, after RDS made the
    // final snapshot unless spec.backup.finalSnapshot is false.
    skipFinalSnapshot: !finalSnapshot,
    ...(finalSnapshot ? { finalSnapshotIdentifier: finalSnapshotIdentifier(input, generation) } : {}),
    deleteAutomatedBackups: !retain,
    ...(aws.subnetIds?.length ? { dbSubnetGroupNameRef: { name: dnsLabel(baseName(input.owner), 'subnets') } } : {}),
    ...(aws.securityGroupIds?.length ? { vpcSecurityGroupIds: aws.securityGroupIds } : {}),
    tags: tags(input),
  };
  const restored = opts.meta ?? { labels: {}, annotations: {} };
  const metadata = withInstanceMeta(
    meta(input.owner, spec, instanceName(input.owner, generation), restored.labels),
    restored,
  );
  // What was asked, apart from the floor composed: the shrink guard compares a new spec.storageGB with it.
  metadata.annotations = { ...metadata.annotations, [REQUESTED_STORAGE]: String(spec.storageGB) };
  return {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'Instance',
    metadata,
    spec: {
      managementPolicies: managementPolicies(spec, opts.keep),
      providerConfigRef: providerConfigRef(spec),
      forProvider,
      writeConnectionSecretToRef: { name: rdsSecretName(input, generation) },
    },
  };
}

/** On an RDS Instance: the spec.storageGB it was composed for (its allocatedStorage may be larger: RDS grew it). */
export const REQUESTED_STORAGE = 'function-platform.dev/requested-storage-gb';

/** Whether deleting the instance leaves a final snapshot: always under Retain, under Delete unless told not to. */
function keepsFinalSnapshot(spec: Pick<ResolvedSpec, 'deletionPolicy' | 'backup'>): boolean {
  return spec.deletionPolicy === 'Retain' || spec.backup.finalSnapshot !== false;
}

/**
 * The final snapshot's identifier: stable across calls, and unique per
 * Database (the XR's uid) and generation, so a Database made again under the
 * same name, or a restore's next instance, never collides with an older final
 * snapshot (RDS refuses a deletion whose final snapshot name exists). RDS
 * allows 255 letters, digits and single hyphens, starting with a letter and
 * not ending with a hyphen; the identifier is at most 48 + 13 characters.
 */
export function finalSnapshotIdentifier(input: Pick<DatabaseInput, 'owner'>, generation = 0): string {
  const stem = rdsIdentifier(input, generation).slice(0, 48).replace(/-+$/, '');
  // Generation 0 keeps the token earlier versions composed; the others add the generation to what is hashed.
  const token =
    generation === 0
      ? identity(input.owner, 6)
      : shortHash(`${input.owner.uid || `${input.owner.namespace}/${input.owner.name}`}#${generation}`, 6);
  return `${stem}-final-${token}`;
}

/**
 * The size a generation's instance is composed with: spec.storageGB, or what
 * RDS reports when it grew past it, and never less than composed before (a
 * status read without the size must not undo the floor). A smaller spec than
 * what was asked is refused before this (rules.ts).
 */
function storageFloorGB(input: DatabaseInput, spec: ResolvedSpec, generation: number): number {
  const seen = rdsInstanceOf(input.observed.get(keyOf(AWS_KEYS.instance, generation)));
  return Math.max(spec.storageGB, seen?.reportedAllocatedStorage ?? 0, seen?.allocatedStorage ?? 0);
}

/**
 * What deleting the Database does to the live RDS instance. The final
 * snapshot is made by RDS while the provider deletes the instance, after the
 * Database and the DatabaseBackups it composed are gone: nothing of the
 * function runs then to record it as a DatabaseBackup, and a record made
 * beforehand would name a snapshot that does not exist yet. So it is named
 * here, by the identifier RDS will give it, with the way to restore it.
 */
function rdsDeletion(input: DatabaseInput, live: number): Deletion {
  const { spec } = input;
  const id = rdsIdentifier(input, live);
  const replicas = spec.replicas > 0 ? ' and its read replicas' : '';
  if (spec.deletionPolicy === 'Retain')
    return {
      keeps: `Retain: deleting this Database leaves RDS instance ${id} in AWS, no longer managed, with deletion protection on and its automated backups; delete it there when it is no longer needed`,
    };
  if (!keepsFinalSnapshot(spec))
    return {
      keeps: `Delete with spec.backup.finalSnapshot false: deleting this Database deletes RDS instance ${id}${replicas} and its automated backups, with no final snapshot; nothing of its data stays in AWS but the snapshots of DatabaseBackups that still exist`,
    };
  const snapshot = finalSnapshotIdentifier(input, live);
  return {
    keeps: `Delete: deleting this Database deletes RDS instance ${id}${replicas} and its automated backups; RDS first takes final snapshot ${snapshot}, which stays in AWS (not a DatabaseBackup: nothing runs after the Database is gone to record one). Restore it into a Database made again with spec.restore.fromSnapshot.identifier ${snapshot}; set spec.backup.finalSnapshot: false to keep nothing`,
    finalSnapshot: snapshot,
  };
}

/** What the user is told of an RDS instance handed over: it runs on, unmanaged, and how to delete it. */
export function keptRds(identifier: string, why: string): string {
  return `RDS instance ${identifier} (${why}) keeps running in AWS, no longer managed; delete it when it is no longer needed: aws rds delete-db-instance --db-instance-identifier ${identifier} --final-db-snapshot-identifier ${identifier}-final (first: aws rds modify-db-instance --db-instance-identifier ${identifier} --no-deletion-protection)`;
}

/** The key of the i-th read replica (1-based) of a generation's instance. */
export const replicaKey = (i: number, generation = 0) => keyOf(`rds-replica-${i}`, generation);

/**
 * The i-th RDS read replica of the live instance: a copy made and kept by RDS
 * from the primary (replicateSourceDbRef). Its master user and database are
 * the primary's, so it names neither; and its management policies leave out
 * LateInitialize, so the provider does not write the primary's username into
 * it (a replica may not set one). Being a copy, it is deleted with the
 * Database or when replicas are turned down.
 */
function replica(input: DatabaseInput, spec: ResolvedSpec, live: number, i: number): RdsInstance {
  const aws = spec.aws!;
  const name = dnsLabel(instanceName(input.owner, live), `ro${i}`);
  // RDS for MySQL upgrades a replica on its own, and before its source (replicasFirst); RDS for PostgreSQL
  // upgrades replicas with their source, and a replica there names no version.
  const behind = spec.engine === 'mysql' && replicaBehind(input, spec, live, i);
  const version =
    spec.engine === 'mysql'
      ? {
          engineVersion: spec.version,
          ...(behind
            ? { allowMajorVersionUpgrade: true, applyImmediately: spec.maintenance?.applyImmediately ?? false }
            : {}),
          ...(spec.maintenance?.window ? { maintenanceWindow: spec.maintenance.window } : {}),
        }
      : {};
  return {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'Instance',
    metadata: meta(input.owner, spec, name),
    spec: {
      managementPolicies: ['Observe', 'Create', 'Update', 'Delete'],
      providerConfigRef: providerConfigRef(spec),
      forProvider: {
        region: aws.region,
        identifier: dnsLabel(rdsIdentifier(input, live), `ro${i}`).replace(/-+/g, '-'),
        replicateSourceDbRef: { name: instanceName(input.owner, live) },
        ...version,
        instanceClass: aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
        storageType: 'gp3',
        storageEncrypted: true,
        publiclyAccessible: false,
        autoMinorVersionUpgrade: true,
        skipFinalSnapshot: true,
        ...(aws.securityGroupIds?.length ? { vpcSecurityGroupIds: aws.securityGroupIds } : {}),
        tags: tags(input),
      },
    },
  };
}

/**
 * Whether the i-th replica of a generation does not run the major version the
 * spec asks for, in RDS's own word (engineVersionActual): what it is set to is
 * this function's, and a replica RDS has not made yet runs nothing.
 */
function replicaBehind(input: DatabaseInput, spec: ResolvedSpec, generation: number, i: number): boolean {
  const seen = rdsInstanceOf(input.observed.get(replicaKey(i, generation)));
  const running = majorVersion(spec.engine, seen?.engineVersionActual);
  return running === undefined || compareVersions(spec.version, running) > 0;
}

/**
 * A major upgrade of RDS for MySQL with read replicas goes replicas first:
 * RDS refuses to upgrade a source past its replicas. Until each replica runs
 * the new major version, the primary stays on the version it is set to.
 * Undefined when nothing waits: another engine, no replicas, no major
 * upgrade, or the primary already set to move (it is never set back).
 */
function replicasFirst(
  input: DatabaseInput,
  spec: ResolvedSpec,
): { holdVersion: string; behind: number; of: number } | undefined {
  if (spec.engine !== 'mysql' || spec.replicas === 0 || !upgrading(input, spec)) return undefined;
  const primary = live(input.observed);
  const setTo = primary?.engineVersion;
  if (setTo === undefined || compareVersions(spec.version, majorVersion(spec.engine, setTo) ?? setTo) <= 0)
    return undefined;
  const generation = liveGeneration(input.observed);
  let behind = 0;
  for (let i = 1; i <= spec.replicas; i++) if (replicaBehind(input, spec, generation, i)) behind++;
  return behind > 0 ? { holdVersion: setTo, behind, of: spec.replicas } : undefined;
}

/** Where read-only connections go: the first replica of a generation's instance that RDS reports ready with an address. */
export function replicaAddress(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation: number,
): { host: string; port: number } | undefined {
  for (let i = 1; i <= spec.replicas; i++) {
    const r = input.observed.get(replicaKey(i, generation));
    const { address: host, port } = rdsInstanceOf(r) ?? {};
    if (host && port && judge(r).ready) return { host, port };
  }
  return undefined;
}

/**
 * Whether the spec asks for another version than the instance runs (RDS's
 * engineVersionActual; what it is set to until RDS says): a newer one, or
 * with `any` any other. It stays so until RDS has made the change, however
 * long the maintenance window makes it wait.
 */
function upgrading(input: DatabaseInput, spec: ResolvedSpec, any = false): boolean {
  const inst = live(input.observed);
  const running = majorVersion(spec.engine, inst?.engineVersionActual ?? inst?.engineVersion);
  if (running === undefined) return false;
  const cmp = compareVersions(spec.version, running);
  return any ? cmp !== 0 : cmp > 0;
}

function tags(input: DatabaseInput): Record<string, string> {
  return {
    'managed-by': 'function-platform',
    'function-platform/database': `${input.owner.namespace}/${input.owner.claim?.name ?? input.owner.name}`,
  };
}

function subnetGroup(input: DatabaseInput, spec: ResolvedSpec): RdsSubnetGroup {
  return {
    apiVersion: 'rds.aws.m.upbound.io/v1beta1',
    kind: 'SubnetGroup',
    metadata: meta(input.owner, spec, dnsLabel(baseName(input.owner), 'subnets')),
    spec: {
      managementPolicies: managementPolicies(spec),
      providerConfigRef: providerConfigRef(spec),
      forProvider: {
        region: spec.aws!.region,
        description: `Subnets of Database ${input.owner.namespace}/${input.owner.name}`,
        subnetIds: spec.aws!.subnetIds,
        tags: tags(input),
      },
    },
  };
}

function s3(input: DatabaseInput, spec: ResolvedSpec, kind: string, name: string, forProvider: Obj): S3Resource {
  return {
    apiVersion: 's3.aws.m.upbound.io/v1beta1',
    kind,
    metadata: meta(input.owner, spec, name),
    spec: {
      managementPolicies: managementPolicies(spec),
      providerConfigRef: providerConfigRef(spec),
      forProvider: { region: spec.aws!.region, ...forProvider },
    },
  };
}

function bucketResources(input: DatabaseInput, spec: ResolvedSpec): Desired[] {
  const bucket = bucketName(input);
  const ref = { bucketRef: { name: bucket } };
  const days = spec.backup.retentionDays;
  // Delete was asked for explicitly: a bucket AWS refuses to delete while it holds backups would never go.
  const bucketObj = s3(input, spec, 'Bucket', bucket, {
    forceDestroy: spec.deletionPolicy === 'Delete',
    tags: tags(input),
  });
  // The bucket's name in AWS is its object name, said outright so a default never changes it.
  bucketObj.metadata.annotations = { 'crossplane.io/external-name': bucket };
  return [
    { key: AWS_KEYS.bucket, object: bucketObj },
    {
      key: AWS_KEYS.versioning,
      object: s3(input, spec, 'BucketVersioning', `${bucket}-versioning`, {
        ...ref,
        versioningConfiguration: { status: 'Enabled' },
      }),
    },
    {
      key: AWS_KEYS.encryption,
      object: s3(input, spec, 'BucketServerSideEncryptionConfiguration', `${bucket}-encryption`, {
        ...ref,
        rule: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: 'AES256' }, bucketKeyEnabled: true }],
      }),
    },
    {
      key: AWS_KEYS.publicAccessBlock,
      object: s3(input, spec, 'BucketPublicAccessBlock', `${bucket}-public-access-block`, {
        ...ref,
        blockPublicAcls: true,
        blockPublicPolicy: true,
        ignorePublicAcls: true,
        restrictPublicBuckets: true,
      }),
    },
    {
      key: AWS_KEYS.lifecycle,
      object: s3(input, spec, 'BucketLifecycleConfiguration', `${bucket}-lifecycle`, {
        ...ref,
        rule: [expireBackups(days)],
      }),
    },
  ];
}

/** Host and port of a generation's instance (the live one by default), from what the provider observed. */
export function instanceAddress(input: DatabaseInput, generation?: number): { host: string; port: number } | undefined {
  const inst = rdsInstanceOf(
    generation === undefined ? liveInstance(input.observed) : input.observed.get(keyOf(AWS_KEYS.instance, generation)),
  );
  return inst?.address && inst.port ? { host: inst.address, port: inst.port } : undefined;
}

/** The connection a generation's instance offers, from the provider's Secret and what it observed; undefined until whole. */
function connectionOf(input: DatabaseInput, generation: number, fallback?: Obj) {
  const providerSecret = input.required.get(rdsConnection(generation))?.[0];
  const password = secretValue(providerSecret, 'password') ?? secretValue(fallback, 'password');
  const address = instanceAddress(input, generation);
  const host = address?.host ?? secretValue(providerSecret, 'address') ?? secretValue(fallback, 'host');
  const port = address?.port ?? portOf(secretValue(providerSecret, 'port')) ?? portOf(secretValue(fallback, 'port'));
  if (!password || !host || port === undefined) return undefined;
  return { host, port, password, username: secretValue(providerSecret, 'username') ?? APP_USER };
}

/** The required resource that is a generation's provider Secret. */
const rdsConnection = (generation: number) => keyOf(RDS_CONNECTION, generation);

/** Whether the restored generation can take the connection: its instance ready and its Secret whole. */
function targetReady(input: DatabaseInput, target: RestoreTarget): boolean {
  return (
    judge(input.observed.get(keyOf(AWS_KEYS.instance, target.generation))).ready &&
    connectionOf(input, target.generation) !== undefined
  );
}

function compose(call: ComposeCall): Composed {
  const { input, instances, target, serving } = call;
  const { spec } = input;
  const { live } = instances;
  const ns = input.owner.namespace;
  const database = call.restore.database;
  // Each generation as it was made: its creation settings and what it carries.
  const order = replicasFirst(input, spec);
  const rds = (g: number, keep: boolean, fresh?: { made?: RdsRestore; target?: RestoreTarget }) => {
    const { made, meta } = asMade(call, AWS_KEYS.instance, g, restoreOf, fresh);
    const hold = g === live && order ? { holdVersion: order.holdVersion } : {};
    return instance(input, spec, g, { keep, meta, ...hold, ...(made ? { restore: made } : {}) });
  };
  const made = call.restore.creation?.made as RdsRestore | undefined;
  const resources: Desired[] = [
    { key: keyOf(AWS_KEYS.instance, live), object: rds(live, false, live === 0 && made ? { made } : undefined) },
  ];
  // Our connection Secret is built from the provider's, which holds the generated password.
  const requirements: Record<string, Requirement> = {
    [rdsConnection(live)]: { apiVersion: 'v1', kind: 'Secret', matchName: rdsSecretName(input, live), namespace: ns },
  };
  if (target) {
    const source = target.source;
    const restore = restoreFrom(source, rdsIdentifier(input, live));
    resources.push({
      key: keyOf(AWS_KEYS.instance, target.generation),
      object: rds(target.generation, false, { made: restore, target }),
      independent: true,
    });
    requirements[rdsConnection(target.generation)] = {
      apiVersion: 'v1',
      kind: 'Secret',
      matchName: rdsSecretName(input, target.generation),
      namespace: ns,
    };
  }
  const handed = handOver(input, AWS_KEYS.instance, call.release, rdsPlacement.handOverWhy, (g) => [
    { key: keyOf(AWS_KEYS.instance, g), object: rds(g, true), independent: true },
  ]);
  resources.push(...handed.resources);
  // Read replicas of the live instance: they do not hold up the Database's readiness (the primary serves). A
  // restore's switch makes another instance live: its replicas are made anew, the old ones (copies) go.
  for (let i = 1; i <= spec.replicas; i++)
    resources.push({ key: replicaKey(i, live), object: replica(input, spec, live, i), independent: true });
  if (spec.aws?.subnetIds?.length) resources.push({ key: AWS_KEYS.subnetGroup, object: subnetGroup(input, spec) });
  // An earlier version's bucket stays: whatever is in it is not ours to delete.
  if (input.observed.has(AWS_KEYS.bucket)) resources.push(...bucketResources(input, spec));

  const observedOwn = input.observed.get(CONNECTION_KEY);
  const c = connectionOf(input, serving, serving === live ? observedOwn : undefined);
  // Reads go to the serving instance's own replicas, the primary until one is ready.
  const readOnly = serving === live ? replicaAddress(input, spec, live) : undefined;
  const connection: Desired | undefined = c
    ? {
        key: CONNECTION_KEY,
        object: connectionSecret(input, spec, {
          ...c,
          dbname: database ?? dbname(input.owner),
          ...(readOnly ? { readOnly } : {}),
        }),
      }
    : // Never drop it: keep what exists until the provider's Secret can be read again.
      observedOwn && { key: CONNECTION_KEY, object: keepSecret(observedOwn) };
  return { resources, requirements, releasing: handed.releasing, ...(connection ? { connection } : {}) };
}

function portOf(text: string | undefined): number | undefined {
  const port = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
  return port > 0 && port < 65536 ? port : undefined;
}

/** The observed connection Secret composed again as it is (a copy, not built). */
function keepSecret(observed: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: str(observed, 'metadata', 'name'),
      namespace: str(observed, 'metadata', 'namespace'),
      labels: observed['metadata'] ? ((observed['metadata'] as Obj)['labels'] ?? {}) : {},
    },
    type: str(observed, 'type') ?? 'Opaque',
    data: (observed['data'] as Obj | undefined) ?? {},
  };
}

/**
 * RDS automated backups as the provider observes them: where a restore can
 * start from, and the window a point-in-time restore can reach. The earliest
 * time is AWS's when the step has credentials (facts), else the later of the
 * instance's creation and the retention period back.
 */
export function awsBackupStatus(input: DatabaseInput, spec: ResolvedSpec, facts?: ExternalFacts): Obj | undefined {
  const inst = live(input.observed);
  const latest = inst?.latestRestorableTime;
  if (!spec.backup.enabled && !latest) return undefined;
  if (!latest) return {};
  const retention = inst?.backupRetentionPeriod ?? spec.backup.retentionDays;
  const created = inst?.creationTimestamp;
  const earliest =
    facts?.aws?.instance?.earliestRestorableTime ??
    earliestRestorable(created ? new Date(created) : undefined, retention, input.now).earliestRestorableTime;
  // Named only once RDS can restore from its automated backups.
  return {
    latestRestorableTime: latest,
    ...(earliest ? { earliestRestorableTime: earliest } : {}),
    location: `rds-automated-backups:${inst?.identifier ?? rdsIdentifier(input)}`,
  };
}

/** How an observed instance was made from a source, as it was composed: kept for as long as it exists. */
function restoreOf(instance: Obj): RdsRestore | undefined {
  const inst = rdsInstanceOf(instance);
  if (inst?.snapshotIdentifier) return { snapshotIdentifier: inst.snapshotIdentifier };
  const pitr = inst?.restoreToPointInTime;
  if (!pitr?.sourceDbInstanceIdentifier) return undefined;
  return {
    restoreToPointInTime: {
      sourceDbInstanceIdentifier: pitr.sourceDbInstanceIdentifier,
      ...(pitr.restoreTime ? { restoreTime: pitr.restoreTime } : { useLatestRestorableTime: true }),
    },
  };
}

/** What the user reads while the live instance is not ready: AWS's own word for its state. */
function instanceBlocker(input: DatabaseCall, verdicts: ReadonlyMap<string, Verdict>, live: number) {
  const verdict = verdicts.get(keyOf(AWS_KEYS.instance, live));
  if (!verdict || verdict.ready) return undefined;
  const inst = rdsInstanceOf(input.observed.get(keyOf(AWS_KEYS.instance, live)));
  if (!inst) return { message: `RDS instance ${rdsIdentifier(input, live)}: not created yet`, verdict };
  const state = inst.status;
  const created = inst.address !== undefined;
  const said = inst.readyMessage;
  const aws = state ? ` (AWS status: ${state})` : '';
  return {
    message: `RDS instance ${rdsIdentifier(input, live)}: ${created ? 'not ready' : 'being created'}${aws}${said ? `: ${said}` : ''}`,
    verdict,
  };
}

/** RDS snapshots on demand, beside RDS's automated backups. */
const snapshots: BackupMethod = {
  name: 'rds-snapshot',
  // AWS is making it from the instance.
  reads: ({ input }) => {
    const snapshot = rdsSnapshotOf(input.observed.get(AWS_KEYS.snapshot));
    return (
      snapshot !== undefined && snapshot.status !== undefined && !['available', 'failed'].includes(snapshot.status)
    );
  },
  restores: 'a Database on AWS restores an RDS snapshot',
  // On request only (spec.verification.requested): a scratch instance costs money, so no schedule asks for one.
  drill: rdsDrill,
  needsObjectStore: false,
  accepts: () => true,
  // The snapshot's identifier is the object's name: unique in the namespace. Of the instance that served when it
  // was taken; it holds the data, so it stays.
  take: (call) =>
    oneObject(call, AWS_KEYS.snapshot, 'rds.aws.m.upbound.io/v1beta1', 'Snapshot', {
      forProvider: {
        region: call.target.spec.aws!.region,
        dbInstanceIdentifier: backedUp(
          call,
          AWS_KEYS.snapshot,
          ['spec', 'forProvider', 'dbInstanceIdentifier'],
          rdsIdentifierOf(call.target.owner),
        ),
      },
      providerConfigRef: providerConfigRef(call.target.spec),
    }),
  read: ({ input, attempt }, base): Summary => {
    const snapshot = rdsSnapshotOf(input.observed.get(AWS_KEYS.snapshot));
    const fields = {
      ...base,
      ...(snapshot?.instance ? { instance: snapshot.instance } : {}),
      attempts: attempt,
      restorable: false,
    };
    if (!snapshot) return backupSummary('Pending', 'creating the RDS snapshot', fields);
    const { name, ready, status: aws } = snapshot;
    const location = `rds-snapshot:${snapshot.externalName ?? name}`;
    if (ready?.status === 'True' && (aws === undefined || aws === 'available')) {
      const size = snapshot.allocatedStorage;
      return backupSummary('Completed', `RDS snapshot ${name} is available`, {
        ...fields,
        location,
        completedAt: ready.lastTransitionTime,
        restorable: true,
        ...(size !== undefined ? { sizeBytes: size * 2 ** 30 } : {}),
      });
    }
    if (aws === 'failed' || (ready?.status === 'False' && ready.reason === 'ReconcileError')) {
      const why = ready?.message ?? `AWS status ${aws}`;
      return backupSummary('Failed', `RDS snapshot ${name} failed: ${why}`, { ...fields, failureReason: why }, [
        { reason: 'BackupFailed', message: `RDS snapshot ${name} failed: ${why}` },
      ]);
    }
    return backupSummary('Running', `RDS snapshot ${name}: ${aws ?? 'being created'}`, { ...fields, location });
  },
};

/** How an instance is made from a restore's source: a snapshot (a DatabaseBackup's or one named), or `instance`'s history. */
function restoreFrom(source: Source, instance: string): RdsRestore {
  if (source.kind === 'backup') return { snapshotIdentifier: source.location.replace(/^rds-snapshot:/, '') };
  if (source.kind === 'snapshot') return { snapshotIdentifier: source.identifier };
  return {
    restoreToPointInTime: {
      sourceDbInstanceIdentifier: instance,
      ...(source.time ? { restoreTime: source.time } : { useLatestRestorableTime: true }),
    },
  };
}

export const rdsPlacement: Placement = {
  words: 'on AWS',
  asked: 'aws',
  instanceKey: AWS_KEYS.instance,
  instanceName: (input, generation) => rdsIdentifier(input, generation),
  liveGeneration,
  existsIn: (observed) => hasInstance(observed, AWS_KEYS.instance) || observed.has(AWS_KEYS.bucket),

  refuses: (spec) => [
    ...(!spec.aws?.region
      ? [
          {
            field: 'spec.aws.region',
            message:
              'spec.aws.region is required with placement aws (the platform may set one: defaults.database.aws.region in the Composition step Input)',
          },
        ]
      : []),
    ...(spec.storageGB < 20
      ? [
          {
            field: 'spec.storageGB',
            message: `spec.storageGB is ${spec.storageGB}; spec.storageGB must be at least 20 with placement aws (the RDS minimum)`,
          },
        ]
      : []),
    ...(spec.maxStorageGB !== undefined && spec.maxStorageGB < 20
      ? [
          {
            field: 'spec.maxStorageGB',
            message: `spec.maxStorageGB is ${spec.maxStorageGB}; spec.maxStorageGB must be at least 20 with placement aws (the RDS minimum)`,
          },
        ]
      : []),
  ],
  refusesUpgrade: () => undefined,
  refusesBecoming: () => undefined,

  composedVersion: (observed) => live(observed)?.engineVersion,
  composedEngine: (observed) => live(observed)?.engine,
  composedStorageGB: (observed) => {
    // Only what was asked is refused to shrink: what RDS grew past it (autoscaling, before or after
    // spec.maxStorageGB went) stays composed as the floor (allocatedStorage), so a smaller spec asks no shrink.
    const asked = live(observed)?.requestedStorage ?? live(observed)?.allocatedStorage;
    return asked !== undefined ? [asked] : [];
  },
  runningVersion: (input, facts) => live(input.observed)?.engineVersionActual ?? facts?.aws?.instance?.engineVersion,
  pendingVersion: (input, from, wanted) => {
    const order = replicasFirst(input, input.spec);
    if (order)
      return `upgrading the read replicas first, as RDS for MySQL requires: ${order.of - order.behind} of ${order.of} run ${wanted}; then the primary (${from} runs)`;
    const state = live(input.observed)?.status;
    const window = input.spec.maintenance?.window ? ` ${input.spec.maintenance.window}` : '';
    return state === 'upgrading'
      ? `upgrading ${from} → ${wanted}`
      : `version ${wanted} is pending: RDS applies it in the instance's maintenance window${window} (${from} runs)`;
  },
  upgradesInPlace: () => true,
  storage: (input) => {
    const capacityGB = live(input.observed)?.reportedAllocatedStorage;
    const asked = input.spec.storageGB;
    const grown = capacityGB !== undefined && capacityGB > asked;
    return {
      ...(capacityGB !== undefined ? { capacityGB } : {}),
      ...(input.spec.maxStorageGB !== undefined ? { maxGB: input.spec.maxStorageGB } : {}),
      ...(grown
        ? {
            message: `RDS grew the storage to ${capacityGB} GB, past spec.storageGB ${asked}: ${capacityGB} GB is the floor now (RDS never shrinks storage)`,
          }
        : {}),
    };
  },
  endpoint: (input, generation) => instanceAddress(input, generation),
  readEndpoint: (input, generation) => replicaAddress(input, input.spec, generation),
  primary: () => undefined,

  prerequisite: () => undefined,
  instanceBlocker,
  connectionPending: (input, live) =>
    `waiting for provider-upjet-aws to write the connection Secret of RDS instance ${rdsIdentifier(input, live)}`,
  kept: (input, generation, why) => [keptRds(rdsIdentifier(input, generation), why)],
  deletion: (input, live) => rdsDeletion(input, live),

  backup: snapshots,
  automatedBackups: {
    health: (input) => {
      const { spec } = input;
      if (!spec.backup.enabled)
        return {
          ok: false,
          reason: 'BackupsDisabled',
          message: 'spec.backup.enabled is false: RDS keeps one day of automated backups',
        };
      const latest = live(input.observed)?.latestRestorableTime;
      return latest
        ? {
            ok: true,
            reason: 'AutomatedBackups',
            message: `RDS automated backups, kept ${spec.backup.retentionDays} days; restorable to ${latest}`,
          }
        : { ok: false, reason: 'NoRestorableTime', message: 'RDS reports no restorable time yet' };
    },
  },
  backupStatus: (input, _live, facts) => awsBackupStatus(input, input.spec, facts),
  pointInTime: { kept: true, archiveMissing: () => undefined },
  restore: {
    by: 'creation',
    // The source's snapshot, or the source instance at the point asked; the source's database comes with it.
    creation: (input, source, sourceInstance) => {
      // A snapshot's database is named as it was: it comes with the data.
      if (source.kind === 'snapshot') return { database: source.database, made: restoreFrom(source, '') };
      const database = databaseName(source.database);
      const sourceOwner = { kind: 'Database', name: source.database, uid: '', namespace: input.owner.namespace };
      return { database, made: restoreFrom(source, sourceInstance ?? rdsIdentifierOf(sourceOwner)) };
    },
    creationOf: (instance) => madeFrom(instance, restoreOf),
  },
  progress: (input, target) => {
    const name = rdsIdentifier(input, target.generation);
    if (targetReady(input, target)) return { state: 'ready', detail: `RDS instance ${name} is available` };
    const obj = input.observed.get(keyOf(AWS_KEYS.instance, target.generation));
    return { state: 'restoring', detail: `RDS instance ${name}: ${obj ? judge(obj).detail : 'being created'}` };
  },
  handOverWhy: 'replaced by a restore; the RDS instance is orphaned, not deleted',

  // Whether AWS can make the instance at all, and what it says of it: asked about the identifier composed.
  query: (input) => {
    const spec = input.spec;
    if (!spec.aws?.region) return undefined;
    return {
      cacheKey: input.owner.uid || `${input.owner.namespace}/${input.owner.name}`,
      region: spec.aws.region,
      beforeCreation: !input.observed.has(AWS_KEYS.instance),
      identifier: rdsIdentifier(input),
      engine: spec.engine,
      version: spec.version,
      instanceClass: spec.aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
      instanceClassField: spec.aws.instanceClass
        ? 'spec.aws.instanceClass'
        : `spec.size (${spec.size} is ${INSTANCE_CLASSES[spec.size]})`,
    };
  },
  compose,
};
