import { readFileSync } from 'fs';

/**
 * What Linux says about a process in `/proc/<pid>/stat`. The start time (field 22, clock ticks
 * since boot) tells a process apart from a later one that reuses its pid.
 */
export interface ProcStat {
  pid: number;
  /** Field 3: R, S, D, Z (zombie), T, … */
  state: string;
  /** Field 4: parent pid. */
  ppid: number;
  /** Field 5: process group id. */
  pgrp: number;
  /** Field 22: start time, clock ticks since boot. */
  startTime: number;
}

/**
 * Parses one `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may hold
 * spaces and parentheses itself, so the fields are counted from the last ")".
 */
export function parseProcStat(line: string): ProcStat | undefined {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(line.slice(0, open).trim());
  // Fields 3, 4, 5, … follow ") ": rest[0] is field 3.
  const rest = line.slice(close + 2).trim().split(/\s+/);
  const state = rest[0];
  const ppid = Number(rest[4 - 3]);
  const pgrp = Number(rest[5 - 3]);
  const startTime = Number(rest[22 - 3]);
  if (!Number.isInteger(pid) || !state || !Number.isInteger(pgrp) || !Number.isInteger(startTime)) return undefined;
  return { pid, state, ppid, pgrp, startTime };
}

/** `/proc/<pid>/stat`, or undefined when there is no such process (or no /proc). */
export function readProcStat(pid: number, procRoot = '/proc'): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`${procRoot}/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The argv of a process from `/proc/<pid>/cmdline`; undefined when unreadable (gone, or a kernel thread). */
export function readCmdline(pid: number, procRoot = '/proc'): string[] | undefined {
  try {
    const raw = readFileSync(`${procRoot}/${pid}/cmdline`, 'utf8');
    if (raw === '') return undefined;
    return raw.replace(/\0$/, '').split('\0');
  } catch {
    return undefined;
  }
}

/** The kernel's boot id: start times are only comparable within one boot. */
export function readBootId(procRoot = '/proc'): string | undefined {
  try {
    return readFileSync(`${procRoot}/sys/kernel/random/boot_id`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * True when `pid` is a live process (not a zombie) that started at `startTime`. `kill(pid, 0)`
 * answers for the pid; the start time answers whether it is still the same process.
 */
export function isSameProcessAlive(pid: number, startTime: number, procRoot = '/proc'): boolean {
  if (!signalReaches(pid)) return false;
  const stat = readProcStat(pid, procRoot);
  return stat !== undefined && stat.startTime === startTime && stat.state !== 'Z' && stat.state !== 'X';
}

/** `kill(pid, 0)`: whether a process (or, with a negative pid, a process group) exists. */
export function signalReaches(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Sends `signal` to the process group `pgid` (a supervised process leads its own group, so this
 * reaches the workers it forked too). Falls back to the single process when it leads no group.
 * False when nothing received it.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    try {
      process.kill(pgid, signal);
      return true;
    } catch {
      return false;
    }
  }
}
