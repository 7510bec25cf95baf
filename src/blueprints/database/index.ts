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
import { composeAws } from './aws.js';
import { type BackupPlan, planBackups } from './backups.js';
import { composeCluster } from './cluster.js';
import { checkRestoreSpec, planRestore, type RestorePlan } from './restore.js';
import { resolve, type ResolvedSpec } from './common.js';
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
  /** In the cluster: a restore from a backup, when spec.restore asks for one. */
  restore?: RestorePlan;
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
    const input = { ...ctx, spec };
    return spec.placement === 'cluster'
      ? { input, backups: planBackups(input, spec), restore: planRestore(input, spec) }
      : { input };
  },
  query: ({ input }) => {
    const aws = awsQuestion(input);
    return aws ? { aws } : undefined;
  },
  compose({ input, backups, restore }, facts) {
    checkFacts(facts);
    const withFacts = facts ? { ...input, facts } : input;
    return backups && restore
      ? composeCluster(withFacts, input.spec, backups, restore)
      : composeAws(withFacts, input.spec);
  },
  status: ({ input, backups, restore }, facts, plan, verdicts) =>
    databaseStatus(input, facts, plan, verdicts, backups, restore),
};
