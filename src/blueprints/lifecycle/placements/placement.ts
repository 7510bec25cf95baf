// A placement: one place a Database can live (a StatefulSet, a CloudNativePG
// Cluster, an RDS instance). Everything that is true of a place is said by its
// module (statefulset.ts, cnpg.ts, rds.ts): its keys and names, a builder per
// kind it composes, how it reads readiness, endpoint, running version,
// storage and the first blocker from observed state, how it is backed up and
// how far back it can be restored, how it is restored and switched over, how
// it grows and upgrades, and which changes it refuses. The registry
// (index.ts) picks the one a spec asks for, once a call; the phases of the
// Database (../../database/), the DatabaseBackup and the DatabaseRestore call
// it and never ask which placement it is.
import type { AutoGrowth } from './auto-growth.js';
import type { Usage } from './volume-usage.js';
import type { DatabaseBackupSpec } from '../../../generated/schemas.js';
import type { AwsQuestion, ExternalFacts } from '../../../facts.js';
import type { Verdict } from '../../../kinds/index.js';
import type { Obj } from '../../../kube.js';
import type { BlueprintInput, Desired, Owner, Requirement, Summary } from '../../blueprint.js';
import type { AlertRule } from '../alert-rules.js';
import type { DatabaseInput, ResolvedSpec } from '../database.js';
import type { Instances, RestoreTarget } from '../instances.js';
import type { Source } from '../source.js';

export type { InstanceMeta, RestoreTarget } from '../instances.js';

/** A Database's call as a placement reads it: the context with the spec it is composed with. */
export type DatabaseCall = DatabaseInput & { spec: ResolvedSpec };

/** A refusal of the spec, naming its field first (the refusals are said in the spec's field order). */
export interface Problem {
  field: string;
  message: string;
}

/** A condition's verdict: BackupHealthy, StorageResized. */
export interface Health {
  ok: boolean;
  reason: string;
  message: string;
}

/** How far a cutover into the generation a DatabaseRestore builds has come. */
export interface Progress {
  state: 'building' | 'restoring' | 'ready' | 'failed';
  detail: string;
}

/** A Database growing its own volumes (spec.storageGB raised): what is composed, read and said for it. */
/** The newest Completed backup of a Database, as its record says. */
export interface LastBackup {
  name: string;
  location?: string;
  completedAt?: string;
}

/** What deleting a Database keeps: in words, and the last copies by name. */
export interface Deletion {
  keeps: string;
  /** On AWS: the final snapshot RDS takes before deleting the instance. */
  finalSnapshot?: string;
  /** In the cluster: the backup that stays in the store. */
  lastBackup?: LastBackup;
  /** In a StatefulSet: the dump taken as the Database is deleted. */
  lastDump?: { location: string; pod: string; standing: boolean };
}

export interface GrowthPlan {
  requirements: Record<string, Requirement>;
  /** The resize Object, once there is one to compose. */
  resource?: Desired;
  /** The StorageResized condition, once the volume is known. */
  condition?: Health;
  /** What the user reads while the volume grows. */
  updating?: string;
  /** The pod template annotation that restarts the pod to finish a file-system resize, when allowed. */
  restart?: string;
  warnings: Array<{ reason: string; message: string }>;
  /** What the growth did that the user is told of once (a Normal event). */
  notices?: Array<{ reason: string; message: string }>;
  /** The capacity the volumes have, in GiB, once read. */
  capacityGB?: number;
  /** The size to go on composing, GiB, while the volumes cannot grow to spec.storageGB (or that is not known yet). */
  holdGB?: number;
  /** The size asked, GiB, where it is not spec.storageGB: grown by itself (auto-growth.ts), the floor from then on. */
  requestedGB?: number;
  /** With spec.maxStorageGB: the use last measured (volume-usage.ts). */
  usage?: Usage;
  /** With spec.maxStorageGB: the growth it asked by itself, this call's or the last one recorded. */
  lastAutoGrowth?: AutoGrowth;
}

/** How an instance is made from a source (spec.restore), as its placement records it on the instance. */
export interface Creation {
  /** The placement's own creation settings (a recovery, a snapshot), composed for as long as the instance exists. */
  made?: unknown;
  /** The database inside an instance made from another Database's data: the source's, not this one's. */
  database?: string;
}

/** A Database a DatabaseBackup or DatabaseRestore names, as found: its owner, its spec, where it lives. */
export interface Target {
  /** The Database as its own blueprint sees its owner (its names derive from it). */
  owner: Owner;
  spec: ResolvedSpec;
  placement: Placement;
  /**
   * The instance that serves it now, as its status says (a restore may have
   * moved it to a later generation): the one a backup is taken of.
   */
  instance?: string;
  /** The size its volumes were grown to by itself, as its status says (status.storage.requestedGB). */
  grownGB?: number;
}

/** One call of a DatabaseBackup of a Database of this placement. */
export interface BackupCall {
  input: BlueprintInput<DatabaseBackupSpec>;
  target: Target;
  /** The status the DatabaseBackup has: a finished backup keeps it. */
  previous: Obj;
  /** The dump attempt of this call (1 to 3; 1 for the other methods' first). */
  attempt: number;
}

/** How a placement's backups are taken (a DatabaseBackup of it), read and restored from. */
export interface BackupMethod {
  /** status.method of its DatabaseBackups: dump, cnpg, rds-snapshot. */
  name: string;
  /** What a restore into this placement takes, in words, for a refusal. */
  restores: string;
  /** Whether a backup it took at `location` can be restored from (a dump: an s3:// URL). */
  accepts(location: string): boolean;
  /** Whether its backups go to the Database's spec.backup.objectStore (a backup is refused without one). */
  needsObjectStore: boolean;
  /** What the DatabaseBackup composes and asks for on this call. */
  take(call: BackupCall): { resources: Desired[]; requirements: Record<string, Requirement> };
  /** What the DatabaseBackup says, from what was composed; `base` is its method, engine and version. */
  read(call: BackupCall, base: Obj): Summary;
  /**
   * Whether the backup reads the Database now, as observed (a dump's pod runs, the operator or AWS works on
   * it): while it does, it holds the Database (deletion order). One waiting to start holds nothing: a pod that
   * cannot be scheduled would otherwise keep a broken Database from being deleted.
   */
  reads(call: BackupCall): boolean;
  /**
   * The restore drill of a Completed backup, if this method has one: what
   * the drill asked by `request` composes and asks for on this call (a scratch
   * instance the backup is restored into, and what counts it), and its
   * record once it ended, when it composes nothing more. `startedAt`: when
   * this request's drill began, if it did. backup/drill.ts decides when.
   */
  drill?: (call: BackupCall, request: string, startedAt: string | undefined) => Drill;
}

/** A restore drill's verdict: Failed judges the backup; Incomplete stopped before it could. */
export type DrillResult = 'Running' | 'Passed' | 'Failed' | 'Incomplete';

/** What a restore drill composes, asks for and records on one call. */
export interface Drill {
  resources: Desired[];
  requirements: Record<string, Requirement>;
  /** status.verification: the drill of this request as it stands, else the last one recorded. */
  status?: Obj;
  warnings: Array<{ reason: string; message: string }>;
}

/** What a placement composes on a call, besides what every Database composes (database/compose.ts). */
export interface Composed {
  /** Its own resources, in the order the user hears of them: the live instance first. */
  resources: Desired[];
  requirements: Record<string, Requirement>;
  releasing: Array<{ key: string; why: string }>;
  /** The connection Secret, when there is one to compose (it is never dropped once composed). */
  connection?: Desired;
}

/** What the Database decided on this call before composing, which the placement composes from. */
export interface ComposeCall {
  input: DatabaseCall;
  instances: Instances;
  /** The generation a DatabaseRestore builds, and the one that takes the connection now. */
  target?: RestoreTarget;
  serving: number;
  /** Generations neither live nor being built: handed over. */
  release: readonly number[];
  /** A Database made from a backup or a point in time (spec.restore). */
  restore: {
    /** Applications connect once the data is back (or was connected before). */
    connect: boolean;
    creation?: Creation;
    /** The database inside the live instance: the one an instance made from another Database's data came with. */
    database?: string;
    /** What the first instance made from the source carries from the start. */
    annotations?: Record<string, string>;
  };
  growth?: GrowthPlan;
}

/** How a Database of this placement is made from a backup or a point in time (spec.restore). */
export type RestoreWay =
  | {
      /**
       * The server starts empty; once it is ready a Job of `job` restores the
       * dump into it (lifecycle/jobs.ts), and only then does it get a connection.
       */
      by: 'job';
      job(input: DatabaseCall, location: string): Obj;
      /** Whether the empty server runs (the Job waits for it). */
      serverReady(input: DatabaseCall): boolean;
    }
  | {
      /** The instance is made from the source, and says how it was made for as long as it exists. */
      by: 'creation';
      creation(input: DatabaseCall, source: Source, sourceInstance: string | undefined): Creation;
      /** How an observed instance was made, read back from it. */
      creationOf(instance: Obj): Creation;
    };

export interface Placement {
  /** Where it lives, in words: "a StatefulSet", "CloudNativePG", "on AWS". */
  words: string;
  /** The spec.placement that asks for it (with others: the registry says which spec takes which). */
  asked: ResolvedSpec['placement'];

  // Keys and names.
  /** The composition-resource key of its instance (generation 0's). */
  instanceKey: string;
  /** What the user knows a generation's instance by. */
  instanceName(input: Pick<DatabaseInput, 'owner'>, generation: number): string;
  /** The live generation, read off observed state. */
  liveGeneration(observed: ReadonlyMap<string, Obj>): number;
  /**
   * With nothing of it observed yet, the generation a Database created again
   * on what a deleted one of its name kept under Retain opens: the one it last
   * served, which after a restore is not the first. Undefined: liveGeneration.
   */
  reopened?(input: DatabaseCall): number | undefined;
  /** Whether observed state holds a Database of this placement: its instance, or what only it composes. */
  existsIn(observed: ReadonlyMap<string, Obj>): boolean;

  // Refusals.
  /** The spec's rules that hold here (the XRD's CEL rules about placement, mirrored). */
  refuses(spec: ResolvedSpec | Omit<ResolvedSpec, 'version'>): Problem[];
  /** A major upgrade it cannot make, said with the way there; undefined: it upgrades (behind a backup). */
  refusesUpgrade(spec: ResolvedSpec, running: string): string | undefined;
  /** Why an existing instance of this placement cannot be replaced by `next`'s (a spec switch between the two). */
  refusesBecoming(next: Placement): string | undefined;

  // What runs, read off observed state.
  /** The version it is set to run (an image tag, an engine version), for the version default and refusals. */
  composedVersion(observed: ReadonlyMap<string, Obj>): string | undefined;
  /** The engine of an existing instance when its labels do not say (an RDS instance made before they did). */
  composedEngine(observed: ReadonlyMap<string, Obj>): string | undefined;
  /** The storage it is set to have, GiB: the floor spec.storageGB may not go under. */
  composedStorageGB(observed: ReadonlyMap<string, Obj>): number[];
  /** The version that runs, as its controller or provider reports it (status.version.running). */
  runningVersion(input: DatabaseCall, facts: ExternalFacts | undefined): string | undefined;
  /** A version asked for that does not run yet, in words, with where it stands. */
  pendingVersion(input: DatabaseCall, from: string, wanted: string): string;
  /** Whether a major upgrade is made in place, behind a pinned backup (database/upgrade.ts). */
  upgradesInPlace(spec: ResolvedSpec): boolean;
  /** status.storage beyond what was asked: the capacity it has, the ceiling it may grow to by itself. */
  storage(
    input: DatabaseCall,
    growth: GrowthPlan | undefined,
  ): {
    capacityGB?: number;
    maxGB?: number;
    message?: string;
    /** The size asked, where it grew by itself past spec.storageGB. */
    requestedGB?: number;
    usedGB?: number;
    usedPercent?: number;
    measuredAt?: string;
    lastAutoGrowth?: Obj;
  };
  /** Where applications connect to a generation, once known. */
  endpoint(input: DatabaseCall, generation: number): { host: string; port: number } | undefined;
  /** Where reads go, when not to the primary: its replicas. */
  readEndpoint(input: DatabaseCall, generation: number): { host: string; port: number } | undefined;
  /** Where writes go inside the live instance, and since when, where the place moves it (a failover). */
  primary(observed: ReadonlyMap<string, Obj>): { name?: string; since?: string } | undefined;

  // Status: what blocks readiness, in the place's own words.
  /** What must be there before anything of it can be composed (an operator); the blocker and its reason. */
  prerequisite(input: DatabaseCall): { blocker: string; reason?: string } | undefined;
  /** The live instance's blocker, said as the place says it (AWS's state), in place of its verdict's detail. */
  instanceBlocker(
    input: DatabaseCall,
    verdicts: ReadonlyMap<string, Verdict>,
    live: number,
  ): { message: string; verdict?: Verdict } | undefined;
  /** What the Database waits for while it has no connection Secret yet, if the place writes it. */
  connectionPending(input: DatabaseCall, live: number): string | undefined;
  /** What the user is told was kept of a generation handed over, and how to delete it. */
  kept(input: DatabaseCall, generation: number, why: string): string[];
  /**
   * The object a sentence of `kept` names, read at each call so that the
   * sentence goes once the user has deleted it; undefined where the cluster
   * cannot tell (an RDS instance): it stays listed.
   */
  keptObject?(input: DatabaseCall, sentence: string): Requirement | undefined;
  /**
   * What a generation leaves under its own name once handed over (a claim, a
   * Cluster), read before a restore numbers a new generation: the new one
   * never takes a number whose objects are still there, as it would open them.
   */
  leftBehind?: {
    requirement(input: DatabaseCall): Requirement;
    /** The generation an object of the answer was made for, if it is one. */
    generation(input: DatabaseCall, obj: Obj): number | undefined;
  };

  /**
   * What deleting the Database keeps (status.deletion), said while it lives:
   * Crossplane runs no function while a Database is deleted (its composed
   * resources go by garbage collection), so whatever is kept must be set up
   * beforehand, and said beforehand. `lastBackup` is the newest Completed
   * DatabaseBackup the Database composed, where it schedules them.
   */
  deletion(input: DatabaseCall, live: number, lastBackup?: LastBackup): Deletion;

  // Backups and restores.
  backup: BackupMethod;
  /** Backups the place keeps itself (RDS automated backups); without, the Database schedules DatabaseBackups. */
  automatedBackups?: { health(input: DatabaseCall): Health };
  /** What it says in status.backup: how far back it can be restored, where its own backups are. */
  backupStatus(input: DatabaseCall, live: number, facts?: ExternalFacts): Obj | undefined;
  /**
   * Point-in-time recovery: kept (and why Database `name` has no archive to
   * recover from yet, if so), or why not, said with what to name instead.
   */
  pointInTime:
    | { kept: true; archiveMissing(spec: ResolvedSpec, name: string): string | undefined }
    | { kept: false; why(instead: string): string };
  /** spec.restore reads its source from spec.backup.objectStore: how, in words ("the dump is read from"). */
  restoreReadsStore?: string;
  restore: RestoreWay;
  /** How far the cutover into `target` has come. */
  progress(input: DatabaseCall, target: RestoreTarget): Progress;
  /** Why a generation handed over is kept, as the guard is told. */
  handOverWhy: string;

  // Growth and outside facts.
  /** Its volumes growing, read off what they report. */
  growth?(input: DatabaseCall, instances: Instances): GrowthPlan;
  /** What it asks the outside before composing (AWS). */
  query?(input: DatabaseCall): AwsQuestion | undefined;

  // Composing.
  compose(call: ComposeCall): Composed;
  /**
   * Alerting rules of its own, scoped to the live generation `live`: its
   * volumes, its replicas (the Database's PrometheusRule carries them beside
   * the rules every Database has, database/alerts.ts). None: nothing of it
   * is measured where Prometheus reads (RDS).
   */
  alertRules?(input: DatabaseCall, live: number): AlertRule[];
}
