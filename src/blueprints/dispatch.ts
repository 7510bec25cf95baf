// Which blueprint serves an XR: the one the Composition step's input names,
// else the one that claims the XR's kind.
import type { Blueprint } from './blueprint.js';
import { databaseBackup } from './backup/index.js';
import { databaseRestore } from './restore/index.js';
import { database } from './database/index.js';
import { widget } from './widget.js';
import { BlueprintChoiceError } from '../errors.js';
import type { Obj } from '../kube.js';

/** Every blueprint implemented, in the manifest's order; a test checks the two agree. */
// biome-ignore lint/suspicious/noExplicitAny: each blueprint's resolved form is its own; only it reads it back
export const BLUEPRINTS: ReadonlyArray<Blueprint<any>> = [widget, database, databaseBackup, databaseRestore];

const byName = new Map(BLUEPRINTS.map((b) => [b.name, b]));
const byKind = new Map(BLUEPRINTS.flatMap((b) => b.kinds.map((k) => [k, b] as const)));

function known(): string {
  return BLUEPRINTS.map((b) => `${b.name} (${b.kinds.join(', ')})`).join('; ');
}

/** The blueprint for a kind, or for the name in the step's input (`blueprint: widget`). */
export function blueprintFor(kind: string, input: Obj | undefined): Blueprint<unknown> {
  const named = input?.['blueprint'];
  if (named !== undefined) {
    const chosen = typeof named === 'string' ? byName.get(named) : undefined;
    if (!chosen) {
      throw new BlueprintChoiceError(
        `the step's input names blueprint ${JSON.stringify(named)}, which does not exist; known blueprints: ${known()}`,
      );
    }
    return chosen;
  }
  const chosen = byKind.get(kind);
  if (!chosen) {
    throw new BlueprintChoiceError(
      `no blueprint composes kind ${JSON.stringify(kind)}; known kinds: ${known()}. ` +
        `Name one in the step's input (blueprint: <name>) to compose another kind`,
    );
  }
  return chosen;
}
