// The Databases an operation works on: asked of Crossplane as required
// resources, one requirement per namespace with the operation's labels, and
// read back in a stable order (namespace, then name) once every namespace has
// been answered.
import type { Requirement } from '../blueprints/blueprint.js';
import { type Obj, str } from '../kube.js';

export interface Selector {
  namespaces: string[];
  matchLabels?: Record<string, string>;
}

/** The required resource that answers with the Databases of `namespace`. */
export const requirementName = (namespace: string) => `databases-in-${namespace}`;

export interface Selected {
  namespaces: string[];
  requirements: Record<string, Requirement>;
  /** Every Database matched, once every namespace is answered (until then, undefined). */
  databases?: Array<{ namespace: string; name: string; object: Obj }>;
}

export function selectDatabases(selector: Selector, required: ReadonlyMap<string, readonly Obj[]>): Selected {
  const namespaces = [...new Set(selector.namespaces)].sort();
  const requirements: Record<string, Requirement> = {};
  for (const namespace of namespaces)
    requirements[requirementName(namespace)] = {
      apiVersion: 'example.com/v1',
      kind: 'Database',
      matchLabels: selector.matchLabels ?? {},
      namespace,
    };
  if (namespaces.some((ns) => !required.has(requirementName(ns)))) return { namespaces, requirements };
  const databases = namespaces.flatMap((namespace) =>
    (required.get(requirementName(namespace)) ?? [])
      .map((object) => ({ namespace, name: str(object, 'metadata', 'name') ?? '', object }))
      .filter((d) => d.name !== '')
      .sort((a, b) => a.name.localeCompare(b.name)),
  );
  return { namespaces, requirements, databases };
}

/** The labels in words, for a sentence: " with tier=prod,team=a", or nothing. */
export function labelWords(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {});
  return entries.length ? ` with ${entries.map(([k, v]) => `${k}=${v}`).join(',')}` : '';
}
