// A Database on AWS: an RDS instance, as provider-upjet-aws v2 namespaced
// managed resources. Its backups are RDS's own automated backups (retention
// and window from spec.backup, point-in-time restore), mirrored into status;
// a DatabaseBackup adds a snapshot on demand. An S3 bucket that an earlier
// version composed stays composed (it may hold objects) but is not named as a
// backup location: nothing ever wrote backups to it.
import { earliestRestorable, type ExternalFacts } from '../../facts.js';
import { num, str, type Obj } from '../../kube.js';
import { dnsLabel } from '../../names.js';
import type { Desired, Owner, Plan } from '../blueprint.js';
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
} from './common.js';
import {
  type CutoverPlan,
  DBNAME_ANNOTATION,
  type InstanceMeta,
  instanceMeta,
  metaFor,
  type Target,
  handOver,
} from './cutover.js';
import { backupWindow, INSTANCE_CLASSES } from './engine.js';
import { instanceName, keyOf, liveInstance } from './instances.js';
import { creationOf, type RdsRestore, type RestorePlan } from './restore.js';
import { judge } from '../../kinds/index.js';

export const AWS_KEYS = {
  instance: 'rds-instance',
  subnetGroup: 'rds-subnet-group',
  bucket: 'backup-bucket',
  versioning: 'backup-bucket-versioning',
  encryption: 'backup-bucket-encryption',
  publicAccessBlock: 'backup-bucket-public-access-block',
  lifecycle: 'backup-bucket-lifecycle',
  connection: 'connection',
} as const;

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

function providerConfigRef(spec: ResolvedSpec): Obj {
  return { kind: 'ClusterProviderConfig', name: spec.aws?.providerConfigName ?? 'default' };
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
export function rdsIdentifier(input: DatabaseInput, generation = 0): string {
  const first = rdsIdentifierOf(input.owner);
  return generation === 0 ? first : dnsLabel(first, `r${generation}`).replace(/-+/g, '-');
}

/** The same, for a Database known by its owner alone (a DatabaseBackup names it). */
export function rdsIdentifierOf(owner: Owner): string {
  const raw = `${owner.namespace}-${baseName(owner)}`.replace(/-+/g, '-');
  return dnsLabel(raw).replace(/-+/g, '-');
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
  opts: { restore?: RdsRestore; keep?: boolean; meta?: InstanceMeta } = {},
): Obj {
  const aws = spec.aws!;
  const retain = spec.deletionPolicy === 'Retain';
  const window = backupWindow(spec.backup.schedule);
  const identifier = rdsIdentifier(input, generation);
  const forProvider: Obj = {
    region: aws.region,
    identifier,
    engine: spec.engine,
    engineVersion: spec.version,
    ...(opts.restore ?? {}),
    // Only when the spec asks for a newer major version than RDS runs.
    ...(upgrading(input, spec) ? { allowMajorVersionUpgrade: true } : {}),
    instanceClass: aws.instanceClass ?? INSTANCE_CLASSES[spec.size],
    allocatedStorage: spec.storageGB,
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
    skipFinalSnapshot: !retain,
    ...(retain
      ? {
          finalSnapshotIdentifier: `${identifier.slice(0, 48).replace(/-+$/, '')}-final-${identity(input.owner, 6)}`,
        }
      : {}),
    deleteAutomatedBackups: !retain,
    ...(aws.subnetIds?.length ? { dbSubnetGroupNameRef: { name: dnsLabel(baseName(input.owner), 'subnets') } } : {}),
    ...(aws.securityGroupIds?.length ? { vpcSecurityGroupIds: aws.securityGroupIds } : {}),
    tags: tags(input),
  };
  const restored = opts.meta ?? { labels: {}, annotations: {} };
  const metadata = meta(input.owner, spec, instanceName(input.owner, generation), restored.labels);
  if (Object.keys(restored.annotations).length > 0) metadata['annotations'] = restored.annotations;
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
function replica(input: DatabaseInput, spec: ResolvedSpec, live: number, i: number): Obj {
  const aws = spec.aws!;
  const name = dnsLabel(instanceName(input.owner, live), `ro${i}`);
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

/** Where read-only connections go: the first replica of a generation's instance that RDS reports ready with an address. */
export function replicaAddress(
  input: DatabaseInput,
  spec: ResolvedSpec,
  generation: number,
): { host: string; port: number } | undefined {
  for (let i = 1; i <= spec.replicas; i++) {
    const r = input.observed.get(replicaKey(i, generation));
    const host = str(r, 'status', 'atProvider', 'address');
    const port = num(r, 'status', 'atProvider', 'port');
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
  const inst = liveInstance(input.observed, AWS_KEYS.instance);
  const running = majorVersion(
    spec.engine,
    str(inst, 'status', 'atProvider', 'engineVersionActual') ?? str(inst, 'spec', 'forProvider', 'engineVersion'),
  );
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

function subnetGroup(input: DatabaseInput, spec: ResolvedSpec): Obj {
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

function s3(input: DatabaseInput, spec: ResolvedSpec, kind: string, name: string, forProvider: Obj): Obj {
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
  (bucketObj['metadata'] as Obj)['annotations'] = { 'crossplane.io/external-name': bucket };
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
        rule: [
          {
            id: 'expire-backups',
            status: 'Enabled',
            filter: [{ prefix: '' }],
            expiration: [{ days }],
            noncurrentVersionExpiration: [{ noncurrentDays: days }],
            abortIncompleteMultipartUpload: [{ daysAfterInitiation: 1 }],
          },
        ],
      }),
    },
  ];
}

/** Host and port of a generation's instance (the live one by default), from what the provider observed. */
export function instanceAddress(input: DatabaseInput, generation?: number): { host: string; port: number } | undefined {
  const inst =
    generation === undefined
      ? liveInstance(input.observed, AWS_KEYS.instance)
      : input.observed.get(keyOf(AWS_KEYS.instance, generation));
  const host = str(inst, 'status', 'atProvider', 'address');
  const port = num(inst, 'status', 'atProvider', 'port');
  return host && port ? { host, port } : undefined;
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
export function rdsTargetReady(input: DatabaseInput, target: Target): boolean {
  return (
    judge(input.observed.get(keyOf(AWS_KEYS.instance, target.generation))).ready &&
    connectionOf(input, target.generation) !== undefined
  );
}

export function composeAws(input: DatabaseInput, spec: ResolvedSpec, made: RestorePlan, cutover: CutoverPlan): Plan {
  const { live, target } = cutover;
  const ns = input.owner.namespace;
  // The database inside: the one an instance made from another Database's data came with.
  const database =
    instanceMeta(input.observed.get(keyOf(AWS_KEYS.instance, live))).annotations[DBNAME_ANNOTATION] ?? made.database;
  // Each generation as it was made: its creation settings and what it carries, read back once it exists.
  const rds = (g: number, keep: boolean, fresh?: { restore?: RdsRestore; target?: Target }) => {
    const observed = input.observed.get(keyOf(AWS_KEYS.instance, g));
    const restore = observed ? creationOf(observed).rds : fresh?.restore;
    const meta = metaFor(observed, fresh?.target, {
      ...(database ? { [DBNAME_ANNOTATION]: database } : {}),
      ...(g === 0 ? made.annotations : {}),
    });
    return instance(input, spec, g, { keep, meta, ...(restore ? { restore } : {}) });
  };
  const resources: Desired[] = [
    {
      key: keyOf(AWS_KEYS.instance, live),
      object: rds(live, false, live === 0 && made.rds ? { restore: made.rds } : undefined),
    },
  ];
  // Our connection Secret is built from the provider's, which holds the generated password.
  const requirements: Plan['requirements'] = {
    ...cutover.requirements,
    [rdsConnection(live)]: { apiVersion: 'v1', kind: 'Secret', matchName: rdsSecretName(input, live), namespace: ns },
  };
  if (made.requirement) requirements[made.requirement.name] = made.requirement.requirement;
  const releasing: Array<{ key: string; why: string }> = [];
  if (target) {
    const source = target.source;
    const restore: RdsRestore =
      source.kind === 'backup'
        ? { snapshotIdentifier: source.location.replace(/^rds-snapshot:/, '') }
        : {
            restoreToPointInTime: {
              sourceDbInstanceIdentifier: rdsIdentifier(input, live),
              ...(source.time ? { restoreTime: source.time } : { useLatestRestorableTime: true }),
            },
          };
    resources.push({
      key: keyOf(AWS_KEYS.instance, target.generation),
      object: rds(target.generation, false, { restore, target }),
      independent: true,
    });
    requirements[rdsConnection(target.generation)] = {
      apiVersion: 'v1',
      kind: 'Secret',
      matchName: rdsSecretName(input, target.generation),
      namespace: ns,
    };
  }
  const handed = handOver(
    input,
    AWS_KEYS.instance,
    cutover.release,
    'replaced by a restore; the RDS instance is orphaned, not deleted',
    (g) => [{ key: keyOf(AWS_KEYS.instance, g), object: rds(g, true), independent: true }],
  );
  resources.push(...handed.resources);
  releasing.push(...handed.releasing);
  // Read replicas of the live instance: they do not hold up the Database's readiness (the primary serves). A
  // restore's switch makes another instance live: its replicas are made anew, the old ones (copies) go.
  for (let i = 1; i <= spec.replicas; i++)
    resources.push({ key: replicaKey(i, live), object: replica(input, spec, live, i), independent: true });
  if (spec.aws?.subnetIds?.length) resources.push({ key: AWS_KEYS.subnetGroup, object: subnetGroup(input, spec) });
  // An earlier version's bucket stays: whatever is in it is not ours to delete.
  if (input.observed.has(AWS_KEYS.bucket)) resources.push(...bucketResources(input, spec));

  const observedOwn = input.observed.get(AWS_KEYS.connection);
  const serving = target && rdsTargetReady(input, target) ? target.generation : live;
  const c = connectionOf(input, serving, serving === live ? observedOwn : undefined);
  // Reads go to the serving instance's own replicas, the primary until one is ready.
  const readOnly = serving === live ? replicaAddress(input, spec, live) : undefined;
  if (c) {
    resources.push({
      key: AWS_KEYS.connection,
      object: connectionSecret(input, spec, {
        ...c,
        dbname: database ?? dbname(input.owner),
        ...(readOnly ? { readOnly } : {}),
      }),
    });
  } else if (observedOwn) {
    // Never drop it: keep what exists until the provider's Secret can be read again.
    resources.push({ key: AWS_KEYS.connection, object: keepSecret(observedOwn) });
  }
  return { resources, requirements, releasing };
}

function portOf(text: string | undefined): number | undefined {
  const port = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
  return port > 0 && port < 65536 ? port : undefined;
}

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
  const inst = liveInstance(input.observed, AWS_KEYS.instance);
  const latest = str(inst, 'status', 'atProvider', 'latestRestorableTime');
  if (!spec.backup.enabled && !latest) return undefined;
  if (!latest) return {};
  const retention = num(inst, 'spec', 'forProvider', 'backupRetentionPeriod') ?? spec.backup.retentionDays;
  const created = str(inst, 'metadata', 'creationTimestamp');
  const earliest =
    facts?.aws?.instance?.earliestRestorableTime ??
    earliestRestorable(created ? new Date(created) : undefined, retention, input.now).earliestRestorableTime;
  // Named only once RDS can restore from its automated backups.
  return {
    latestRestorableTime: latest,
    ...(earliest ? { earliestRestorableTime: earliest } : {}),
    location: `rds-automated-backups:${str(inst, 'spec', 'forProvider', 'identifier') ?? rdsIdentifier(input)}`,
  };
}
