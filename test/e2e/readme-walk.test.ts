// The README's "Try it on your machine", walked as written: every command of
// its blocks marked `sh walk`, in order, in one bash with `set -e` from the
// checkout, against the local control plane those commands bring up in
// .cache/cluster. Two commands are not run as written, and say so in the
// transcript: `npm ci` (done before the tests; run here it would replace the
// node_modules the tests run from) and the build `npm run cluster` starts with
// (dist/ is what this test runs from; the control plane is started by the same
// script without it). Each sample output block (```text output) must match
// what the commands printed, header by header, so the README cannot drift
// from the product again.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { repoRoot } from '../../dev/infra/paths.js';
import { motoServerPath } from '../../dev/infra/moto.js';
import { runs } from '../../dev/infra/processes.js';
import { type ControlPlaneState, controlPlaneSkipReason } from '../support/control-plane.js';
import { inCI } from '../support/tools.js';

const README = join(repoRoot, 'README.md');
const SECTION = '## Try it on your machine';

/** The section's text, up to the next second-level heading. */
export function walkSection(markdown: string): string {
  const start = markdown.indexOf(SECTION);
  if (start < 0) throw new Error(`README.md has no "${SECTION}"`);
  const next = markdown.indexOf('\n## ', start + SECTION.length);
  return markdown.slice(start, next < 0 ? undefined : next);
}

/** The fenced blocks whose info string is `lang tag`, their lines. */
export function blocks(section: string, lang: string, tag: string): string[][] {
  const out: string[][] = [];
  const re = new RegExp(`^\`\`\`${lang} ${tag}\\n([\\s\\S]*?)^\`\`\``, 'gm');
  for (const m of section.matchAll(re)) out.push(m[1]!.split('\n').filter((l) => l.trim() !== ''));
  return out;
}

/** How a command of the walk is run: as written, or (said in the transcript) the equivalent without a build. */
export function asRun(command: string): string {
  const bare = command.replace(/\s+#.*$/, '').trim();
  if (bare === 'npm ci') return `echo "(npm ci: done before the tests, not repeated here)"`;
  const cluster = /^npm run cluster(?: -- (.*))?$/.exec(bare);
  if (cluster)
    return `echo "(npm run cluster, without its build: dist/ is built)"; "$WALK_NODE" dist/test/support/control-plane-cli.js up ${cluster[1] ?? ''}`;
  return command;
}

function skipReason(): string | undefined {
  const tools = controlPlaneSkipReason('e2e: the README walk', { claims: true });
  if (tools) return tools;
  const why = (reason: string) => {
    if (inCI()) throw new Error(`e2e: the README walk: ${reason} (CI must run every suite)`);
    console.warn(`\n!!! SKIPPING the README walk: ${reason} !!!\n`);
    return reason;
  };
  if (!motoServerPath()) return why('moto is not installed (bash scripts/install-moto.sh)');
  // It uses .cache/cluster as the README does: never over a control plane someone is using.
  const state = join(repoRoot, '.cache', 'cluster', 'state.json');
  if (existsSync(state)) {
    const s = JSON.parse(readFileSync(state, 'utf8')) as ControlPlaneState;
    if (s.processes.some(runs)) return why('a control plane runs in .cache/cluster (npm run cluster:down first)');
  }
  return undefined;
}

const skip = skipReason();

/**
 * One bash for the whole walk, so that exports carry from block to block as in
 * the reader's shell; each command's output and exit code are read back.
 */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private buffer = '';
  transcript = '';
  private waiting: ((rc: number) => void) | undefined;

  constructor() {
    // The environment a newcomer's shell has: no KUBECONFIG of ours, the CLI not yet on PATH. npm puts the
    // project's Node first on PATH for npm run; the unbuilt `npm run cluster` uses the same Node.
    const env: NodeJS.ProcessEnv = { ...process.env, WALK_NODE: process.execPath };
    delete env['KUBECONFIG'];
    delete env['KUBECACHEDIR'];
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: repoRoot, env });
    const take = (d: Buffer) => {
      this.buffer += d.toString();
      const m = /__WALK_RC_(\d+)__\n/.exec(this.buffer);
      if (!m) return;
      this.transcript += this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const done = this.waiting;
      this.waiting = undefined;
      done?.(Number(m[1]));
    };
    this.child.stdout.on('data', take);
    this.child.stderr.on('data', (d: Buffer) => {
      this.buffer += d.toString();
    });
  }

  /** Runs one command as written (or as asRun says); resolves with its exit code. */
  run(command: string): Promise<number> {
    this.transcript += `$ ${command}\n`;
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.child.stdin.write(`${asRun(command)}\necho "__WALK_RC_$?__"\n`);
    });
  }

  close(): void {
    this.child.stdin.end('exit\n');
  }
}

describe('the README walk, as written', { skip }, () => {
  const section = skip ? '' : walkSection(readFileSync(README, 'utf8'));
  const walk = blocks(section, 'sh', 'walk');
  let shell: Shell;
  let failed = false;
  before(() => {
    shell = new Shell();
  });
  after(async () => {
    shell?.close();
    writeFileSync(join(repoRoot, '.cache', 'readme-walk.log'), shell?.transcript ?? '');
    // Whatever a failed walk left running goes, as a user would stop it.
    if (failed)
      await new Promise((resolve) =>
        spawn(process.execPath, ['dist/test/support/control-plane-cli.js', 'down'], { cwd: repoRoot }).on(
          'close',
          resolve,
        ),
      );
  });

  test('the walk is there: its commands and sample outputs', () => {
    assert.ok(walk.flat().length > 20, `the walk has ${walk.flat().length} commands`);
    assert.ok(blocks(section, 'text', 'output').length >= 5);
  });

  for (const [i, block] of walk.entries()) {
    test(`block ${i + 1}: ${block[0]}${block.length > 1 ? ` (and ${block.length - 1} more)` : ''}`, async (t) => {
      for (const command of block) {
        if (failed) return t.skip('an earlier command of the walk failed');
        const started = Date.now();
        const rc = await shell.run(command);
        t.diagnostic(`${command.replace(/\s+#.*$/, '')}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
        if (rc !== 0) {
          failed = true;
          assert.fail(
            `\`${command}\` exited ${rc}; the last of the walk:\n${shell.transcript.split('\n').slice(-30).join('\n')}`,
          );
        }
      }
    });
  }

  test('what the README shows is what the walk printed', () => {
    if (failed) return;
    const output = shell.transcript;
    // Each sample's table headers are what the commands printed (columns, not widths).
    const norm = (l: string) =>
      l
        .trim()
        .split(/\s{2,}/)
        .join(' | ');
    const printed = new Set(output.split('\n').map(norm));
    const samples = blocks(section, 'text', 'output').flat();
    const headers = samples.filter((l) => /^NAME\s/.test(l));
    assert.ok(headers.length >= 5, `the samples have ${headers.length} headers`);
    for (const h of headers) assert.ok(printed.has(norm(h)), `the README shows a header the walk did not print:\n${h}`);
    // And the rows it shows, by their first two columns.
    for (const row of samples) {
      const m = /^(my-widget|orders[-a-z]*)\s{2,}(\S+)/.exec(row);
      if (!m) continue;
      assert.ok(
        output.split('\n').some((l) => norm(l).startsWith(`${m[1]} | ${m[2]}`)),
        `the README shows a row the walk did not print: ${m[1]} ${m[2]}`,
      );
    }
  });
});
