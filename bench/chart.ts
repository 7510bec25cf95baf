// The benchmark's chart: latency by concurrency, one panel per case, one
// colour per implementation (p50 solid, p99 dashed), as a plain SVG string.

export interface Series {
  label: string;
  color: string;
  /** One point per concurrency level. */
  points: Array<{ concurrency: number; p50: number; p99: number }>;
}

export interface Panel {
  title: string;
  series: Series[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fmt = (n: number) =>
  Math.abs(n - Math.round(n)) < 1e-9 ? String(Math.round(n)) : String(Number(n.toPrecision(2)));

/** 1-2-5 ticks covering [lo, hi]. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)) - 1; e <= Math.ceil(Math.log10(hi)) + 1; e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
  }
  return out;
}

export function latencyChart(opts: { title: string; subtitle: string; panels: Panel[]; levels: number[] }): string {
  const cols = 2;
  const rows = Math.ceil(opts.panels.length / cols);
  const pw = 420; // panel width
  const ph = 260; // panel height
  const m = { left: 56, right: 26, top: 34, bottom: 40 };
  const headerH = 78;
  const width = cols * pw;
  const height = headerH + rows * ph;

  const all = opts.panels
    .flatMap((p) => p.series.flatMap((s) => s.points.flatMap((pt) => [pt.p50, pt.p99])))
    .filter((v) => v > 0 && Number.isFinite(v));
  const yLo = 10 ** Math.floor(Math.log10(Math.min(...all, 1)));
  const yHi = 10 ** Math.ceil(Math.log10(Math.max(...all, 1)));
  const ticks = logTicks(yLo, yHi);
  const levels = [...opts.levels].sort((a, b) => a - b);
  const xLo = Math.log2(levels[0] ?? 1);
  const xHi = Math.log2(levels[levels.length - 1] ?? 64);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="16" y="24" font-size="16" font-weight="600">${esc(opts.title)}</text>`);
  out.push(`<text x="16" y="44" fill="#555">${esc(opts.subtitle)}</text>`);

  // Legend: implementations, then the line styles.
  const legendSeries = opts.panels[0]?.series ?? [];
  let lx = 16;
  for (const s of legendSeries) {
    out.push(`<line x1="${lx}" y1="62" x2="${lx + 22}" y2="62" stroke="${s.color}" stroke-width="2.5"/>`);
    out.push(`<text x="${lx + 28}" y="66">${esc(s.label)}</text>`);
    lx += 40 + s.label.length * 6.6;
  }
  out.push(
    `<line x1="${lx}" y1="62" x2="${lx + 22}" y2="62" stroke="#333" stroke-width="1.5"/><text x="${lx + 28}" y="66">p50</text>`,
  );
  lx += 64;
  out.push(
    `<line x1="${lx}" y1="62" x2="${lx + 22}" y2="62" stroke="#333" stroke-width="1.5" stroke-dasharray="5 3"/><text x="${lx + 28}" y="66">p99</text>`,
  );

  opts.panels.forEach((panel, i) => {
    const ox = (i % cols) * pw;
    const oy = headerH + Math.floor(i / cols) * ph;
    const x0 = ox + m.left;
    const x1 = ox + pw - m.right;
    const y0 = oy + ph - m.bottom;
    const y1 = oy + m.top;
    const X = (c: number) => (xHi === xLo ? (x0 + x1) / 2 : x0 + ((Math.log2(c) - xLo) / (xHi - xLo)) * (x1 - x0));
    const Y = (v: number) =>
      y0 - ((Math.log10(Math.max(v, yLo)) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo))) * (y0 - y1);

    out.push(`<text x="${x0}" y="${oy + 22}" font-weight="600">${esc(panel.title)}</text>`);
    for (const t of ticks) {
      const y = Y(t).toFixed(1);
      const major = Math.abs(Math.log10(t) - Math.round(Math.log10(t))) < 1e-9;
      out.push(`<line x1="${x0}" y1="${y}" x2="${x1}" y2="${y}" stroke="${major ? '#ddd' : '#f0f0f0'}"/>`);
      out.push(`<text x="${x0 - 6}" y="${(Number(y) + 4).toFixed(1)}" text-anchor="end" fill="#555">${fmt(t)}</text>`);
    }
    for (const c of levels) {
      const x = X(c).toFixed(1);
      out.push(`<line x1="${x}" y1="${y1}" x2="${x}" y2="${y0}" stroke="#f0f0f0"/>`);
      out.push(`<text x="${x}" y="${y0 + 16}" text-anchor="middle" fill="#555">${c}</text>`);
    }
    out.push(
      `<line x1="${x0}" y1="${y0}" x2="${x1}" y2="${y0}" stroke="#999"/><line x1="${x0}" y1="${y1}" x2="${x0}" y2="${y0}" stroke="#999"/>`,
    );
    out.push(`<text x="${(x0 + x1) / 2}" y="${y0 + 32}" text-anchor="middle" fill="#555">concurrent calls</text>`);
    out.push(
      `<text transform="translate(${ox + 16} ${(y0 + y1) / 2}) rotate(-90)" text-anchor="middle" fill="#555">latency, ms (log)</text>`,
    );

    for (const s of panel.series) {
      const pts = [...s.points].sort((a, b) => a.concurrency - b.concurrency);
      for (const [key, dash] of [
        ['p50', ''],
        ['p99', ' stroke-dasharray="5 3"'],
      ] as const) {
        const d = pts
          .map((p, j) => `${j === 0 ? 'M' : 'L'}${X(p.concurrency).toFixed(1)},${Y(p[key]).toFixed(1)}`)
          .join(' ');
        out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`);
        for (const p of pts) {
          out.push(
            `<circle cx="${X(p.concurrency).toFixed(1)}" cy="${Y(p[key]).toFixed(1)}" r="${key === 'p50' ? 3 : 2.2}" fill="${key === 'p50' ? s.color : '#fff'}" stroke="${s.color}"><title>${esc(`${s.label}, ${p.concurrency} concurrent: ${key} ${p[key].toFixed(2)} ms`)}</title></circle>`,
          );
        }
      }
    }
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
