// The Database blueprint: in the cluster or on AWS, one connection Secret,
// backups, and refusal of every change that would lose data. By concern:
// rules.ts (what is allowed), observed.ts (what exists), cluster.ts and aws.ts
// (what each placement composes), backups.ts (scheduled DatabaseBackups and
// retention in the cluster), restore.ts (a Database made from a backup),
// query.ts (what AWS is asked), status.ts (what the user reads).
import type { ValidateFunction } from 'ajv';
import { type DatabaseSpec, databaseSpecSchema } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { specValidator } from '../../spec/validate.js';
import type { Blueprint, BlueprintInput } from '../blueprint.js';
import { entry } from '../manifest.js';
import { awsBackupStatus, composeAws, rdsIdentifier } from './aws.js';
import { windowOf } from './restore-source.js';
import { cnpgWindow } from './status.js';
import { type BackupPlan, planBackups } from './backups.js';
import { composeCluster, dataClaimName, usesCnpg } from './cluster.js';
import { cnpgGrowth, type GrowthPlan, planGrowth } from './volumes.js';
import { type CutoverPlan, type Instances, planCutover } from './cutover.js';
import { INSTANCE_KEYS, instanceName, liveGeneration, observedGenerations } from './instances.js';
import { checkRestoreSpec, planRestore, type RestorePlan } from './restore.js';
import { planUpgradeGate, type UpgradeGate } from './upgrade.js';
import { type DatabaseInput, resolve, type ResolvedSpec } from './common.js';
import { runningVersion } from './observed.js';
import { awsQuestion } from './query.js';
import { checkAgainstObserved, checkDatabaseRules, checkFacts } from './rules.js';
import { databaseStatus } from './status.js';

const validate = specValidator<DatabaseSpec>(validators.database as ValidateFunction, 'spec', checkDatabaseRules);

/** A Database's call after phase one: the spec with every default (the version from what runs). */
export interface ResolvedDatabase {
  input: BlueprintInput<ResolvedSpec>;
  /** In the cluster: its DatabaseBackups, retention and backup health, from spec, observed state and the clock. */
  backups?: BackupPlan;
  /** The Database made from a backup or a point in time, when spec.restore asks for one. */
  restore: RestorePlan;
  /** A major upgrade and the backup it waits for. */
  gate: UpgradeGate;
  /** In a StatefulSet: its data volume's growth. */
  growth?: GrowthPlan;
  /** Its instances, and the DatabaseRestore being switched to, if any. */
  instances: Instances;
  cutover: CutoverPlan;
}

/** The placement's instances as observed: which key, which generation is live, what the user calls each. */
export function instancesOf(input: DatabaseInput & { spec: ResolvedSpec }): Instances {
  const { spec, observed, owner } = input;
  const base =
    spec.placement === 'aws' ? INSTANCE_KEYS.rds : usesCnpg(spec) ? INSTANCE_KEYS.cnpg : INSTANCE_KEYS.statefulset;
  return {
    base,
    live: liveGeneration(observed, base),
    generations: observedGenerations(observed, base),
    name: (g) => (spec.placement === 'aws' ? rdsIdentifier(input, g) : instanceName(owner, g)),
  };
}

export const database: Blueprint<ResolvedDatabase> = {
  ...entry('database'),
  specSchema: databaseSpecSchema,
  resolve(raw, ctx) {
    const parsed = validate(raw);
    // The version defaults to the newest only at creation: an existing database keeps what it runs.
    const spec = resolve(parsed, runningVersion(parsed.engine, ctx));
    checkAgainstObserved(spec, ctx);
    checkRestoreSpec(spec, ctx);
    // A major upgrade waits for its backup: until then the instance is composed with the version it is set to.
    const gate = planUpgradeGate({ ...ctx, spec }, spec);
    const input = { ...ctx, spec: gate.effective === spec.version ? spec : { ...spec, version: gate.effective } };
    const restore = planRestore(input, spec);
    const instances = instancesOf(input);
    // The window a point-in-time restore may reach: as last reported, updated from what is observed now.
    const window = {
      ...windowOf(ctx.xr),
      ...(spec.placement === 'aws'
        ? windowOf({ status: { backup: awsBackupStatus(input, spec) } })
        : windowOf({ status: { backup: cnpgWindow(input, spec, instances.name(instances.live)) } })),
    };
    const cutover = planCutover(input, spec, instances, restore.state === 'none' || restore.state === 'done', window);
    // A StatefulSet's data volume grows by its claim (the live generation's).
    const growth =
      spec.placement !== 'cluster'
        ? undefined
        : usesCnpg(spec)
          ? cnpgGrowth(input, spec, instances.name(instances.live))
          : planGrowth(input, spec, dataClaimName(input, instances.live));
    return spec.placement === 'cluster'
      ? { input, gate, backups: planBackups(input, spec), restore, instances, cutover, ...(growth ? { growth } : {}) }
      : { input, gate, restore, instances, cutover };
  },
  query: ({ input }) => {
    const aws = awsQuestion(input);
    return aws ? { aws } : undefined;
  },
  compose({ input, gate, backups, restore, cutover, growth }, facts) {
    checkFacts(facts);
    const withFacts = facts ? { ...input, facts } : input;
    const plan = backups
      ? composeCluster(withFacts, input.spec, backups, restore, cutover, growth)
      : composeAws(withFacts, input.spec, restore, cutover);
    return { ...plan, resources: [...plan.resources, ...gate.backups] };
  },
  status: (resolved, facts, plan, verdicts) => databaseStatus(resolved, facts, plan, verdicts),
};
