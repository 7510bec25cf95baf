// The Database a DatabaseBackup or a DatabaseRestore names: read through
// Crossplane's required resources, its spec defaulted as the Database's own
// blueprint defaults it, its placement picked as the Database picks it, and
// judged: can it be backed up (a backup needs somewhere to go). What the
// Database took from its platform's defaults (its own Composition's Input,
// which a DatabaseBackup's Composition does not share) is read from what the
// Database publishes: status.backup.objectStore and status.aws.region and
// providerConfigName, so every backup of it, composed or made by hand, goes
// to the same store.
import type { ValidateFunction } from 'ajv';
import { SpecError } from '../../errors.js';
import * as validators from '../../generated/validators.js';
import { num, record, str, type Obj } from '../../kube.js';
import { specValidator } from '../../spec/validate.js';
import type { Owner, PlatformDefaults, Requirement } from '../blueprint.js';
import { ACCESS_KEY_SECRET_KEYS } from '../../kinds/aws.js';
import { type DatabaseSpec, type ObjectStore, resolveSpec, withDefaults } from './database.js';
import { placementOf } from './placements/index.js';
import type { Target } from './placements/placement.js';

const validateDatabase = specValidator<DatabaseSpec>(validators.database as ValidateFunction);

/** The required resource that is the Database. */
export const DATABASE = 'database';

/** What the lookup of the Database found: not answered yet, nothing, a Database that cannot be backed up, or one. */
export type Lookup =
  | { state: 'unknown' }
  | { state: 'missing' }
  | { state: 'refused'; why: string }
  | { state: 'found'; target: Target };

export function databaseRequirement(name: string, namespace: string): Requirement {
  return { apiVersion: 'example.com/v1', kind: 'Database', matchName: name, namespace };
}

type StoreDefault = NonNullable<NonNullable<NonNullable<PlatformDefaults['database']>['backup']>['objectStore']>;

/** The platform's settings a Database took, as it published them in its status. */
function published(db: Obj): PlatformDefaults['database'] {
  const store = record(db, 'status', 'backup', 'objectStore');
  const aws = record(db, 'status', 'aws');
  const out: NonNullable<PlatformDefaults['database']> = {};
  // Only the platform's: a store the spec names is in the spec already. The status has the schema's shape.
  if (store?.['source'] === 'platform') {
    const { source: _said, ...where } = store;
    out.backup = { objectStore: where as unknown as StoreDefault };
  }
  const region = str(aws, 'region');
  const providerConfigName = str(aws, 'providerConfigName');
  if (region || providerConfigName)
    out.aws = { ...(region ? { region } : {}), ...(providerConfigName ? { providerConfigName } : {}) };
  return out;
}

/** The store made for a Database, as it published it (source provisioned), with the provider's key names. */
function madeStore(db: Obj): ObjectStore | undefined {
  const store = record(db, 'status', 'backup', 'objectStore');
  const bucket = str(store, 'bucket');
  const secret = str(store, 'credentialsSecretRef', 'name');
  if (str(store, 'source') !== 'provisioned' || !bucket || !secret) return undefined;
  return {
    bucket,
    region: str(store, 'region') ?? 'us-east-1',
    credentialsSecretRef: { name: secret },
    credentialKeys: { ...ACCESS_KEY_SECRET_KEYS },
  };
}

/** The Database found for `name` in `namespace`, judged: can it be backed up, and how. */
export function lookUp(answer: Obj[] | undefined, name: string, namespace: string): Lookup {
  if (answer === undefined) return { state: 'unknown' };
  const db = answer[0];
  if (!db) return { state: 'missing' };
  let parsed: DatabaseSpec;
  let layered: ReturnType<typeof withDefaults>;
  try {
    layered = withDefaults(db['spec'] ?? {}, published(db));
    parsed = validateDatabase(layered.spec);
  } catch (err) {
    if (err instanceof SpecError) return { state: 'refused', why: `its spec is invalid (${err.message})` };
    throw err;
  }
  // A store made for it: as it published it, once its bucket and key were there (its own spec's store wins).
  const made = madeStore(db);
  if (made && layered.storeSource !== 'spec') parsed = { ...parsed, backup: { ...parsed.backup, objectStore: made } };
  // The version it runs when it names none: the newest at its creation, which the Database keeps.
  const spec = resolveSpec(parsed);
  const placement = placementOf(spec);
  if (placement.backup.needsObjectStore && !spec.backup.objectStore) {
    return {
      state: 'refused',
      why: spec.backup.enabled
        ? 'it has no spec.backup.objectStore and its status names no platform store, so a backup has nowhere to go'
        : 'it has backups disabled and no spec.backup.objectStore, so a backup has nowhere to go',
    };
  }
  const uid = str(db, 'metadata', 'uid') ?? '';
  // A claim (claims mode) or a namespaced composite: either way its workloads are named after it.
  const owner: Owner = { kind: 'Database', name, uid, namespace };
  const instance = str(db, 'status', 'instance');
  const grownGB = num(db, 'status', 'storage', 'requestedGB');
  return {
    state: 'found',
    target: { owner, spec, placement, ...(instance ? { instance } : {}), ...(grownGB ? { grownGB } : {}) },
  };
}
