import { spawn } from 'child_process';
import { existsSync, readdirSync } from 'fs';
import { requireBinary } from '@gpufleet/process-kit';
import type { ExitInfo, ProcessSpec } from '@gpufleet/process-spec';
import { closeQuietly, openLogForAppend } from './log-file';
import { isSameProcessAlive, readProcStat, signalGroup, signalReaches } from './proc';
import { cgroupWrapper, detectCgroups, ProcessCgroup, sweepEmptyCgroups, type CgroupLayout } from './cgroup';
import { bwrapCommand, sandboxExit, type SandboxTools } from './sandbox';

/** A process the host started or attached to. */
export interface HostProcess {
  readonly pid: number;
  /** `/proc/<pid>/stat` field 22, when readable. */
  readonly startTime: number | undefined;
  readonly exited: Promise<ExitInfo>;
  /** Stop tracking it; the process keeps running (runtime shutdown, adoption later). */
  release(): void;
}

/** The operating system as the supervisor sees it; unit tests replace it. */
export interface ProcessHost {
  /** Starts the process as the leader of a new process group (and session); rejects when it cannot run. */
  spawn(spec: ProcessSpec, env: Record<string, string>): Promise<HostProcess>;
  /** Tracks a process started by an earlier runtime: `exited` resolves when pid + start time stop matching. */
  attach(pid: number, startTime: number, pollMs: number): HostProcess;
  /** Signals the process group (falling back to the process). False when nothing was there. */
  signalGroup(pgid: number, signal: NodeJS.Signals): boolean;
  /** True while some live (non-zombie) process is in the group. */
  groupAlive(pgid: number): boolean;
}

/** Starts with a cgroup in this runtime, for unique cgroup names (one host object per supervisor). */
let cgroupStarts = 0;
/** When this runtime last swept empty cgroups left by processes that ended unsupervised. */
let lastSweep = 0;
const SWEEP_EVERY_MS = 60_000;

/** The real host: Linux processes, `/proc`, signals. */
export class LocalProcessHost implements ProcessHost {
  private tools: SandboxTools | undefined;
  private cgroups: CgroupLayout | null | undefined;

  constructor(
    private readonly procRoot = '/proc',
    tools?: SandboxTools,
  ) {
    this.tools = tools;
  }

  async spawn(spec: ProcessSpec, env: Record<string, string>): Promise<HostProcess> {
    // Node reports a missing cwd as "spawn <command> ENOENT", blaming the command.
    if (spec.cwd !== undefined && !existsSync(spec.cwd)) throw new Error(`working directory ${spec.cwd} does not exist`);
    const logFd = spec.logFile ? openLogForAppend(spec.logFile) : undefined;
    let cgroup: ProcessCgroup | undefined;
    try {
      const out = logFd ?? 'ignore';
      // detached: setsid(), so the process leads its own group (stop() signals all its workers)
      // and outlives the runtime; stdio goes to the log file, never through a pipe to us.
      // A sandboxed spec runs under bwrap; its pid (the one recorded and signalled) is bwrap's,
      // whose process group holds the sandbox's processes too.
      let { command, args } = spec.sandbox ? bwrapCommand(spec, this.sandboxTools()) : { command: spec.command, args: [...(spec.args ?? [])] };
      if (spec.limits) {
        // A cgroup per start, named afresh (runtime pid and a counter of this runtime's starts):
        // the previous one of the same process may still be emptying, and is removed once empty.
        cgroup = new ProcessCgroup(this.cgroupLayout(), `${spec.id.replace(/[^A-Za-z0-9_.-]/g, '_')}-${process.pid}-${++cgroupStarts}`);
        ({ command, args } = cgroupWrapper(cgroup.create(spec.limits), command, args));
      }
      const child = spawn(command, args, {
        // bwrap changes into the sandbox's cwd itself (--chdir): it may not be reachable outside.
        cwd: spec.sandbox ? '/' : spec.cwd,
        env,
        detached: true,
        stdio: ['ignore', out, out],
      });
      const exited = new Promise<ExitInfo>((resolve) => {
        child.once('exit', (code, signal) => {
          const exit: ExitInfo = spec.sandbox ? sandboxExit(code, signal) : { code, signal };
          if (cgroup) {
            if (cgroup.oomKills() > 0) exit.oomKilled = true;
            cgroup.removeWhenEmpty();
          }
          resolve(exit);
        });
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      }).catch((err: unknown) => {
        cgroup?.remove();
        throw err;
      });
      child.on('error', () => undefined); // a failed kill() after exit is not news
      const pid = child.pid;
      if (pid === undefined) throw new Error(`spawn ${spec.command}: no pid`);
      return {
        pid,
        startTime: readProcStat(pid, this.procRoot)?.startTime,
        exited,
        release: () => child.unref(),
      };
    } finally {
      if (logFd !== undefined) closeQuietly(logFd);
    }
  }

  private sandboxTools(): SandboxTools {
    this.tools ??= { bwrap: requireBinary('bwrap'), setpriv: requireBinary('setpriv') };
    return this.tools;
  }

  private cgroupLayout(): CgroupLayout {
    if (this.cgroups === undefined) this.cgroups = detectCgroups() ?? null;
    if (this.cgroups === null) throw new Error('cgroup limits asked for, but no cgroup v2 hierarchy with memory, cpu and pids, nor v1 hierarchies of them, is mounted under /sys/fs/cgroup');
    if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = Date.now();
      sweepEmptyCgroups(this.cgroups);
    }
    return this.cgroups;
  }

  attach(pid: number, startTime: number, pollMs: number): HostProcess {
    // An adopted process's cgroup (if it has one of ours) goes once it is empty.
    const layout = this.cgroups ?? detectCgroups();
    const cgroup = layout ? ProcessCgroup.of(layout, pid, this.procRoot) : undefined;
    let timer: NodeJS.Timeout | undefined;
    const exited = new Promise<ExitInfo>((resolve) => {
      const check = (): void => {
        if (isSameProcessAlive(pid, startTime, this.procRoot)) return;
        clearInterval(timer);
        cgroup?.removeWhenEmpty();
        resolve({ code: null, signal: null, statusUnknown: true });
      };
      timer = setInterval(check, pollMs);
      timer.unref();
      check();
    });
    return { pid, startTime, exited, release: () => clearInterval(timer) };
  }

  signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
    return signalGroup(pgid, signal);
  }

  groupAlive(pgid: number): boolean {
    let entries: string[];
    try {
      entries = readdirSync(this.procRoot);
    } catch {
      return signalReaches(-pgid);
    }
    for (const name of entries) {
      if (!/^\d+$/.test(name)) continue;
      const stat = readProcStat(Number(name), this.procRoot);
      if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
    }
    return false;
  }
}
