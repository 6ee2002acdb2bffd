// CPU seconds of processes, read from /proc (Linux), so a benchmark can say where the machine's
// cores went: a throughput that stops short of its baseline is either waiting or out of CPU.
import { readFileSync } from 'node:fs';

/** USER_HZ: the unit of /proc/<pid>/stat's times; 100 on every Linux this runs on. */
const TICKS_PER_S = 100;

export interface ProcCpu {
  /** user + system seconds of the process itself (every thread) */
  readonly self: number;
  /** of which system (kernel) seconds */
  readonly system: number;
  /** user + system seconds of its children that it waited for (curl, openssl, sync) */
  readonly children: number;
}

/** The process's CPU seconds so far; undefined where /proc cannot be read (not Linux, gone). */
export function procCpu(pid: number | 'self'): ProcCpu | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14–17 of proc(5), here from field 3: utime, stime, cutime, cstime
    const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
    return { self: (utime + stime) / TICKS_PER_S, system: stime / TICKS_PER_S, children: (cutime + cstime) / TICKS_PER_S };
  } catch {
    return undefined;
  }
}

/** CPU seconds spent between two readings (0 where either is missing). */
export function cpuSpent(before: ProcCpu | undefined, after: ProcCpu | undefined): ProcCpu {
  if (!before || !after) return { self: 0, system: 0, children: 0 };
  return { self: after.self - before.self, system: after.system - before.system, children: after.children - before.children };
}
