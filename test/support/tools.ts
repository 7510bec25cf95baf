// The Go tools the project's scripts build into .cache/bin, for tests that
// need them. Missing locally, a suite skips loudly; in CI a missing tool is
// an error, because a skipped suite would look like a passing one.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { binDir } from '../../dev/infra/paths.js';

export { binDir };

/** CI=true/1/anything except empty, "0" and "false" means we are in CI. */
export function inCI(): boolean {
  const ci = (process.env['CI'] ?? '').trim().toLowerCase();
  return ci !== '' && ci !== '0' && ci !== 'false';
}

/** .cache/bin/NAME. */
export function toolPath(name: string): string {
  return join(binDir, name);
}

/**
 * Why `suite` must skip, or undefined when every tool it needs is built.
 * `script` is what builds them, named in the message.
 */
export function toolsSkipReason(suite: string, names: readonly string[], script: string): string | undefined {
  const missing = names.filter((n) => !existsSync(toolPath(n)));
  if (missing.length === 0) return undefined;
  const reason = `${missing.join(', ')} not built: run \`bash ${script}\``;
  if (inCI()) throw new Error(`${suite}: ${reason} (CI must run every suite)`);
  console.warn(`\n!!!!!!!!!!\n!!! SKIPPING ${suite}: ${reason}\n!!! (in CI this is an error)\n!!!!!!!!!!\n`);
  return reason;
}
