// Names of composed objects. They must be stable across calls (they are
// derived from the XR, never random) and valid where Kubernetes puts them.
import { createHash } from 'node:crypto';

const MAX_LABEL = 63;

export function shortHash(text: string, length = 6): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
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

/** dnsLabel with a tighter bound, for names Kubernetes extends (a StatefulSet's pods and revisions). */
export function boundedLabel(max: number, base: string, ...suffixes: string[]): string {
  const whole = [base, ...suffixes].filter((p) => p !== '').join('-');
  if (whole.length <= max && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(whole)) return whole;
  const hash = shortHash(whole);
  let stem = whole.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (!/^[a-z]/.test(stem)) stem = `x-${stem}`;
  stem = stem.slice(0, max - hash.length - 1).replace(/-+$/, '');
  return `${stem}-${hash}`;
}
