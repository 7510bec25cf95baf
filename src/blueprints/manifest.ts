// The blueprints, as manifest.json lists them: the one list that dispatch,
// scripts/generate-schemas.mjs (XRDs to types and validators, the Input CRD's
// enum) and the package tests read. CONTRIBUTING.md says how to add one.
import manifest from './manifest.json' with { type: 'json' };

export interface BlueprintEntry {
  /** The name a Composition step's input may give (`blueprint: <name>`). */
  name: string;
  /** The composite kinds it serves: the namespaced kind and the claims mode's X-kind. */
  kinds: string[];
  /** The custom condition it reports on the composite. */
  conditionType: string;
  /** Its namespaced XRD, the source of its spec and status schemas. */
  xrd: string;
  /** The generated TypeScript type of its spec. */
  specType: string;
  /** Its examples folder. */
  examples: string;
}

export const MANIFEST: readonly BlueprintEntry[] = manifest;

/** The manifest's entry for a blueprint, for its implementation to take its names from, with its spec's schema. */
export function entry(
  name: string,
  specSchema: object,
): Pick<BlueprintEntry, 'name' | 'kinds' | 'conditionType'> & { specSchema: object } {
  const found = MANIFEST.find((b) => b.name === name);
  if (!found) throw new Error(`src/blueprints/manifest.json has no blueprint ${name}`);
  return { name: found.name, kinds: found.kinds, conditionType: found.conditionType, specSchema };
}
