// Runs the built function (dist/main.js) to its end, for tests of how it
// fails to start: exit code and everything it wrote. Optionally as another
// user, as Crossplane runs it (uid/gid 2000), which needs the tests to run as root.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../dev/infra/paths.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr, interleaved. */
  output: string;
  stderr: string;
}

export interface RunOptions {
  uid?: number;
  gid?: number;
  env?: NodeJS.ProcessEnv;
  /** Killed (SIGKILL) after this long: a server that starts when it should not is an error the caller sees as signal SIGKILL. */
  timeoutMs?: number;
}

export function runToExit(args: string[], opts: RunOptions = {}): Promise<Exit> {
  const child = spawn(process.execPath, [join(repoRoot, 'dist', 'main.js'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  });
  let output = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    output += c;
    stderr += c;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 10_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, stderr });
    });
  });
}

/** Crossplane runs functions as this uid and gid. */
export const CROSSPLANE_UID = 2000;

/** Can this process start others as another user? */
export const canSwitchUser = typeof process.getuid === 'function' && process.getuid() === 0;

export interface Started {
  port: number;
  pid: number;
  logs(): string;
  /** SIGTERM, then the exit code (SIGKILL after `killAfterMs`). */
  stop(killAfterMs?: number): Promise<number | null>;
}

/** Starts the function with spawn options the start-up helper has no room for (another user), and waits for it to listen. */
export function startWith(args: string[], opts: RunOptions = {}): Promise<Started> {
  const child = spawn(process.execPath, [join(repoRoot, 'dist', 'main.js'), ...args], {
    cwd: '/',
    env: { ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  void exited.then(() => process.removeListener('exit', reap));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no "listening" line in ${opts.timeoutMs ?? 15_000} ms:\n${output}`));
    }, opts.timeoutMs ?? 15_000);
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      output += c;
      const m = /"port":(\d+).*listening/.exec(output);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        port: Number(m[1]),
        pid: child.pid!,
        logs: () => output,
        stop: async (killAfterMs = 15_000) => {
          if (child.exitCode !== null) return child.exitCode;
          child.kill('SIGTERM');
          const kill = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
          try {
            return await exited;
          } finally {
            clearTimeout(kill);
          }
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
}
