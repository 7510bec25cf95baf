// What every blueprint is: a pure function from a validated spec and the
// observed state to desired resources, and a reading of how they are doing.
import type { AwsFacts } from '../aws/facts.js';
import { describe, type Obj } from '../kube.js';
import type { Verdict } from '../kinds/index.js';

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

export interface BlueprintInput<Spec> {
  owner: Owner;
  spec: Spec;
  /** The observed XR as Crossplane sent it. */
  xr: Obj;
  /** Observed composed resources by composition-resource name. */
  observed: ReadonlyMap<string, Obj>;
  /** Answers to the requirements of an earlier call, by name; a missing name was not answered yet. */
  required: ReadonlyMap<string, Obj[]>;
  /** A new random password: the only impure input, so tests can watch it. */
  newPassword: () => string;
  /** Facts read from outside the cluster before this call (AWS), when there are any. */
  facts?: ExternalFacts;
}

/** What the edges learned for this call; blueprints only read it. */
export interface ExternalFacts {
  aws?: AwsFacts;
}

/** Something the function needs to read from the cluster on its next call (Crossplane's required resources). */
export interface Requirement {
  apiVersion: string;
  kind: string;
  matchName: string;
  namespace?: string;
}

/** A desired composed resource, in the order the user should hear about it. */
export interface Desired {
  key: string;
  object: Obj;
}

export interface Plan {
  resources: Desired[];
  requirements?: Record<string, Requirement>;
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
}

export interface Blueprint<Spec = unknown> {
  /** The name a Composition's input may use to pick it. */
  name: string;
  /** XR kinds that select it. */
  kinds: readonly string[];
  /** The custom condition type this blueprint reports on the XR. */
  conditionType: string;
  /** The spec's OpenAPI schema, from the XRD. */
  specSchema: object;
  /** Validates and defaults the spec; throws SpecError naming the field. */
  parse(spec: unknown, input: Omit<BlueprintInput<unknown>, 'spec'>): Spec;
  compose(input: BlueprintInput<Spec>): Plan;
  summarize(input: BlueprintInput<Spec>, plan: Plan, verdicts: ReadonlyMap<string, Verdict>): Summary;
}

/** The first desired resource that is not ready: its verdict, and "Kind name: detail" for the user. */
export function firstBlocking(plan: Plan, verdicts: ReadonlyMap<string, Verdict>): { key: string; verdict: Verdict; message: string } | undefined {
  for (const { key, object } of plan.resources) {
    const verdict = verdicts.get(key);
    if (verdict && !verdict.ready) return { key, verdict, message: `${describe(object, key)}: ${verdict.detail}` };
  }
  return undefined;
}

/** The first blocker's message (see firstBlocking). */
export function firstBlocker(plan: Plan, verdicts: ReadonlyMap<string, Verdict>): string | undefined {
  return firstBlocking(plan, verdicts)?.message;
}
