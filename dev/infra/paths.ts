// Where things are in the repository, for code compiled to dist/<dir>/....
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: this file runs compiled as dist/dev/infra/paths.js. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const examplesDir = join(repoRoot, 'examples');
export const binDir = join(repoRoot, '.cache', 'bin');
/** The real schemas (CRDs, Kubernetes' OpenAPI), beside the checkout. */
export const SHARED_CRDS = join(repoRoot, '..', 'shared', 'crds');
