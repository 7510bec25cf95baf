// The Database a DatabaseBackup or a DatabaseRestore names: read through
// Crossplane's required resources, its spec defaulted as the Database's own
// blueprint defaults it, its placement picked as the Database picks it, and
// judged: can it be backed up (a backup needs somewhere to go).
import type { ValidateFunction } from 'ajv';
import { SpecError } from '../../errors.js';
import type { DatabaseSpec } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { str, type Obj } from '../../kube.js';
import { specValidator } from '../../spec/validate.js';
import type { Owner, Requirement } from '../blueprint.js';
import { resolveSpec } from './database.js';
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

/** The Database found for `name` in `namespace`, judged: can it be backed up, and how. */
export function lookUp(answer: Obj[] | undefined, name: string, namespace: string): Lookup {
  if (answer === undefined) return { state: 'unknown' };
  const db = answer[0];
  if (!db) return { state: 'missing' };
  let parsed: DatabaseSpec;
  try {
    parsed = validateDatabase(db['spec'] ?? {});
  } catch (err) {
    if (err instanceof SpecError) return { state: 'refused', why: `its spec is invalid (${err.message})` };
    throw err;
  }
  // The version it runs when it names none: the newest at its creation, which the Database keeps.
  const spec = resolveSpec(parsed);
  const placement = placementOf(spec);
  if (placement.backup.needsObjectStore && !spec.backup.objectStore) {
    return {
      state: 'refused',
      why: spec.backup.enabled
        ? 'it has no spec.backup.objectStore, so a backup has nowhere to go'
        : 'it has backups disabled and no spec.backup.objectStore, so a backup has nowhere to go',
    };
  }
  const uid = str(db, 'metadata', 'uid') ?? '';
  // A claim (claims mode) or a namespaced composite: either way its workloads are named after it.
  const owner: Owner = { kind: 'Database', name, uid, namespace };
  const instance = str(db, 'status', 'instance');
  return { state: 'found', target: { owner, spec, placement, ...(instance ? { instance } : {}) } };
}
