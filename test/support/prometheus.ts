// Reading a Prometheus text exposition, for tests that scrape --metrics-address.

/** Samples of a Prometheus text: `name{labels}` to value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The sum of the samples of `name` whose labels include every pair in `labels`. */
export function sum(s: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const [key, v] of s) {
    const brace = key.indexOf('{');
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, val]) => key.includes(`${k}="${val}"`))) total += v;
  }
  return total;
}
