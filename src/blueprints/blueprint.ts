// What every blueprint is, in two phases (after kro's split between building
// a graph and running it): `resolve` validates the spec and derives, once,
// everything the call needs from spec and observed state, refusing what would
// lose data; an optional `query` describes the outside facts it wants; then
// `compose` turns that into desired resources and `status` reads how they
// are doing. All four are pure: the facts are found by the live edge.
import type { ExternalFacts, ExternalQuery } from '../facts.js';
import type { Input } from '../generated/schemas.js';
import { describe, type Verdict } from '../kinds/index.js';
import type { Obj } from '../kube.js';

/** Where composed objects go and whom they belong to. */
export interface Owner {
  /** The XR's kind, name and uid. */
  kind: string;
  name: string;
  uid: string;
  /** The namespace workloads land in: the XR's own, or its claim's. */
  namespace: string;
  /** Set when the XR was made from a claim (cluster-scoped composite, legacy XRD). */
  claim?: { name: string; namespace: string };
}

/** What a call tells a blueprint besides its spec, read from the request alone. */
export interface Context {
  owner: Owner;
  /** The observed XR as Crossplane sent it. */
  xr: Obj;
  /** Observed composed resources by composition-resource name, provider-kubernetes Objects unwrapped. */
  observed: ReadonlyMap<string, Obj>;
  /** The same as Crossplane sent them, Objects still wrapped: what deleting one would delete. */
  composed: ReadonlyMap<string, Obj>;
  /** Answers to the requirements of an earlier call, by name; a missing name was not answered yet. */
  required: ReadonlyMap<string, Obj[]>;
  /** A new random password: the only impure input, so tests can watch it. */
  newPassword: () => string;
  /** The time of this call (src/clock.ts), read once. */
  now: Date;
  /** The platform's defaults from the step's Input: a composite's spec wins over them, they over the built-in ones. */
  defaults?: PlatformDefaults;
}

/** What the platform team sets once in a Composition step's Input. */
export type PlatformDefaults = NonNullable<Input['defaults']>;

/** The context with the validated spec, and the facts once they are known: what a blueprint's helpers read. */
export interface BlueprintInput<Spec> extends Context {
  spec: Spec;
  facts?: ExternalFacts;
}

/** Something the function needs to read from the cluster on its next call (Crossplane's required resources): by name or by labels. */
export type Requirement = { apiVersion: string; kind: string; namespace?: string } & (
  | { matchName: string }
  | { matchLabels: Record<string, string> }
);

/** A desired composed resource, in the order the user should hear about it. */
export interface Desired {
  key: string;
  object: Obj;
  /**
   * Does not hold up the composite's readiness: a record or a side task of it
   * (a Database's scheduled backups and their removal), whose health the
   * blueprint reports itself.
   */
  independent?: boolean;
}

export interface Plan {
  resources: Desired[];
  requirements?: Record<string, Requirement>;
  /**
   * Observed data holders this plan lets go on purpose: retention's expired
   * backups, whose stored object is already removed. The nothing-lost guard
   * allows exactly these and nothing else.
   */
  retiring?: ReadonlyArray<{ key: string; why: string }>;
  /**
   * Observed data holders this plan hands over to the user: an instance from
   * before a restore, left in place and no longer managed. The guard allows
   * each only when deleting its observed object keeps the data (volumes
   * retained, the external resource orphaned).
   */
  releasing?: ReadonlyArray<{ key: string; why: string }>;
  /**
   * Observed scratch instances a restore drill made and is done with: the
   * guard allows each only when its observed object carries the scratch
   * label (kinds: SCRATCH_LABEL), so no instance of the user's can go this way.
   */
  discarding?: ReadonlyArray<{ key: string; why: string }>;
}

/** What the blueprint tells the user, from its plan and each resource's verdict. */
export interface Summary {
  ready: boolean;
  /** One sentence naming the first blocker and its numbers. */
  message: string;
  /** A stable CamelCase reason for the custom condition and events. */
  reason: string;
  /** Blueprint-specific status fields (ready and message are added by the pipeline). */
  status: Obj;
  /** Extra warnings for the user (events), each with a stable reason. */
  warnings: Array<{ reason: string; message: string }>;
  /** Normal events besides the one a changed reason makes: a step done once (a restore switched). */
  notices?: Array<{ reason: string; message: string }>;
  /** Custom conditions besides the blueprint's own (a Database's BackupHealthy). */
  conditions?: Array<{ type: string; ok: boolean; reason: string; message: string }>;
  /**
   * The next step is seconds away and must not wait for a watch event, which
   * Crossplane's circuit breaker drops while open (a cutover in flight, or a
   * Widget's old color leaving on the call after READY): the answer asks to be
   * called again within seconds.
   */
  soon?: boolean;
  /**
   * Ready, but work of its own runs that no watch reports (a restore drill,
   * whose scratch instance's recovery Job is not composed): called again at
   * the changing interval, not the settled one.
   */
  working?: boolean;
}

export interface Blueprint<Resolved = unknown> {
  /** The name a Composition's input may use to pick it (src/blueprints/manifest.json lists them). */
  name: string;
  /** XR kinds that select it. */
  kinds: readonly string[];
  /** The custom condition type this blueprint reports on the XR. */
  conditionType: string;
  /** The spec's OpenAPI schema, from the XRD. */
  specSchema: object;
  /**
   * Phase one: the spec validated and defaulted (throws SpecError naming the
   * field), the XRD's CEL rules mirrored, changes that would lose data refused,
   * and everything compose and status need derived once.
   */
  resolve(spec: unknown, ctx: Context): Resolved;
  /** The outside facts wanted before composing, if any. */
  query?(resolved: Resolved): ExternalQuery | undefined;
  /** Phase two: the desired resources, given what the outside said (may still refuse on it). */
  compose(resolved: Resolved, facts: ExternalFacts | undefined): Plan;
  status(
    resolved: Resolved,
    facts: ExternalFacts | undefined,
    plan: Plan,
    verdicts: ReadonlyMap<string, Verdict>,
  ): Summary;
}

/** The first desired resource that is not ready: its verdict, and "Kind name: detail" for the user. */
export function firstBlocking(
  plan: Plan,
  verdicts: ReadonlyMap<string, Verdict>,
): { key: string; verdict: Verdict; message: string } | undefined {
  for (const { key, object, independent } of plan.resources) {
    if (independent) continue;
    const verdict = verdicts.get(key);
    if (verdict && !verdict.ready) return { key, verdict, message: `${describe(object, key)}: ${verdict.detail}` };
  }
  return undefined;
}
