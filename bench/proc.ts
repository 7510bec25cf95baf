// What the kernel says a process costs: CPU time and peak resident memory.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

let clockTicks: number | undefined;
/** USER_HZ, the unit of utime and stime in /proc/<pid>/stat. */
export function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU the whole process (every thread) has used, user + system, in milliseconds. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), i.e. 12 and 13 after "pid (comm) ".
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / clkTck();
}

function statusKb(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** Peak resident set size (VmHWM), in MiB. */
export const peakRssMb = (pid: number): number => statusKb(pid, 'VmHWM') / 1024;
export const rssMb = (pid: number): number => statusKb(pid, 'VmRSS') / 1024;

/** Resets VmHWM to the current RSS (Linux ≥ 4.0), so the next peak is one level's own. False if refused. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** CPU this process's exited, waited-for children used (cutime + cstime), in ms: a ghz run's cost. */
export function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of stat(5).
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / clkTck();
}

/**
 * CPU the whole machine has been busy (every CPU: user, nice, system, irq, softirq), in ms. Steal is left out:
 * it is time the hypervisor gave to others, not work done here.
 */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal ...
  const [, user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).map(Number);
  const ticks = [user, nice, system, irq, softirq].reduce<number>((a, b) => a + (b ?? 0), 0);
  return (ticks * 1000) / clkTck();
}

/** The CPUs /proc/stat sums over (its cpuN lines): what machineBusyMs is a share of. */
export function onlineCpus(): number {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l)).length;
}
