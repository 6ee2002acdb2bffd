import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { waitFor } from '@gpufleet/process-kit';
import type { ProcessSpec } from '@gpufleet/process-spec';
import { detectCgroups } from './cgroup';
import { readProcStat } from './proc';
import { detectSandbox } from './sandbox';
import { SupervisedProcess } from './supervised-process';

// Real cgroup limits on real processes, inside real sandboxes: this host's hierarchy (v1 here,
// with a unified mount that has no controllers; v2 where the host has it).
const layout = detectCgroups();
let dir: string;
const running: SupervisedProcess[] = [];
const UID = 263_001;

beforeAll(() => {
  if (!layout) throw new Error('no cgroup hierarchy with memory, cpu and pids under /sys/fs/cgroup');
  const support = detectSandbox();
  if (!support.supported) throw new Error(`this host cannot sandbox pods: ${support.reason}`);
});
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gpufleet-cgroup-'))));
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop(0)));
  rmSync(dir, { recursive: true, force: true });
});

function supervise(spec: Omit<ProcessSpec, 'id' | 'cwd'>): { proc: SupervisedProcess; log: () => string } {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  chownSync(work, UID, UID);
  const logFile = join(dir, 'pod.log');
  const proc = new SupervisedProcess({
    id: 'team-a/hog/server/0/0',
    cwd: work,
    logFile,
    restart: 'never',
    sandbox: { uid: UID, gid: UID, writable: [work], hidden: [dir], devices: [] },
    ...spec,
  });
  running.push(proc);
  return { proc, log: () => readFileSync(logFile, 'utf8') };
}

const MiB = 1024 * 1024;

describe(`cgroup limits (${layout?.version ?? 'none'})`, () => {
  it('OOM-kills a memory hog at its limit and reports it OOMKilled', async () => {
    const { proc, log } = supervise({
      command: process.execPath,
      // 8 MiB at a time, every page touched, until the kernel ends it.
      args: ['-e', 'const held = []; let n = 0; for (;;) { held.push(Buffer.alloc(8 << 20, 1)); if (++n % 4 === 0) console.log(`${n * 8} MiB`); }'],
      limits: { memoryBytes: 128 * MiB },
    });
    proc.start();
    const status = await proc.waitForState(['Failed', 'Stopped'], 30_000);
    expect(status.lastExit).toMatchObject({ oomKilled: true, reason: expect.stringMatching(/^OOMKilled: /) });
    // It got near its limit (node itself takes some) and never past it.
    const reached = Math.max(...[...log().matchAll(/^(\d+) MiB$/gm)].map((m) => Number(m[1])));
    expect(reached).toBeGreaterThanOrEqual(32);
    expect(reached).toBeLessThanOrEqual(128);
  });

  it('holds a CPU hog to its quota (half a CPU: within 20 %)', async () => {
    const { proc } = supervise({ command: '/bin/sh', args: ['-c', 'while :; do :; done'], limits: { cpuMillis: 500 } });
    proc.start();
    const { pid } = await proc.waitForState('Ready');
    // The hog is bwrap's grandchild: the sandbox's shell, found by its parent chain.
    const hog = await waitFor('the hog', () => descendants(pid!).find((p) => readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sh'));
    const ticks = (): number => cpuTicks(hog);
    await sleep(500);
    const t0 = ticks();
    const started = Date.now();
    await sleep(3_000);
    const share = (ticks() - t0) / 100 / ((Date.now() - started) / 1000);
    expect(share).toBeGreaterThan(0.5 * 0.8);
    expect(share).toBeLessThan(0.5 * 1.2);
  });

  it('caps the number of processes', async () => {
    const { proc, log } = supervise({
      command: '/bin/sh',
      // echo is a builtin: each line is one more process; the shell ends when it cannot fork.
      args: ['-c', 'i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); echo "forked $i"; done; echo all-forked'],
      limits: { pids: 16 },
    });
    proc.start();
    await proc.waitForState(['Failed', 'Stopped'], 10_000);
    const forked = Math.max(...[...log().matchAll(/^forked (\d+)$/gm)].map((m) => Number(m[1])));
    expect(forked).toBeGreaterThan(5);
    expect(forked).toBeLessThan(16);
    expect(log()).not.toMatch(/^all-forked$/m);
  });

  it('removes the cgroup once the process is gone', async () => {
    const { proc } = supervise({ command: '/bin/true', limits: { memoryBytes: 64 * MiB } });
    proc.start();
    await proc.waitForState(['Stopped', 'Failed']);
    const root = layout!.version === 'v2' ? layout!.root : layout!.memory;
    await waitFor('the cgroup removed', () => !readdirOr(join(root, 'gpufleet')).some((n) => n.startsWith('team-a_hog_')) || undefined, { timeoutMs: 5_000 });
  });
});

function descendants(pid: number): number[] {
  const children = readdirOr('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((p) => readProcStat(p)?.ppid === pid);
  return [...children, ...children.flatMap(descendants)];
}

/** utime + stime, clock ticks (100 a second). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function readdirOr(path: string): string[] {
  try {
    return existsSync(path) ? readdirSync(path) : [];
  } catch {
    return [];
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
