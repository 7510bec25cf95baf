// The time a call runs at: read once per call into the context, so the
// blueprints stay pure and tests can move the clock. The server reads the
// machine's clock unless it is started with --clock-file (file-clock.ts).

let source: () => Date = () => new Date();

export function now(): Date {
  return source();
}

/** A time as names carry it: 202612020300 (UTC, to the minute). */
export function minuteStamp(t: Date): string {
  return t.toISOString().replace(/[-:T]/g, '').slice(0, 12);
}

/** Replaces the clock; returns what puts the previous one back. */
export function setClock(clock: () => Date): () => void {
  const previous = source;
  source = clock;
  return () => {
    source = previous;
  };
}
