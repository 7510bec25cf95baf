// Processes that tests and the local control plane start: spawned with their
// output in a log file, waited for until a probe says ready, and stopped by
// PID. An attached process dies with the one that started it; a detached one
// (npm run cluster) outlives it and is stopped later by its recorded PID,
// after checking that the PID still runs the binary that was started.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** What is recorded of a started process, enough to stop it from another process. */
export interface ProcessRecord {
  name: string;
  pid: number;
  /** The executable, as /proc/PID/cmdline starts with it: a PID reused by something else is left alone. */
  bin: string;
  log: string;
}

export interface Proc extends ProcessRecord {
  child: ChildProcess;
  /** The exit code or signal, once it has ended. */
  exited(): string | undefined;
  stop(graceMs?: number): Promise<void>;
  /** What was spawned (the command may differ from `bin`, as nsenter does), so that it can be again. */
  spawned: { command: string; args: string[]; opts: SpawnOptions };
}

// Attached children, ended if this process goes away first.
const attached = new Set<ChildProcess>();
let hooked = false;
function reapAtExit(child: ChildProcess): void {
  attached.add(child);
  child.once('exit', () => attached.delete(child));
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const c of attached) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
    });
  }
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Outlive this process (its own session, not reaped at exit). */
  detached?: boolean;
  /** Append to the log instead of starting it anew (a restart). */
  append?: boolean;
  /** Run as this user and group (a server that refuses root). */
  uid?: number;
  gid?: number;
}

/** Starts `bin` with stdout and stderr into `log`. */
export function spawnLogged(name: string, bin: string, args: string[], log: string, opts: SpawnOptions = {}): Proc {
  const fd = openSync(log, opts.append ? 'a' : 'w');
  const child = spawn(bin, args, {
    stdio: ['ignore', fd, fd],
    detached: opts.detached ?? false,
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  });
  closeSync(fd);
  if (opts.detached) child.unref();
  else reapAtExit(child);
  let ended: string | undefined;
  child.once('exit', (code, signal) => {
    ended = signal ?? String(code);
  });
  const record: ProcessRecord = { name, pid: child.pid ?? -1, bin, log };
  return {
    ...record,
    spawned: { command: bin, args, opts },
    child,
    exited: () => ended,
    stop: async (graceMs = 10_000) => {
      if (ended !== undefined) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts what `p` started, again, appending to its log (a restart after a
 * crash, as a supervisor would): the same command, arguments and environment.
 * The record keeps `p`'s name and `bin`.
 */
export function respawn(p: Proc): Proc {
  const { command, args, opts } = p.spawned;
  const fresh = spawnLogged(p.name, command, args, p.log, { ...opts, append: true });
  return { ...fresh, bin: p.bin };
}

/** Whether PID runs `bin` still (and is not a zombie). */
export function runs(p: Pick<ProcessRecord, 'pid' | 'bin'>): boolean {
  try {
    // The binary itself, or a script its interpreter runs (argv[1] for a #! script).
    const argv = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0');
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return (argv[0] === p.bin || argv[1] === p.bin) && state !== 'Z';
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; only if the PID still runs what was started. */
export async function stopPid(
  p: Pick<ProcessRecord, 'pid' | 'bin'>,
  graceMs = 10_000,
): Promise<'stopped' | 'not running'> {
  if (!runs(p)) return 'not running';
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(p.pid, sig);
    } catch {
      // Gone already.
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (runs(p)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      while (runs(p)) await sleep(20);
      break;
    }
    await sleep(25);
  }
  return 'stopped';
}

/** The last lines of a log file, for error messages. */
export function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Polls `probe` until it answers true; fails early, with the log's tail, if the process ends. */
export async function waitFor(
  what: string,
  p: Proc | undefined,
  timeoutMs: number,
  probe: () => Promise<boolean>,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    const ended = p?.exited();
    if (p && ended !== undefined)
      throw new Error(`${what} exited (${ended}) before it was ready; log tail:\n${tail(p.log)}`);
    try {
      if (await probe()) return;
    } catch (e) {
      lastError = (e as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what} not ready after ${timeoutMs} ms${lastError ? ` (${lastError})` : ''}${p ? `; log tail:\n${tail(p.log)}` : ''}`,
      );
    await sleep(everyMs);
  }
}

/** A loopback port the OS says is free right now. */
/**
 * Starts something on `count` free ports, and again on new ones when it lost
 * a port to another process between the pick and its bind (test files run in
 * parallel): `start` fails with "address already in use" in its message.
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort());
    try {
      return await start(ports);
    } catch (err) {
      if (attempt >= attempts || !(err instanceof Error && /address already in use/.test(err.message))) throw err;
    }
  }
}

export async function freePort(): Promise<number> {
  // The kernel may hand the port it just freed out again: two asked in a row (a process's metrics and health
  // ports) once came back equal, and the process could not start. A port handed out before is not handed again.
  for (;;) {
    const port = await unusedPort();
    if (handedOut.has(port)) continue;
    if (handedOut.size >= 4096) handedOut.clear();
    handedOut.add(port);
    return port;
  }
}

const handedOut = new Set<number>();

function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
