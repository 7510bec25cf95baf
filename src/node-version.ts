// The Node version the function needs, from package.json's `engines`, checked
// before anything else loads: on an older Node the server would start and then
// fail in ways that do not name the cause (or, worse, run slower unnoticed).
import { readFileSync } from 'node:fs';

/** `engines.node` of the package (">=24" or ">=24.1.0"); the image ships package.json beside dist/. */
export function requiredNode(packageJson = new URL('../../package.json', import.meta.url)): string {
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { engines?: { node?: unknown } };
  const range = pkg.engines?.node;
  if (typeof range !== 'string' || !/^>=\s*\d+(\.\d+){0,2}$/.test(range.trim()))
    throw new Error(`package.json engines.node must be ">=MAJOR[.MINOR[.PATCH]]", got ${JSON.stringify(range)}`);
  return range.trim();
}

const parts = (v: string) =>
  v
    .replace(/^[v>=\s]+/, '')
    .split('.')
    .map(Number);

/** Whether `current` (e.g. "v24.3.0") satisfies `range` (">=24.1"); missing parts count as 0. */
export function satisfies(current: string, range: string): boolean {
  const have = parts(current);
  const want = parts(range);
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const w = want[i] ?? 0;
    if (h !== w) return h > w;
  }
  return true;
}

/** The refusal a program prints on too old a Node, naming both versions; undefined when the Node will do. */
export function nodeTooOld(program: string, current = process.version, range = requiredNode()): string | undefined {
  if (satisfies(current, range)) return undefined;
  return `${program} needs Node ${range} (package.json engines) but runs on Node ${current}: start it with a newer node (npm scripts use the project's own Node)`;
}

/** Exits with status 1 and the refusal on stderr when the running Node is too old. */
export function refuseOldNode(program: string): void {
  const why = nodeTooOld(program);
  if (why === undefined) return;
  process.stderr.write(`${why}\n`);
  process.exit(1);
}
