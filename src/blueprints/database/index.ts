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
import type { Blueprint, Context, Summary } from '../blueprint.js';
import { type DatabaseSpec, resolveSpec, type StoreSource, withDefaults } from '../lifecycle/database.js';
import { planProvisionedStore, type StorePlan } from '../lifecycle/object-store.js';
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

/**
 * The store made for this Database, if one is asked for or was made: only
 * where backups go to a store (on AWS, RDS keeps them itself), and said when
 * a provision in the spec is not what is used.
 */
function planStore(
  ctx: Context,
  spec: DatabaseSpec,
  layered: ReturnType<typeof withDefaults>,
): { plan?: StorePlan; storeSource?: StoreSource; warnings: Summary['warnings'] } {
  const warnings: Summary['warnings'] = [];
  const own = spec.backup.provision !== undefined;
  const toStore = placementOf(spec).backup.needsObjectStore;
  if (own && spec.backup.objectStore !== undefined && layered.storeSource === 'spec')
    warnings.push({
      reason: 'FieldIgnored',
      message: 'spec.backup.provision is not used: spec.backup.objectStore names the store, and it wins',
    });
  if (own && !toStore)
    warnings.push({
      reason: 'FieldIgnored',
      message: 'spec.backup.provision is for a Database in the cluster: on AWS, RDS keeps the backups itself',
    });
  const asked = toStore && layered.storeSource === 'provisioned' ? layered.provision : undefined;
  const plan = planProvisionedStore(ctx, spec, asked);
  const storeSource = layered.storeSource === 'provisioned' && !asked ? undefined : layered.storeSource;
  return { ...(plan ? { plan } : {}), ...(storeSource ? { storeSource } : {}), warnings };
}

const validate = specValidator<DatabaseSpec>(validators.database as ValidateFunction, 'spec', checkDatabaseRules);

export const database: Blueprint<Resolution> = {
  ...entry('database', databaseSpecSchema),
  resolve(raw, ctx) {
    // The platform's defaults (the step's Input) under the spec, the built-in ones under those.
    const layered = withDefaults(raw, ctx.defaults?.database);
    const validated = validate(layered.spec);
    // A store made for this Database: where backups go once its bucket, key and Secret are there.
    const made = planStore(ctx, validated, layered);
    const storeSource = made.storeSource;
    const parsed = made.plan?.store
      ? { ...validated, backup: { ...validated.backup, objectStore: made.plan.store } }
      : validated;
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
    // A restore drill never runs beside a restore or an upgrade.
    const busy =
      restore.state !== 'none' && restore.state !== 'done'
        ? 'a restore'
        : cutover.target
          ? 'a DatabaseRestore'
          : gate.waiting
            ? 'an upgrade'
            : undefined;
    const backups = placement.automatedBackups
      ? undefined
      : planBackups(input, spec, storeSource, made.plan?.waiting, {
          drills: placement.backup.drill !== undefined,
          ...(busy ? { busy } : {}),
        });
    return {
      input,
      placement,
      gate,
      restore,
      instances,
      cutover,
      ...(backups ? { backups } : {}),
      ...(storeSource ? { storeSource } : {}),
      ...(made.plan ? { store: made.plan } : {}),
      storeWarnings: made.warnings,
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
