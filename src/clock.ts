// The time a call runs at: read once per call into the context, so the
// blueprints stay pure and tests can move the clock. The server reads the
// machine's clock unless it is started with --clock-file (for tests: the
// file holds an ISO 8601 time, read again on every call).
import { readFileSync } from 'node:fs';

let source: () => Date = () => new Date();

export function now(): Date {
  return source();
}

/** Replaces the clock; returns what puts the previous one back. */
export function setClock(clock: () => Date): () => void {
  const previous = source;
  source = clock;
  return () => {
    source = previous;
  };
}

/** A clock read from a file on every call; the machine's time while the file is missing or unreadable. */
export function fileClock(path: string): () => Date {
  return () => {
    try {
      const t = new Date(readFileSync(path, 'utf8').trim());
      if (!Number.isNaN(t.getTime())) return t;
    } catch {
      // No file (yet): the real time.
    }
    return new Date();
  };
}
