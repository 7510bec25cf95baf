// Names of composed objects. They must be stable across calls (they are
// derived from the XR, never random) and valid where Kubernetes puts them.
import { createHash } from 'node:crypto';

const MAX_LABEL = 63;

/** Names repeat on every reconcile: remember their hashes (a bounded memo, cleared when full). */
const hashes = new Map<string, string>();

export function shortHash(text: string, length = 6): string {
  let hex = hashes.get(text);
  if (hex === undefined) {
    if (hashes.size >= 4096) hashes.clear();
    hex = createHash('sha256').update(text).digest('hex');
    // Long texts are rare and not worth the memory.
    if (text.length <= 512) hashes.set(text, hex);
  }
  return hex.slice(0, length);
}

/**
 * `<base>-<suffix>` as a DNS-1035 label (what Service names need): at most 63
 * characters, lowercase, starting with a letter. A name that had to be
 * shortened or cleaned keeps its start and gains a hash of the whole, so two
 * different inputs never end up with the same name.
 */
export function dnsLabel(base: string, ...suffixes: string[]): string {
  return boundedLabel(MAX_LABEL, base, ...suffixes);
}

/** Labels repeat on every reconcile, and a Database asks for its base name a dozen times a call: remember them. */
const labels = new Map<string, string>();

/** dnsLabel with a tighter bound, for names Kubernetes extends (a StatefulSet's pods and revisions). */
export function boundedLabel(max: number, base: string, ...suffixes: string[]): string {
  const whole = [base, ...suffixes].filter((p) => p !== '').join('-');
  // The label depends on the bound and the whole name only: that is the key.
  const key = `${max}:${whole}`;
  let label = labels.get(key);
  if (label === undefined) {
    label = makeLabel(max, whole);
    if (labels.size >= 4096) labels.clear();
    // Long names are rare and not worth the memory.
    if (key.length <= 512) labels.set(key, label);
  }
  return label;
}

function makeLabel(max: number, whole: string): string {
  if (whole.length <= max && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(whole)) return whole;
  const hash = shortHash(whole);
  let stem = whole.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (!/^[a-z]/.test(stem)) stem = `x-${stem}`;
  stem = stem.slice(0, max - hash.length - 1).replace(/-+$/, '');
  return `${stem}-${hash}`;
}
