import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'fs';
import { join } from 'path';
import type { ResourceLimits } from '@gpufleet/process-spec';

/**
 * The cgroup hierarchies limits go into. v2 (one unified hierarchy with the memory, cpu and pids
 * controllers) where the host has it; otherwise v1, one hierarchy per controller. A hybrid host
 * (v1 controllers plus a `unified` mount without them, like this project's CI machines) is v1.
 */
export type CgroupLayout = { readonly version: 'v2'; readonly root: string } | { readonly version: 'v1'; readonly memory: string; readonly cpu: string; readonly pids: string };

const CFS_PERIOD_US = 100_000;
/** Every pod's cgroup is `<hierarchy>/gpufleet/<name>`. */
const PARENT = 'gpufleet';

export function detectCgroups(root = '/sys/fs/cgroup'): CgroupLayout | undefined {
  const controllers = (dir: string): string[] => {
    try {
      return readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    } catch {
      return [];
    }
  };
  if (['memory', 'cpu', 'pids'].every((c) => controllers(root).includes(c))) return { version: 'v2', root };
  const v1 = (c: string): string | undefined => (existsSync(join(root, c, 'cgroup.procs')) ? join(root, c) : undefined);
  const memory = v1('memory');
  const cpu = v1('cpu') ?? v1('cpu,cpuacct');
  const pids = v1('pids');
  if (memory && cpu && pids) return { version: 'v1', memory, cpu, pids };
  return undefined;
}

/**
 * One process's cgroup (in each v1 hierarchy, or one v2 directory): created with its limits
 * before the process starts, the process put in by a wrapper before it execs (so nothing it
 * forks escapes), its OOM kills counted, removed once empty.
 */
export class ProcessCgroup {
  readonly dirs: readonly string[];

  constructor(
    private readonly layout: CgroupLayout,
    readonly name: string,
  ) {
    this.dirs = layout.version === 'v2' ? [join(layout.root, PARENT, name)] : [...new Set([layout.memory, layout.cpu, layout.pids])].map((h) => join(h, PARENT, name));
  }

  /** The cgroup of a running process under `<hierarchy>/gpufleet/` (adopted after a restart), from /proc/<pid>/cgroup. */
  static of(layout: CgroupLayout, pid: number, procRoot = '/proc'): ProcessCgroup | undefined {
    let text: string;
    try {
      text = readFileSync(`${procRoot}/${pid}/cgroup`, 'utf8');
    } catch {
      return undefined;
    }
    const match = new RegExp(`:/${PARENT}/([^/\\n]+)$`, 'm').exec(text);
    return match ? new ProcessCgroup(layout, match[1]) : undefined;
  }

  /** Creates the cgroup with `limits`; returns the `cgroup.procs` files the process must join. */
  create(limits: ResourceLimits): string[] {
    const l = this.layout;
    if (l.version === 'v2') {
      // Controllers reach a child only through every parent's subtree_control.
      enable(join(l.root, 'cgroup.subtree_control'));
      mkdirSync(join(l.root, PARENT), { recursive: true });
      enable(join(l.root, PARENT, 'cgroup.subtree_control'));
      const dir = this.dirs[0];
      mkdirSync(dir, { recursive: true });
      write(dir, 'memory.max', limits.memoryBytes ?? 'max');
      // Swap would let a process outgrow its memory limit instead of being OOM-killed.
      writeIfPresent(dir, 'memory.swap.max', limits.memoryBytes ? 0 : 'max');
      write(dir, 'cpu.max', limits.cpuMillis ? `${(limits.cpuMillis * CFS_PERIOD_US) / 1000} ${CFS_PERIOD_US}` : `max ${CFS_PERIOD_US}`);
      write(dir, 'pids.max', limits.pids ?? 'max');
      return [join(dir, 'cgroup.procs')];
    }
    const [memory, cpu, pids] = [l.memory, l.cpu, l.pids].map((h) => join(h, PARENT, this.name));
    for (const dir of new Set([memory, cpu, pids])) mkdirSync(dir, { recursive: true });
    write(memory, 'memory.limit_in_bytes', limits.memoryBytes ?? -1);
    writeIfPresent(memory, 'memory.memsw.limit_in_bytes', limits.memoryBytes ?? -1);
    write(cpu, 'cpu.cfs_period_us', CFS_PERIOD_US);
    write(cpu, 'cpu.cfs_quota_us', limits.cpuMillis ? (limits.cpuMillis * CFS_PERIOD_US) / 1000 : -1);
    write(pids, 'pids.max', limits.pids ?? 'max');
    return this.dirs.map((d) => join(d, 'cgroup.procs'));
  }

  /** OOM kills in the cgroup so far (`oom_kill` of memory.events, v2, or memory.oom_control, v1). */
  oomKills(): number {
    const file = this.layout.version === 'v2' ? join(this.dirs[0], 'memory.events') : join(this.layout.memory, PARENT, this.name, 'memory.oom_control');
    try {
      return Number(/^oom_kill (\d+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  /** Removes the cgroup; false while a process is still in it (the kernel refuses with EBUSY). */
  remove(): boolean {
    let gone = true;
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') gone = false;
      }
    }
    return gone;
  }

  /** Retries remove() for a while: the group's last processes die just after its leader. */
  removeWhenEmpty(timeoutMs = 10_000): void {
    const until = Date.now() + timeoutMs;
    const attempt = (): void => {
      if (this.remove() || Date.now() > until) return;
      setTimeout(attempt, 200).unref();
    };
    attempt();
  }
}

/**
 * Removes the empty cgroups under `gpufleet/` older than `minAgeMs`: those of processes that
 * ended while no runtime supervised them (a runtime stopped, its pods killed afterwards). A
 * cgroup with a process in it cannot be removed (EBUSY), and a young one may be a start in
 * progress (created, not yet joined), so both stay. Returns how many went.
 */
export function sweepEmptyCgroups(layout: CgroupLayout, minAgeMs = 60_000, now = Date.now()): number {
  const hierarchies = layout.version === 'v2' ? [layout.root] : [...new Set([layout.memory, layout.cpu, layout.pids])];
  let removed = 0;
  for (const h of hierarchies) {
    const parent = join(h, PARENT);
    let names: string[];
    try {
      names = readdirSync(parent, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = join(parent, name);
      try {
        if (now - statSync(dir).mtimeMs < minAgeMs) continue;
        rmdirSync(dir);
        removed++;
      } catch {
        // populated (EBUSY) or already gone
      }
    }
  }
  return removed;
}

/**
 * The wrapper that puts itself into the cgroup, then execs the command: the process and
 * everything it forks are limited from their first instruction, and the pid stays the same.
 */
export function cgroupWrapper(procsFiles: readonly string[], command: string, args: readonly string[]): { command: string; args: string[] } {
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return { command: '/bin/sh', args: ['-c', script, 'gpufleet-cgroup', ...procsFiles, '--', command, ...args] };
}

function write(dir: string, file: string, value: string | number): void {
  writeFileSync(join(dir, file), String(value));
}

function writeIfPresent(dir: string, file: string, value: string | number): void {
  if (existsSync(join(dir, file))) write(dir, file, value);
}

function enable(subtreeControl: string): void {
  const wanted = ['memory', 'cpu', 'pids'];
  let current: string[] = [];
  try {
    current = readFileSync(subtreeControl, 'utf8').trim().split(/\s+/);
  } catch {
    // a new directory: nothing enabled yet
  }
  const missing = wanted.filter((c) => !current.includes(c));
  if (missing.length > 0) writeFileSync(subtreeControl, missing.map((c) => `+${c}`).join(' '));
}
