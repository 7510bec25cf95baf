#!/usr/bin/env node
// Generates, from the blueprint manifest (src/blueprints/manifest.json), the
// namespaced XRDs it names (the single source of truth for the APIs) and the
// function's Input CRD:
//   src/generated/schemas.ts                      the function's schemas and types, and the Input's
//   package/configuration-claims/apis/*/definition.yaml   the legacy (v1, claims) XRDs
//   src/generated/validators.ts                   the spec and Input validators, compiled ahead of time
//   package/function/input/...inputs.yaml         the Input CRD's blueprint enum: the manifest's names
// so the function validates with the very schema the API server enforces, and
// both packaging modes serve the same spec and status. Compiling the
// validators here spares every start of the function Ajv and its compiler.
//
//   node scripts/generate-schemas.mjs          write the files
//   node scripts/generate-schemas.mjs --check  exit 1 when a file is stale
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { parse, parseDocument, stringify } from 'yaml';

const standaloneCode = standalone.default ?? standalone;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src/generated/schemas.ts');

// Each blueprint's XRD becomes a schema constant and a spec type.
const manifest = JSON.parse(readFileSync(join(root, 'src/blueprints/manifest.json'), 'utf8'));
const apis = manifest.map((b) => ({ file: b.xrd, name: b.name, type: b.specType }));
const INPUT_CRD = 'package/function/input/platform.fn.example.com_inputs.yaml';

/** The Input CRD with its blueprint enum set to the manifest's names (comments kept). */
function inputCrd() {
  const doc = parseDocument(readFileSync(join(root, INPUT_CRD), 'utf8'));
  const path = ['spec', 'versions', 0, 'schema', 'openAPIV3Schema', 'properties', 'blueprint', 'enum'];
  const enumNode = doc.getIn(path);
  const names = manifest.map((b) => b.name);
  if (JSON.stringify(enumNode?.toJSON?.() ?? enumNode) !== JSON.stringify(names)) {
    const node = doc.createNode(names);
    node.flow = true;
    doc.setIn(path, node);
  }
  return doc.toString({ lineWidth: 0 });
}

/** The Input's schema: the CRD's, without the fields every Kubernetes object has. */
function inputSchema() {
  const schema = structuredClone(parse(inputCrd()).spec.versions[0].schema.openAPIV3Schema);
  for (const k of ['apiVersion', 'kind', 'metadata']) delete schema.properties[k];
  return schema;
}
/**
 * The Input's schema closed: an object that lists its properties takes no
 * other. The API server never sees a step's input (Crossplane hands it over
 * as written), so a typo in a Composition reaches the function, which refuses
 * it by name rather than silently doing less.
 */
function closed(schema) {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]));
  if (out.type === 'object' && out.properties && !out['x-kubernetes-preserve-unknown-fields'])
    out.additionalProperties = false;
  return out;
}

function loadSpecSchema(file) {
  const xrd = parse(readFileSync(join(root, file), 'utf8'));
  const version = xrd.spec.versions.find((v) => v.referenceable) ?? xrd.spec.versions[0];
  const spec = version.schema.openAPIV3Schema.properties.spec;
  if (!spec) throw new Error(`${file}: no spec schema`);
  return { xrd, spec, status: version.schema.openAPIV3Schema.properties.status };
}

function pascal(name) {
  return name.replace(/(^|[-_])([a-z])/g, (_, __, c) => c.toUpperCase());
}

// A small JSON Schema → TypeScript printer for the structural subset that
// Kubernetes allows. `defaulted` makes properties with a default required:
// the function applies defaults before it reads a spec.
function tsType(schema, indent, defaulted) {
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return `Array<${tsType(schema.items ?? {}, indent, defaulted)}>`;
    case 'object': {
      const props = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      const pad = '  '.repeat(indent + 1);
      const lines = [];
      for (const [key, prop] of Object.entries(props)) {
        const optional = !(required.has(key) || (defaulted && prop.default !== undefined));
        if (prop.description) lines.push(`${pad}/** ${prop.description.replace(/\s+/g, ' ').trim()} */`);
        lines.push(`${pad}${JSON.stringify(key)}${optional ? '?' : ''}: ${tsType(prop, indent + 1, defaulted)};`);
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        lines.push(`${pad}[key: string]: ${tsType(schema.additionalProperties, indent + 1, defaulted)};`);
      }
      if (lines.length === 0) return 'Record<string, unknown>';
      return `{\n${lines.join('\n')}\n${'  '.repeat(indent)}}`;
    }
    default:
      return 'unknown';
  }
}

function render() {
  const parts = [
    '// Generated by scripts/generate-schemas.mjs from the XRDs in package/configuration.',
    '// Do not edit: change the XRD and run `npm run generate`.',
    '/* eslint-disable */',
    '',
  ];
  for (const api of apis) {
    const { spec, status, xrd } = loadSpecSchema(api.file);
    const base = pascal(api.name);
    parts.push(`/** The spec schema of ${xrd.spec.names.kind} (${xrd.metadata.name}). */`);
    parts.push(`export const ${api.name}SpecSchema = ${JSON.stringify(spec, null, 2)} as const;`);
    parts.push('');
    parts.push(`/** The status schema of ${xrd.spec.names.kind}: every field the function may write. */`);
    parts.push(`export const ${api.name}StatusSchema = ${JSON.stringify(status ?? {}, null, 2)} as const;`);
    parts.push('');
    parts.push(`/** ${xrd.spec.names.kind} spec with the schema's defaults applied. */`);
    parts.push(`export type ${api.type} = ${tsType(spec, 0, true)};`);
    parts.push('');
    parts.push(`/** ${xrd.spec.names.kind} status as the function writes it. */`);
    parts.push(`export type ${base}Status = ${tsType(status ?? { type: 'object' }, 0, false)};`);
    parts.push('');
  }
  parts.push(`/** The schema of a pipeline step's input (${INPUT_CRD}). */`);
  parts.push(`export const inputSchema = ${JSON.stringify(inputSchema(), null, 2)} as const;`);
  parts.push('');
  parts.push("/** A pipeline step's input, as the Input CRD describes it. */");
  parts.push(`export type Input = ${tsType(inputSchema(), 0, false)};`);
  parts.push('');
  return parts.join('\n');
}

/**
 * The claims form of a namespaced v2 XRD: apiextensions.crossplane.io/v1,
 * a cluster-scoped XR named X<Kind>, and a claim with the user-facing name.
 */
function claimsXrd(file) {
  const xrd = parse(readFileSync(join(root, file), 'utf8'));
  const names = xrd.spec.names;
  const x = (s) => `x${s}`;
  const out = {
    apiVersion: 'apiextensions.crossplane.io/v1',
    kind: 'CompositeResourceDefinition',
    metadata: { name: `${x(names.plural)}.${xrd.spec.group}` },
    spec: {
      group: xrd.spec.group,
      names: {
        kind: `X${names.kind}`,
        plural: x(names.plural),
        singular: x(names.singular),
        categories: ['composite'],
      },
      claimNames: { kind: names.kind, plural: names.plural, singular: names.singular, shortNames: names.shortNames },
      defaultCompositionRef: { name: `${x(names.plural)}.${xrd.spec.group}` },
      versions: xrd.spec.versions,
    },
  };
  const header = `# Generated by scripts/generate-schemas.mjs from ${file}: do not edit.\n# The claims (legacy) form of the same API, for Crossplane v1 and legacy XRDs on v2.\n`;
  return header + stringify(out, { lineWidth: 0 });
}

/**
 * The spec validators as Ajv standalone code (ESM). Its options live here and
 * only here: they decide what the function accepts and how it explains.
 */
function validators() {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    // parentSchema on errors lets messages say the whole allowed range.
    verbose: true,
    // x-kubernetes-* keywords belong to the API server; they are not ours to evaluate here.
    strict: false,
    validateFormats: false,
    // One line per function: generated code is read by Node, not by people.
    code: { source: true, esm: true, lines: false },
  });
  const exports = {};
  for (const api of apis) {
    ajv.addSchema(loadSpecSchema(api.file).spec, api.name);
    exports[api.name] = api.name;
  }
  ajv.addSchema(closed(inputSchema()), 'input');
  exports.input = 'input';
  const code = standaloneCode(ajv, exports).replace(/^"use strict";/, '');
  return [
    '// Generated by scripts/generate-schemas.mjs (Ajv standalone) from the XRDs in package/configuration.',
    '// Do not edit: change the XRD and run `npm run generate`.',
    '// @ts-nocheck',
    "import { createRequire } from 'node:module';",
    'const require = createRequire(import.meta.url);',
    code.trim(),
    '',
  ].join('\n');
}

const outputs = [
  [out, render()],
  [join(root, 'src/generated/validators.ts'), validators()],
  [join(root, INPUT_CRD), inputCrd()],
];
for (const api of apis) {
  outputs.push([
    join(root, api.file.replace('package/configuration/', 'package/configuration-claims/')),
    claimsXrd(api.file),
  ]);
}

if (process.argv.includes('--check')) {
  let stale = false;
  for (const [path, text] of outputs) {
    const current = existsSync(path) ? readFileSync(path, 'utf8') : '';
    if (current !== text) {
      process.stderr.write(`${path} is stale: run npm run generate\n`);
      stale = true;
    }
  }
  if (stale) process.exit(1);
  process.stdout.write('generated schemas are up to date\n');
} else {
  for (const [path, text] of outputs) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
