// Runs the real Crossplane CLI (`crank render`, built by
// scripts/install-crossplane.sh) against a function started by the test, so
// examples are checked the way users will render them.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { repoRoot } from './function-process.js';
import { inCI } from './tools.js';

export { inCI };

// Rendered objects are arbitrary Kubernetes YAML; tests navigate them freely.
export type Doc = Record<string, any>;

export const RESOURCE_NAME_ANNOTATION = 'crossplane.io/composition-resource-name';
const RUNTIME_ANNOTATION = 'render.crossplane.io/runtime';
const TARGET_ANNOTATION = 'render.crossplane.io/runtime-development-target';

/**
 * The crank binary: $CRANK_BIN, else .cache/bin/crank. Undefined when it is
 * missing locally (tests then skip loudly); in CI a missing binary is an
 * error, because a skipped render suite would look like a passing one.
 */
export function findCrank(): string | undefined {
  const fromEnv = process.env['CRANK_BIN'];
  if (fromEnv) {
    // An explicit path that does not exist is a mistake, not a reason to skip.
    if (!existsSync(fromEnv)) throw new Error(`CRANK_BIN=${fromEnv} does not exist`);
    return fromEnv;
  }
  const bin = join(repoRoot, '.cache', 'bin', 'crank');
  if (existsSync(bin)) return bin;
  if (inCI()) throw new Error(`crank not found at ${bin} and CI is set: run scripts/install-crossplane.sh first`);
  return undefined;
}

/** Why render tests are skipped, or undefined if they can run. Warns loudly when skipping. */
export function crankSkipReason(suite: string): string | undefined {
  if (findCrank() !== undefined) return undefined;
  const reason = 'crank not installed: run `bash scripts/install-crossplane.sh` (or set CRANK_BIN)';
  console.warn(`\n!!!!!!!!!!\n!!! SKIPPING ${suite}: ${reason}\n!!! (in CI this is an error)\n!!!!!!!!!!\n`);
  return reason;
}

/** A file path (relative to the repo root or absolute), or objects to write to a temp YAML file. */
export type YamlInput = string | Doc | Doc[];

export interface RenderOptions {
  /** The composite resource. */
  xr: YamlInput;
  /** The Composition. */
  composition: YamlInput;
  /** host:port of the running function; every Function in `functions` is pointed there. */
  functionsTarget: string;
  /** The Functions file; defaults to examples/functions.yaml. */
  functions?: string;
  /** Observed composed resources (-o). */
  observed?: YamlInput;
  /** Include results as kind: Result documents (-r); default true. */
  includeResults?: boolean;
  /** More crank render flags, e.g. ['-x'] or ['--context-values=...']. */
  extraArgs?: string[];
  /** Binary to run; defaults to findCrank(). */
  bin?: string;
  timeoutMs?: number;
}

export interface RenderResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed: the XR first, composed resources by composition-resource name, then Results. */
  docs: Doc[];
  /** The command line, for assertion messages. */
  command: string;
}

function materialize(input: YamlInput, dir: string, name: string): string {
  if (typeof input === 'string') return isAbsolute(input) ? input : join(repoRoot, input);
  const docs = Array.isArray(input) ? input : [input];
  const path = join(dir, name);
  writeFileSync(path, docs.map((d) => `---\n${stringify(d)}`).join(''));
  return path;
}

/** Reads every YAML document of a file (relative to the repo root or absolute). */
export function readYamlDocs(path: string): Doc[] {
  const text = readFileSync(isAbsolute(path) ? path : join(repoRoot, path), 'utf8');
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((d): d is Doc => d !== null && typeof d === 'object');
}

/**
 * A copy of the Functions file with every Function forced onto the
 * Development runtime at `target`: tests never rely on port 9443 being free.
 */
function functionsFor(path: string, target: string): string {
  const docs = readYamlDocs(path);
  for (const d of docs) {
    if (d['kind'] !== 'Function') continue;
    d['metadata'] ??= {};
    d['metadata']['annotations'] = {
      ...d['metadata']['annotations'],
      [RUNTIME_ANNOTATION]: 'Development',
      [TARGET_ANNOTATION]: target,
    };
  }
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

function run(
  bin: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      stderr += `\n[test] crank killed after ${timeoutMs}ms`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `crank render XR COMPOSITION FUNCTIONS [-r] [-o OBSERVED] ...`, parsed. */
export async function render(opts: RenderOptions): Promise<RenderResult> {
  const bin = opts.bin ?? findCrank();
  if (!bin) throw new Error('crank not installed: run scripts/install-crossplane.sh');
  const dir = mkdtempSync(join(tmpdir(), 'crank-render-'));
  try {
    const functions = join(dir, 'functions.yaml');
    writeFileSync(functions, functionsFor(opts.functions ?? 'examples/functions.yaml', opts.functionsTarget));
    const args = [
      'render',
      materialize(opts.xr, dir, 'xr.yaml'),
      materialize(opts.composition, dir, 'composition.yaml'),
      functions,
    ];
    if (opts.includeResults ?? true) args.push('-r');
    if (opts.observed !== undefined) args.push('-o', materialize(opts.observed, dir, 'observed.yaml'));
    args.push(...(opts.extraArgs ?? []));
    // crank's own --timeout is 1m; ours only guards against a hung process.
    const { code, stdout, stderr } = await run(bin, args, opts.timeoutMs ?? 90_000);
    let docs: Doc[] = [];
    try {
      docs = parseAllDocuments(stdout)
        .map((d) => d.toJS() as unknown)
        .filter((d): d is Doc => d !== null && typeof d === 'object');
    } catch {
      // Failed renders print nothing useful on stdout; callers look at code/stderr.
    }
    return { code, stdout, stderr, docs, command: [bin, ...args].join(' ') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Helpers for navigating rendered output.

/** The rendered XR: always the first document. */
export function xrOf(r: RenderResult): Doc {
  const xr = r.docs[0];
  if (!xr) throw new Error(`no documents rendered by ${r.command}\nstderr: ${r.stderr}`);
  return xr;
}

/** The composed resources (not the XR, not Results), by composition-resource name. */
export function composedOf(r: RenderResult): Map<string, Doc> {
  const out = new Map<string, Doc>();
  for (const d of r.docs.slice(1)) {
    const name = d['metadata']?.['annotations']?.[RESOURCE_NAME_ANNOTATION];
    if (typeof name === 'string') out.set(name, d);
  }
  return out;
}

/** A composed resource by kind and metadata.name, if rendered. */
export function findComposed(r: RenderResult, kind: string, name?: string): Doc | undefined {
  return [...composedOf(r).values()].find(
    (d) => d['kind'] === kind && (name === undefined || d['metadata']?.['name'] === name),
  );
}

/** kind: Result documents (present with -r). */
export function resultsOf(r: RenderResult): Doc[] {
  return r.docs.filter((d) => d['apiVersion'] === 'render.crossplane.io/v1beta1' && d['kind'] === 'Result');
}

/** A status condition of an object by type. */
export function conditionOf(obj: Doc, type: string): Doc | undefined {
  const conditions: unknown = obj['status']?.['conditions'];
  return Array.isArray(conditions) ? (conditions as Doc[]).find((c) => c['type'] === type) : undefined;
}

/** YAML files directly in `dir` (repo-relative) whose first document is of `kind`: the example XRs. */
export function exampleXRs(dir: string, kind: string): string[] {
  return readdirSync(join(repoRoot, dir))
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(dir, f))
    .filter((f) => readYamlDocs(f)[0]?.['kind'] === kind)
    .sort();
}
