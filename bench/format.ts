// How the benchmark prints: lines to stdout, numbers, aligned tables.

export const say = (s = '') => process.stdout.write(`${s}\n`);

/** A number with `d` decimals, or n/a. */
export const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

/** A ratio, as 1.23×, or – when there is none. */
export const x = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '–');

export const pad = (s: string, n: number, right = false) => (right ? s.padStart(n) : s.padEnd(n));

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Columns padded to their widest cell; from column `rightFrom` on, right-aligned. */
export function table(headers: string[], rows: string[][], rightFrom = 1): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i]!, i >= rightFrom)).join('  ');
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
