import { readFileSync, readdirSync } from 'fs';

/** A process's environment, from /proc (our own children: the suite runs as their user). */
export function environOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

function parentOf(pid: number): number {
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Whether `pid` is `ancestor` or one of its descendants. */
export function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 64; p = parentOf(p), hops++) {
    if (p === ancestor) return true;
  }
  return false;
}

/**
 * The pid of the device-discovery agent that the `gpufleet up` of pid `upPid` started for `node`.
 * Only that stack's processes count: another stack on the machine (a second suite, a developer's
 * `npm start`) presents nodes of the same names, and stopping its agent would test nothing.
 */
export function agentPidOf(upPid: number, node: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // The source form (main.ts, up --from-source) or the built one (dist/…/main.js).
      if (!/apps\/device-discovery\/src\/main\.(ts|js)/.test(cmdline)) continue;
      if (environOf(pid).NODE_NAME === node && descendsFrom(pid, upPid)) return pid;
    } catch {
      // the process went away meanwhile, or is not ours to read
    }
  }
  throw new Error(`no device-discovery agent of gpufleet up (pid ${upPid}) found for node ${node}`);
}
