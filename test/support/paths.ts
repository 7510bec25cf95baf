import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: tests run compiled from dist/test/. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
