// upgrade: a fleet of Databases of one engine moved to a major version in
// waves, as a step of a Crossplane Operation or CronOperation. Each run of the
// step reads where every selected Database stands (its status: the version it
// asks for, the one it runs, whether it is Ready, whether its upgrade is
// blocked) and takes one step: it stops at the first blocked upgrade (naming
// it and why), waits while any Database asked before is still on its way, and
// otherwise asks the next wave for the version: the canary alone until one
// Database this operation asked runs it, then waveSize at a time. Asking is a
// server-side apply of spec.version and an annotation naming the version it
// was asked for by a fleet upgrade (how a later run knows the canary went
// through: a Database made on the version never upgraded, and proves nothing);
// each Database then upgrades behind its own pre-upgrade backup, as it does
// when a person sets the version. A run after a fix goes on where the last one
// stopped: nothing is remembered but what the Databases say.
import type { Requirement } from '../blueprints/blueprint.js';
import { compareVersions, majorVersion } from '../blueprints/lifecycle/database.js';
import type { Input } from '../generated/schemas.js';
import { condition, type Obj, record, str } from '../kube.js';
import { labelWords, selectDatabases } from './selection.js';

export type UpgradeSpec = NonNullable<NonNullable<Input['operation']>['upgrade']>;

/** On a Database a fleet upgrade asked: the version it asked for. */
export const FLEET_UPGRADE_ANNOTATION = 'function-platform.dev/fleet-upgrade';

/** How many Databases each wave after the canary asks, when the Input does not say. */
export const DEFAULT_WAVE = 2;

type Where = { namespace: string; database: string };

export interface UpgradePlan {
  requirements: Record<string, Requirement>;
  done?: {
    /** spec.version patches of the next wave. */
    patches: Array<{ key: string; object: Obj }>;
    output: Obj;
    /** The event: what this run did or why it did nothing. */
    result: { severity: 'normal' | 'warning'; reason: string; message: string };
  };
}

/** Where one Database stands against the target version. */
type Standing =
  | { state: 'done' | 'behind' }
  | { state: 'moving'; detail: string }
  | { state: 'blocked'; reason: string }
  | { state: 'skipped'; reason: string };

function standing(db: Obj, engine: string, target: string): Standing {
  if (str(db, 'spec', 'engine') !== engine) return { state: 'skipped', reason: `engine ${str(db, 'spec', 'engine')}` };
  if (str(db, 'metadata', 'deletionTimestamp')) return { state: 'skipped', reason: 'being deleted' };
  const version = record(db, 'status', 'version') ?? {};
  const requested = str(db, 'spec', 'version') ?? (version['requested'] as string | undefined);
  if (requested === undefined) return { state: 'moving', detail: 'not reconciled yet' };
  const asked = compareVersions(requested, target);
  if (asked > 0) return { state: 'skipped', reason: `asks for ${requested}, newer than ${target}` };
  if (asked < 0) return { state: 'behind' };
  const blocked = version['upgradeBlocked'];
  if (typeof blocked === 'string') return { state: 'blocked', reason: blocked };
  const synced = condition(db, 'Synced');
  if (synced?.status === 'False')
    return { state: 'blocked', reason: synced.message ?? synced.reason ?? 'its reconcile fails' };
  const running = majorVersion(engine as 'postgres' | 'mysql', version['running'] as string | undefined);
  const ready = record(db, 'status')?.['ready'] === true;
  if (running !== undefined && compareVersions(running, target) === 0 && ready) return { state: 'done' };
  return {
    state: 'moving',
    detail:
      running === undefined ? 'its version not reported yet' : ready ? `runs ${running}` : `runs ${running}, not Ready`,
  };
}

export function planUpgrade(spec: UpgradeSpec, required: ReadonlyMap<string, readonly Obj[]>): UpgradePlan {
  const { namespaces, requirements, databases } = selectDatabases(spec, required);
  if (!databases) return { requirements };
  const { engine, version: target } = spec;
  const waveSize = spec.waveSize ?? DEFAULT_WAVE;
  const done: Where[] = [];
  // A Database this upgrade asked that now runs the version: the canary went through.
  let canaryDone = false;
  const behind: Array<Where & { object: Obj }> = [];
  const moving: Obj[] = [];
  const skipped: Obj[] = [];
  let stopped: Obj | undefined;
  for (const { namespace, name: database, object } of databases) {
    const s = standing(object, engine, target);
    if (s.state === 'done') {
      done.push({ namespace, database });
      if (str(object, 'metadata', 'annotations', FLEET_UPGRADE_ANNOTATION) === target) canaryDone = true;
    } else if (s.state === 'behind') behind.push({ namespace, database, object });
    else if (s.state === 'moving') moving.push({ namespace, database, detail: s.detail });
    else if (s.state === 'skipped') skipped.push({ namespace, database, reason: s.reason });
    else if (s.state === 'blocked') stopped ??= { namespace, database, reason: s.reason };
  }
  const patches: Array<{ key: string; object: Obj }> = [];
  let result: NonNullable<UpgradePlan['done']>['result'];
  const subject = `${engine} ${target}`;
  if (stopped) {
    result = {
      severity: 'warning',
      reason: 'UpgradeStopped',
      message: `upgrade to ${subject} stopped at Database ${String(stopped['namespace'])}/${String(stopped['database'])}: ${String(stopped['reason'])}; ${behind.length} not started`,
    };
  } else if (moving.length > 0) {
    result = {
      severity: 'normal',
      reason: 'UpgradeWaiting',
      message: `upgrade to ${subject}: waiting for ${moving.map((m) => `${String(m['namespace'])}/${String(m['database'])} (${String(m['detail'])})`).join(', ')}; ${done.length} done, ${behind.length} to go`,
    };
  } else if (behind.length === 0) {
    result = {
      severity: done.length === 0 ? 'warning' : 'normal',
      reason: done.length === 0 ? 'NothingMatched' : 'UpgradeComplete',
      message:
        done.length === 0
          ? `upgrade to ${subject}: no ${engine} Database${labelWords(spec.matchLabels)} in ${namespaces.join(', ')}`
          : `upgrade to ${subject} complete: ${done.length} Database${done.length === 1 ? '' : 's'} run it`,
    };
  } else {
    // The canary alone until it runs the version; then the waves.
    const wave = behind.slice(0, canaryDone ? waveSize : 1);
    for (const { namespace, database, object } of wave)
      patches.push({
        key: `${namespace}.${database}`,
        object: {
          apiVersion: str(object, 'apiVersion') ?? 'example.com/v1',
          kind: str(object, 'kind') ?? 'Database',
          metadata: { name: database, namespace, annotations: { [FLEET_UPGRADE_ANNOTATION]: target } },
          spec: { version: target },
        },
      });
    result = {
      severity: 'normal',
      reason: 'UpgradeWave',
      message: `upgrade to ${subject}: ${canaryDone ? 'wave' : 'canary'} ${wave.map((w) => `${w.namespace}/${w.database}`).join(', ')} asked for it; ${done.length} done, ${behind.length - wave.length} to go`,
    };
  }
  const where = (w: Where) => ({ namespace: w.namespace, database: w.database });
  return {
    requirements,
    done: {
      patches,
      result,
      output: {
        operation: 'upgrade',
        engine,
        version: target,
        namespaces,
        ...(spec.matchLabels ? { matchLabels: spec.matchLabels } : {}),
        asked: patches.map((p) => ({
          namespace: (p.object['metadata'] as Obj)['namespace'],
          database: (p.object['metadata'] as Obj)['name'],
        })),
        done: done.map(where),
        moving,
        behind: behind.slice(patches.length).map(where),
        skipped,
        ...(stopped ? { stopped } : {}),
      },
    },
  };
}
