// What a Database is to every blueprint that names one (the Database itself,
// a DatabaseBackup, a DatabaseRestore), whatever its placement: its spec with
// every default, its names and labels, the credentials that are generated
// once, and the one connection Secret users read.
import type { DatabaseSpec as DeclaredSpec } from '../../generated/schemas.js';
import type { SecretManifest } from '../../kinds/core.js';
import { isObj, type ObjectMeta, str, type Obj } from '../../kube.js';
import { boundedLabel, dnsLabel, shortHash } from '../../names.js';
import type { BlueprintInput, Owner, PlatformDefaults } from '../blueprint.js';
import { databaseName, ENGINES, newestVersion } from './engine.js';

export const ENGINE_LABEL = 'function-platform.dev/engine';

/** The keys of a store's credentials Secret that hold the access key's id and its secret. */
export interface CredentialKeys {
  accessKeyId: string;
  secretAccessKey: string;
}

/** The keys a Secret the user or the platform names holds: the AWS CLI's own variable names. */
export const USER_CREDENTIAL_KEYS: CredentialKeys = {
  accessKeyId: 'AWS_ACCESS_KEY_ID',
  secretAccessKey: 'AWS_SECRET_ACCESS_KEY',
};

/**
 * Where backups go. A store made for the Database (object-store.ts) carries
 * the key names of its Secret, which the provider writes; one the user or the
 * platform names has USER_CREDENTIAL_KEYS.
 */
export type ObjectStore = NonNullable<DeclaredSpec['backup']['objectStore']> & { credentialKeys?: CredentialKeys };

/** A Database's spec once the platform's and the built-in defaults are in (withDefaults). */
export type DatabaseSpec = DeclaredSpec & {
  backup: { schedule: string; retentionDays: number; finalSnapshot: boolean; objectStore?: ObjectStore };
};

export type DatabaseInput = BlueprintInput<DatabaseSpec>;

/**
 * The defaults the function fills in when neither the spec nor the platform
 * says. They are not in the XRD: the API server would fill them in first, and
 * the platform's would never apply.
 */
export const BUILT_IN_DEFAULTS = {
  // Delete keeps a last copy unless told not to: RDS's own API asks for a final snapshot by default.
  backup: { schedule: '0 3 * * *', retentionDays: 7, finalSnapshot: true },
  aws: { providerConfigName: 'default' },
} as const;

/** Who named the store backups go to: the Database's own spec, the platform's Input, or a store made for it. */
export type StoreSource = 'spec' | 'platform' | 'provisioned';

/** Fields taken whole, never field by field: a bucket from one place and credentials from another reach nothing. */
const WHOLE = new Set(['objectStore', 'provision']);

/** What provision.aws asks for, with the built-in ClusterProviderConfig. */
export interface ProvisionAsked {
  region: string;
  providerConfigName: string;
}

/** `base` with what `layer` says where `base` says nothing; objects are filled field by field, lists taken whole. */
function fill(base: Obj, layer: Obj): Obj {
  const out: Obj = { ...base };
  for (const [key, value] of Object.entries(layer)) {
    if (value === undefined) continue;
    const own = out[key];
    if (own === undefined) out[key] = value;
    else if (isObj(own) && isObj(value) && !WHOLE.has(key)) out[key] = fill(own, value);
  }
  return out;
}

/**
 * A Database's raw spec with the platform's defaults under it and the
 * built-in ones under those: what the spec says wins, then the platform, then
 * the function. AWS settings come in only for placement aws. Returns the
 * layered spec (still to be validated), who named the object store, and the
 * store to make when that is asked: the spec's objectStore, then the spec's
 * provision, then the platform's objectStore or provision (the Input names
 * one of them at most).
 */
export function withDefaults(
  raw: unknown,
  platform: PlatformDefaults['database'],
): { spec: unknown; storeSource?: StoreSource; provision?: ProvisionAsked } {
  if (!isObj(raw)) return { spec: raw };
  const onAws = raw['placement'] === 'aws';
  const own = isObj(raw['backup']) ? raw['backup'] : {};
  const ownProvision = isObj(own['provision']) ? own['provision'] : undefined;
  const layer: Obj = {};
  if (platform?.storageClassName !== undefined) layer['storageClassName'] = platform.storageClassName;
  if (platform?.backup) {
    // A provision is never layered in: the spec's stays its own, the platform's is answered below. A spec that
    // asks for a store to be made takes no platform store either.
    const { provision: _answered, objectStore, ...backup } = platform.backup;
    layer['backup'] = { ...backup, ...(objectStore && !ownProvision ? { objectStore } : {}) };
  }
  if (onAws && platform?.aws) layer['aws'] = { ...platform.aws };
  const layered = fill(raw, layer);
  const spec = fill(layered, {
    backup: { ...BUILT_IN_DEFAULTS.backup },
    ...(isObj(layered['aws']) ? { aws: { ...BUILT_IN_DEFAULTS.aws } } : {}),
  });
  const asked = (p: unknown): ProvisionAsked | undefined => {
    const aws = isObj(p) && isObj(p['aws']) ? p['aws'] : undefined;
    const region = aws?.['region'];
    if (typeof region !== 'string') return undefined;
    const config = aws?.['providerConfigName'];
    return {
      region,
      providerConfigName: typeof config === 'string' ? config : BUILT_IN_DEFAULTS.aws.providerConfigName,
    };
  };
  if (own['objectStore'] !== undefined) return { spec, storeSource: 'spec' };
  if (ownProvision) {
    const provision = asked(ownProvision);
    return { spec, ...(provision ? { storeSource: 'provisioned', provision } : {}) };
  }
  if (platform?.backup?.objectStore) return { spec, storeSource: 'platform' };
  const provision = asked(platform?.backup?.provision);
  return provision ? { spec, storeSource: 'provisioned', provision } : { spec };
}

/** The spec after every default, including the version that depends on the engine. */
export type ResolvedSpec = DatabaseSpec & { version: string };

/**
 * The version defaults to the newest only when the database is created: an
 * existing one keeps the version it runs, so a newer default never upgrades it.
 */
export function resolveSpec(spec: DatabaseSpec, running?: string): ResolvedSpec {
  return { ...spec, version: spec.version ?? running ?? newestVersion(spec.engine) };
}

/** The major version of an image tag or RDS engine version: "16.4" → "16", "8.0.39" → "8.0". */
export function majorVersion(engine: DatabaseSpec['engine'], version: string | undefined): string | undefined {
  if (!version) return undefined;
  const m = engine === 'mysql' ? /^(\d+\.\d+)/.exec(version) : /^(\d+)/.exec(version);
  return m?.[1];
}

/** Compares major versions numerically: negative when a is older. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export function appName(owner: Owner): string {
  return owner.claim?.name ?? owner.name;
}

/**
 * Base name of every object a Database composes; the suffix keeps it apart
 * from a Widget of the same name. At most 47 characters: a StatefulSet's name
 * reappears in its pods' controller-revision-hash label (63 at most, so 52
 * for the name) and in "<name>-headless".
 */
export function baseName(owner: Owner): string {
  return boundedLabel(47, appName(owner), 'db');
}

export const names = {
  credentials: (o: Owner) => dnsLabel(baseName(o), 'credentials'),
  connection: (o: Owner) => dnsLabel(baseName(o), 'connection'),
};

/** The username every placement uses for the application's account. */
export const APP_USER = 'app';

export function dbname(owner: Owner): string {
  return databaseName(appName(owner));
}

export function labels(owner: Owner, spec: DatabaseSpec, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'database',
    'app.kubernetes.io/instance': appName(owner),
    'app.kubernetes.io/managed-by': 'function-platform',
    [ENGINE_LABEL]: spec.engine,
    ...extra,
  };
}

export function meta(owner: Owner, spec: DatabaseSpec, name: string, extra: Record<string, string> = {}): ObjectMeta {
  return { name, namespace: owner.namespace, labels: labels(owner, spec, extra) };
}

/** A stable token for globally unique names: from the XR's uid, or its namespace and name when it has none (a render). */
export function identity(owner: Owner, length = 8): string {
  return shortHash(owner.uid || `${owner.namespace}/${owner.name}`, length);
}

/** A Secret's decoded value, from data (base64) or stringData. */
export function secretValue(secret: Obj | undefined, key: string): string | undefined {
  const data = str(secret, 'data', key);
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  return str(secret, 'stringData', key);
}

/** An Opaque Secret whose values are written as data (base64), as the API server stores them. */
export function secret(
  owner: Owner,
  spec: DatabaseSpec,
  name: string,
  values: Record<string, string>,
  type = 'Opaque',
): SecretManifest {
  const data: Record<string, string> = {};
  for (const key of Object.keys(values).sort()) data[key] = Buffer.from(values[key]!, 'utf8').toString('base64');
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(owner, spec, name), type, data };
}

export interface Connection {
  host: string;
  port: number;
  username: string;
  password: string;
  dbname: string;
  /** Where read-only connections go: the replicas; the primary when there are none. */
  readOnly?: { host: string; port: number };
  /** The server refuses connections without TLS: the URIs ask for it. */
  tls?: boolean;
}

/**
 * The one connection Secret: the same keys whatever the placement, with
 * ro-host, ro-port and ro-uri for reads (the primary's when there are no
 * replicas, so applications can always read them).
 */
export function connectionSecret(input: DatabaseInput, spec: ResolvedSpec, c: Connection): SecretManifest {
  const engine = ENGINES[spec.engine];
  const ro = c.readOnly ?? { host: c.host, port: c.port };
  return secret(input.owner, spec, names.connection(input.owner), {
    'ro-host': ro.host,
    'ro-port': String(ro.port),
    'ro-uri': engine.uri(c.username, c.password, ro.host, ro.port, c.dbname, c.tls),
    host: c.host,
    port: String(c.port),
    dbname: c.dbname,
    username: c.username,
    password: c.password,
    uri: engine.uri(c.username, c.password, c.host, c.port, c.dbname, c.tls),
    'jdbc-uri': engine.jdbc(c.host, c.port, c.dbname, c.tls),
  });
}

/**
 * The application password: read back from what exists, generated only when
 * nothing holds one yet. A regenerated password would lock the application
 * out of a database initialised with the old one.
 */
export function stablePassword(input: DatabaseInput, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = secretValue(input.observed.get(key), 'password');
    if (value) return value;
  }
  return undefined;
}
