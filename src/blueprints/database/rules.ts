// The rules of a Database: the ones its XRD states in CEL, which a JSON
// Schema validator cannot evaluate, and the changes that would lose or
// strand data, refused before anything is composed. What a placement refuses
// its module says (lifecycle/placements/); problems are said in the order of
// the spec's fields.
import { SpecError } from '../../errors.js';
import type { ExternalFacts } from '../../facts.js';
import { cronProblem } from '../../spec/cron.js';
import type { Context } from '../blueprint.js';
import { compareVersions, type DatabaseSpec, type ResolvedSpec } from '../lifecycle/database.js';
import { ENGINES, supportedVersions } from '../lifecycle/engine.js';
import { hasInstance } from '../lifecycle/instances.js';
import { observedPlacement, PLACEMENTS, placementOf } from '../lifecycle/placements/index.js';
import type { Placement, Problem } from '../lifecycle/placements/placement.js';
import { observedEngine, observedStorageGB, runningVersion } from './observed.js';

/** The fields whose rules are checked, in the order their problems are said. */
const FIELD_ORDER = [
  'spec.aws.region',
  'spec.storageGB',
  'spec.highAvailability',
  'spec.maxStorageGB',
  'spec.replicas',
  'spec.backup.schedule',
  'spec.backup.verify.schedule',
  'spec.version',
];

/** The rules the XRD states in CEL, which a JSON Schema validator cannot evaluate. */
export function checkDatabaseRules(spec: DatabaseSpec): void {
  const problems: Problem[] = [...placementOf(spec).refuses(spec)];
  if (spec.maxStorageGB !== undefined && spec.maxStorageGB < spec.storageGB)
    problems.push({
      field: 'spec.maxStorageGB',
      message: `spec.maxStorageGB is ${spec.maxStorageGB}; spec.maxStorageGB must be at least spec.storageGB (${spec.storageGB})`,
    });
  const cron = cronProblem(spec.backup.schedule);
  if (cron)
    problems.push({
      field: 'spec.backup.schedule',
      message: `spec.backup.schedule is ${JSON.stringify(spec.backup.schedule)}; ${cron}`,
    });
  const verify = spec.backup.verify?.schedule;
  const verifyCron = verify === undefined ? undefined : cronProblem(verify);
  if (verifyCron)
    problems.push({
      field: 'spec.backup.verify.schedule',
      message: `spec.backup.verify.schedule is ${JSON.stringify(verify)}; ${verifyCron}`,
    });
  if (spec.version !== undefined && !ENGINES[spec.engine].versions.includes(spec.version))
    problems.push({
      field: 'spec.version',
      message: `spec.version is ${JSON.stringify(spec.version)}; spec.version must be one the engine supports: ${supportedVersions()}`,
    });
  if (problems.length === 0) return;
  const rank = (p: Problem) => (FIELD_ORDER.includes(p.field) ? FIELD_ORDER.indexOf(p.field) : FIELD_ORDER.length);
  throw new SpecError(problems.sort((a, b) => rank(a) - rank(b)).map((p) => p.message));
}

/** Changes that would lose or strand data are refused before anything is composed. */
export function checkAgainstObserved(spec: ResolvedSpec, placement: Placement, o: Context): void {
  const problems: string[] = [];
  const engine = observedEngine(o);
  if (engine !== undefined && engine !== spec.engine) {
    problems.push(
      `spec.engine is ${spec.engine} but the database is ${engine}; spec.engine cannot be changed once the Database exists`,
    );
  }
  const existing = observedPlacement(o.observed)?.asked;
  if (existing !== undefined && existing !== spec.placement) {
    problems.push(
      `spec.placement is ${spec.placement} but the database runs on ${existing}; spec.placement cannot be changed once the Database exists`,
    );
  }
  // The instances that exist, of whichever placement.
  const instances = PLACEMENTS.filter((p) => hasInstance(o.observed, p.instanceKey));
  const running = runningVersion(spec.engine, o);
  // An engine change is refused above; versions of different engines do not compare.
  if (running !== undefined && (engine === undefined || engine === spec.engine)) {
    const cmp = compareVersions(spec.version, running);
    if (cmp < 0)
      problems.push(`spec.version is ${spec.version} but the database runs ${running}; spec.version cannot go down`);
    const refusal = cmp > 0 ? instances.map((p) => p.refusesUpgrade(spec, running)).find(Boolean) : undefined;
    if (refusal) problems.push(refusal);
  }
  const storage = observedStorageGB(o);
  if (storage !== undefined && spec.storageGB < storage) {
    problems.push(
      `spec.storageGB is ${spec.storageGB} but the database has ${Math.round(storage)}; spec.storageGB may grow but never shrink`,
    );
  }
  // Another placement for the same spec.placement (highAvailability switched) would replace the instance.
  if (existing === spec.placement)
    for (const p of instances) {
      const refusal = p !== placement && p.asked === spec.placement ? p.refusesBecoming(placement) : undefined;
      if (refusal) problems.push(refusal);
    }
  if (problems.length > 0) throw new SpecError(problems);
}

/** AWS said no before anything was created: refuse rather than compose what would fail. */
export function checkFacts(facts: ExternalFacts | undefined): void {
  const refusal = facts?.aws?.notOrderable;
  if (refusal) throw new SpecError([`${refusal.field}: ${refusal.message}`]);
}
