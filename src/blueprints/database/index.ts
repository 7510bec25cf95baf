// The Database blueprint: wherever it lives (its placement,
// lifecycle/placements/), one connection Secret, backups, restores, growth and
// upgrades, and refusal of every change that would lose data. resolve picks
// the placement once and decides everything the call needs; the phases call
// the placement and never ask which it is. By concern: rules.ts (what is
// allowed), observed.ts (what exists), restore.ts (a Database made from a
// backup or a point in time), cutover.ts (a DatabaseRestore's switch),
// backups.ts (scheduled DatabaseBackups and retention), upgrade.ts (a major
// upgrade behind a backup), compose.ts (what is composed), running.ts and
// status.ts (what the user reads).
import type { ValidateFunction } from 'ajv';
import { databaseSpecSchema } from '../../generated/schemas.js';
import * as validators from '../../generated/validators.js';
import { specValidator } from '../../spec/validate.js';
import type { Blueprint } from '../blueprint.js';
import { type DatabaseSpec, resolveSpec, withDefaults } from '../lifecycle/database.js';
import { observedGenerations } from '../lifecycle/instances.js';
import { placementOf } from '../lifecycle/placements/index.js';
import type { DatabaseCall } from '../lifecycle/placements/placement.js';
import { windowOf } from '../lifecycle/source.js';
import { entry } from '../manifest.js';
import { planBackups } from './backups.js';
import { composeDatabase } from './compose.js';
import { keptStillThere, planCutover } from './cutover.js';
import { runningVersion } from './observed.js';
import { checkRestoreSpec, planRestore } from './restore.js';
import { checkAgainstObserved, checkDatabaseRules } from './rules.js';
import { databaseStatus, type Resolution } from './status.js';
import { planUpgradeGate } from './upgrade.js';

const validate = specValidator<DatabaseSpec>(validators.database as ValidateFunction, 'spec', checkDatabaseRules);

export const database: Blueprint<Resolution> = {
  ...entry('database', databaseSpecSchema),
  resolve(raw, ctx) {
    // The platform's defaults (the step's Input) under the spec, the built-in ones under those.
    const layered = withDefaults(raw, ctx.defaults?.database);
    const parsed = validate(layered.spec);
    // The version defaults to the newest only at creation: an existing database keeps what it runs.
    const spec = resolveSpec(parsed, runningVersion(parsed.engine, ctx));
    const placement = placementOf(spec);
    checkAgainstObserved(spec, placement, ctx);
    checkRestoreSpec(spec, placement, ctx);
    // A major upgrade waits for its backup: until then the instance is composed with the version it is set to.
    const gate = planUpgradeGate({ ...ctx, spec }, spec, placement);
    const input: DatabaseCall = {
      ...ctx,
      spec: gate.effective === spec.version ? spec : { ...spec, version: gate.effective },
    };
    const restore = planRestore(input, spec, placement);
    const live = placement.reopened?.(input) ?? placement.liveGeneration(ctx.observed);
    const instances = {
      base: placement.instanceKey,
      live,
      generations: observedGenerations(ctx.observed, placement.instanceKey),
      name: (g: number) => placement.instanceName(input, g),
    };
    // The window a point-in-time restore may reach: as last reported, updated from what is observed now.
    const window = {
      ...windowOf(ctx.xr),
      ...windowOf({ status: { backup: placement.backupStatus(input, live) } }),
    };
    const created = restore.state === 'none' || restore.state === 'done';
    // What was handed over and listed in status.kept: no longer listed once the user has deleted it.
    const cutover = keptStillThere(input, placement, planCutover(input, spec, placement, instances, created, window));
    const growth = placement.growth?.(input, instances);
    // Where the place keeps no backups of its own, the Database takes DatabaseBackups on its schedule.
    const backups = placement.automatedBackups ? undefined : planBackups(input, spec, layered.storeSource);
    return {
      input,
      placement,
      gate,
      restore,
      instances,
      cutover,
      ...(backups ? { backups } : {}),
      ...(layered.storeSource ? { storeSource: layered.storeSource } : {}),
      ...(growth ? { growth } : {}),
    };
  },
  query: ({ input, placement }) => {
    const aws = placement.query?.(input);
    return aws ? { aws } : undefined;
  },
  compose: (resolved, facts) => composeDatabase(resolved, facts),
  status: (resolved, facts, plan, verdicts) => databaseStatus(resolved, facts, plan, verdicts),
};
