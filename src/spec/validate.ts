// Validates a spec against its XRD schema and fills in the schema's defaults,
// as the API server would. The validators are compiled ahead of time from the
// XRDs (scripts/generate-schemas.mjs): no schema compiler runs at start.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { SpecError } from '../errors.js';

/** A spec that failed its schema: every message names the field, the value and what is allowed. */

/** How a value is shown in an error: short, and never a whole object. */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 61)}...` : value);
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

function valueAt(root: unknown, pointer: string): unknown {
  let cur: unknown = root;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function pathOf(prefix: string, pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .reduce((p, raw) => {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      return /^\d+$/.test(key)
        ? `${p}[${key}]`
        : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
          ? `${p}.${key}`
          : `${p}[${JSON.stringify(key)}]`;
    }, prefix);
}

/** Where users put secrets (environment values): errors say what a value is, never what it says. */
const SECRET_PATHS = /^\/env(\/|$)/;

function describeValue(value: unknown, pointer: string): string {
  if (!SECRET_PATHS.test(pointer)) return show(value);
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (typeof value === 'number') return 'a number';
  return show(typeof value === 'object' && value !== null ? value : typeof value);
}

function describeError(prefix: string, root: unknown, e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') {
    return `${pathOf(prefix, e.instancePath)}.${String(params['missingProperty'])} is required`;
  }
  const path = pathOf(prefix, e.instancePath);
  const got = describeValue(valueAt(root, e.instancePath), e.instancePath);
  const schema = e.parentSchema as Record<string, unknown> | undefined;
  switch (e.keyword) {
    case 'type':
      return `${path} is ${got}; it must be ${params['type'] === 'integer' ? 'a whole number' : `a ${String(params['type'])}`}`;
    case 'enum':
      return `${path} is ${got}; allowed: ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minimum':
    case 'maximum': {
      const min = schema?.['minimum'];
      const max = schema?.['maximum'];
      const range =
        min !== undefined && max !== undefined
          ? `from ${min} to ${max}`
          : e.keyword === 'minimum'
            ? `at least ${min}`
            : `at most ${max}`;
      return `${path} is ${got}; it must be ${range}`;
    }
    case 'pattern':
      return `${path} is ${got}; it must match ${String(params['pattern'])}${hintFor(schema)}`;
    case 'minLength':
      return `${path} is ${got}; it must be at least ${String(params['limit'])} characters`;
    case 'maxLength':
      return `${path} is ${got.length > 20 ? 'too long' : got}; it must be at most ${String(params['limit'])} characters`;
    case 'maxProperties':
      return `${path} has too many entries; at most ${String(params['limit'])} are allowed`;
    case 'additionalProperties':
      return `${path}.${String(params['additionalProperty'])} is not a known field`;
    default:
      return `${path} is ${got}; ${e.message ?? 'it is invalid'}`;
  }
}

/** Patterns are exact but unfriendly; say in words what the common ones mean. */
function hintFor(schema: Record<string, unknown> | undefined): string {
  const pattern = schema?.['pattern'];
  if (pattern === '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
    return ' (a DNS label: lowercase letters, digits and "-", starting and ending with a letter or digit)';
  return '';
}

/** Returns the spec with defaults applied, or throws SpecError. Never mutates its input. */
export type SpecValidator<T> = (spec: unknown) => T;

/** A copy of JSON data (what a protobuf Struct decodes to): faster than structuredClone on the hot path. */
function copyJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyJson);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) out[key] = copyJson((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/** Wraps a generated validator; it copies its input before defaulting it. */
/**
 * The validator of one schema; `rules` are the checks the schema cannot
 * state (the XRD's CEL rules), run on the defaulted spec and throwing SpecError.
 */
export function specValidator<T>(
  validate: ValidateFunction,
  prefix = 'spec',
  rules?: (spec: T) => void,
): SpecValidator<T> {
  return (spec: unknown): T => {
    if (spec === undefined || spec === null) {
      throw new SpecError([`${prefix} is missing; the object needs a ${prefix} (an empty one takes every default)`]);
    }
    const copy = copyJson(spec);
    if (validate(copy)) {
      rules?.(copy as T);
      return copy as T;
    }
    const problems = [...new Set((validate.errors ?? []).map((e) => describeError(prefix, copy, e)))];
    throw new SpecError(problems);
  };
}

/** Fields Crossplane itself keeps in a composite's spec (legacy composites keep them at the top). */
const MACHINERY = new Set([
  'crossplane',
  'claimRef',
  'compositionRef',
  'compositionSelector',
  'compositionRevisionRef',
  'compositionRevisionSelector',
  'compositionUpdatePolicy',
  'resourceRefs',
  'writeConnectionSecretToRef',
  'publishConnectionDetailsTo',
  'environmentConfigRefs',
]);

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * Fields the schema does not declare. The API server prunes them from a
 * composite, so a cluster never sends them; a local render may, and a typo
 * there (spec.colour) deserves a word rather than silence.
 */
export function unknownFields(schema: unknown, value: unknown, path = 'spec'): string[] {
  const s = schema as {
    properties?: Record<string, unknown>;
    items?: unknown;
    additionalProperties?: unknown;
    'x-kubernetes-preserve-unknown-fields'?: boolean;
  };
  if (Array.isArray(value)) return s.items ? value.flatMap((v, i) => unknownFields(s.items, v, `${path}[${i}]`)) : [];
  if (
    typeof value !== 'object' ||
    value === null ||
    !s.properties ||
    s.additionalProperties ||
    s['x-kubernetes-preserve-unknown-fields']
  )
    return [];
  const out: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const known = s.properties[key];
    if (known) {
      out.push(...unknownFields(known, child, `${path}.${key}`));
      continue;
    }
    if (path === 'spec' && MACHINERY.has(key)) continue;
    const near = Object.keys(s.properties).find((k) => distance(k, key) <= 2);
    out.push(`${path}.${key} is not a field and is ignored${near ? `; did you mean ${path}.${near}?` : ''}`);
  }
  return out;
}
