// The rules of a Database: the ones its XRD states in CEL, which a JSON
// Schema validator cannot evaluate, and the changes that would lose or
// strand data, refused before anything is composed.
import { SpecError } from '../../errors.js';
import type { ExternalFacts } from '../../facts.js';
import type { DatabaseSpec } from '../../generated/schemas.js';
import { cronProblem } from '../../spec/cron.js';
import type { Context } from '../blueprint.js';
import { usesCnpg } from './cluster.js';
import { compareVersions, type ResolvedSpec } from './common.js';
import { ENGINES } from './engine.js';
import { hasInstance, INSTANCE_KEYS } from './instances.js';
import { observedEngine, observedPlacement, observedStorageGB, runningVersion } from './observed.js';

/** The rules the XRD states in CEL, which a JSON Schema validator cannot evaluate. */
export function checkDatabaseRules(spec: DatabaseSpec): void {
  const problems: string[] = [];
  if (spec.placement === 'aws' && !spec.aws?.region) problems.push('spec.aws.region is required with placement aws');
  if (spec.placement === 'aws' && spec.storageGB < 20)
    problems.push(
      `spec.storageGB is ${spec.storageGB}; spec.storageGB must be at least 20 with placement aws (the RDS minimum)`,
    );
  if (spec.placement === 'cluster' && spec.highAvailability && spec.engine === 'mysql') {
    problems.push(
      'spec.highAvailability is true; highAvailability in the cluster needs engine postgres (CloudNativePG)',
    );
  }
  if (spec.maxStorageGB !== undefined && spec.maxStorageGB < spec.storageGB)
    problems.push(
      `spec.maxStorageGB is ${spec.maxStorageGB}; spec.maxStorageGB must be at least spec.storageGB (${spec.storageGB})`,
    );
  if (spec.replicas > 0 && spec.placement === 'cluster' && !spec.highAvailability)
    problems.push(
      `spec.replicas is ${spec.replicas}; spec.replicas needs highAvailability (CloudNativePG) in the cluster; a Database in a StatefulSet has no replicas`,
    );
  const cron = cronProblem(spec.backup.schedule);
  if (cron) problems.push(`spec.backup.schedule is ${JSON.stringify(spec.backup.schedule)}; ${cron}`);
  if (spec.version !== undefined && !ENGINES[spec.engine].versions.includes(spec.version)) {
    problems.push(
      `spec.version is ${JSON.stringify(spec.version)}; spec.version must be one the engine supports: postgres 14, 15, 16, 17; mysql 8.0, 8.4`,
    );
  }
  if (problems.length > 0) throw new SpecError(problems);
}

/** Changes that would lose or strand data are refused before anything is composed. */
export function checkAgainstObserved(spec: ResolvedSpec, o: Context): void {
  const problems: string[] = [];
  const engine = observedEngine(o);
  if (engine !== undefined && engine !== spec.engine) {
    problems.push(
      `spec.engine is ${spec.engine} but the database is ${engine}; spec.engine cannot be changed once the Database exists`,
    );
  }
  const placement = observedPlacement(o);
  if (placement !== undefined && placement !== spec.placement) {
    problems.push(
      `spec.placement is ${spec.placement} but the database runs on ${placement}; spec.placement cannot be changed once the Database exists`,
    );
  }
  const running = runningVersion(spec.engine, o);
  // An engine change is refused above; versions of different engines do not compare.
  if (running !== undefined && (engine === undefined || engine === spec.engine)) {
    const cmp = compareVersions(spec.version, running);
    if (cmp < 0)
      problems.push(`spec.version is ${spec.version} but the database runs ${running}; spec.version cannot go down`);
    if (cmp > 0 && spec.engine === 'postgres' && hasInstance(o.observed, INSTANCE_KEYS.statefulset)) {
      problems.push(
        `spec.version is ${spec.version} but the database runs ${running}: a postgres major upgrade in a StatefulSet needs pg_upgrade, which the official image does not do. To move to ${spec.version}: set spec.version back to ${running}, take a DatabaseBackup of this Database, create a new Database with version ${spec.version}, and load the dump (its status.location) into it with pg_restore, which reads older majors; or use highAvailability, where CloudNativePG upgrades in place behind a backup`,
      );
    }
  }
  const storage = observedStorageGB(o);
  if (storage !== undefined && spec.storageGB < storage) {
    problems.push(
      `spec.storageGB is ${spec.storageGB} but the database has ${Math.round(storage)}; spec.storageGB may grow but never shrink`,
    );
  }
  if (spec.placement === 'cluster' && placement === 'cluster') {
    if (usesCnpg(spec) && hasInstance(o.observed, INSTANCE_KEYS.statefulset)) {
      problems.push(
        'spec.highAvailability cannot be turned on for an existing in-cluster database: it would replace the StatefulSet and its volume; move the data to a new highly available Database instead',
      );
    }
    if (!usesCnpg(spec) && hasInstance(o.observed, INSTANCE_KEYS.cnpg)) {
      problems.push(
        'spec.highAvailability cannot be turned off for an existing CloudNativePG database: it would delete the Cluster and its volumes; move the data to a new Database instead',
      );
    }
  }
  if (problems.length > 0) throw new SpecError(problems);
}

/** AWS said no before anything was created: refuse rather than compose what would fail. */
export function checkFacts(facts: ExternalFacts | undefined): void {
  const refusal = facts?.aws?.notOrderable;
  if (refusal) throw new SpecError([`${refusal.field}: ${refusal.message}`]);
}
