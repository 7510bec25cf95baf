// The clock of a server started with --clock-file (for tests: the file holds
// an ISO 8601 time, read again on every call); set through clock.ts's setClock.
import { readFileSync } from 'node:fs';

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
