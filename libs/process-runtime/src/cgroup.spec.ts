import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { cgroupWrapper, detectCgroups, ProcessCgroup, sweepEmptyCgroups } from './cgroup';

// cgroup v2 against a directory laid out like /sys/fs/cgroup (this project's machines have v1
// controllers, which cgroup.int.spec.ts uses for real).
let root: string;
beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'gpufleet-cgroupfs-'))));
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('cgroups', () => {
  it('finds v2 when the unified hierarchy has memory, cpu and pids; v1 per controller otherwise', () => {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    expect(detectCgroups(root)).toEqual({ version: 'v2', root });
    writeFileSync(join(root, 'cgroup.controllers'), 'hugetlb\n');
    expect(detectCgroups(root)).toBeUndefined();
    for (const c of ['memory', 'cpu', 'pids']) {
      mkdirSync(join(root, c));
      writeFileSync(join(root, c, 'cgroup.procs'), '');
    }
    expect(detectCgroups(root)).toEqual({ version: 'v1', memory: join(root, 'memory'), cpu: join(root, 'cpu'), pids: join(root, 'pids') });
  });

  it('writes v2 limits: memory.max (no swap), a CFS quota per 100 ms, pids.max; counts OOM kills from memory.events', () => {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    writeFileSync(join(root, 'cgroup.subtree_control'), 'cpu\n');
    const cg = new ProcessCgroup({ version: 'v2', root }, 'pod-1');
    const dir = join(root, 'gpufleet', 'pod-1');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.swap.max'), 'max');
    expect(cg.create({ memoryBytes: 1 << 30, cpuMillis: 1500, pids: 512 })).toEqual([join(dir, 'cgroup.procs')]);
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    expect([read('memory.max'), read('memory.swap.max'), read('cpu.max'), read('pids.max')]).toEqual([String(1 << 30), '0', '150000 100000', '512']);
    expect(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
    expect(cg.oomKills()).toBe(0);
    writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
    expect(cg.oomKills()).toBe(1);
  });

  it('finds an adopted process’s cgroup from /proc/<pid>/cgroup', () => {
    mkdirSync(join(root, 'proc', '42'), { recursive: true });
    writeFileSync(join(root, 'proc', '42', 'cgroup'), '8:pids:/gpufleet/pod-7\n4:memory:/gpufleet/pod-7\n0::/\n');
    expect(ProcessCgroup.of({ version: 'v1', memory: '/m', cpu: '/c', pids: '/p' }, 42, join(root, 'proc'))?.dirs).toEqual(['/m/gpufleet/pod-7', '/c/gpufleet/pod-7', '/p/gpufleet/pod-7']);
  });

  it('sweeps the old empty cgroups under gpufleet/, not the young ones', () => {
    mkdirSync(join(root, 'gpufleet', 'old'), { recursive: true });
    mkdirSync(join(root, 'gpufleet', 'young'));
    expect(sweepEmptyCgroups({ version: 'v2', root }, 60_000, Date.now() + 30_000)).toBe(0);
    expect(sweepEmptyCgroups({ version: 'v2', root }, 60_000, Date.now() + 120_000)).toBe(2);
  });

  it('wraps the command so it joins its cgroup before exec (same pid)', () => {
    expect(cgroupWrapper(['/cg/a/cgroup.procs'], '/usr/bin/bwrap', ['--x'])).toEqual({
      command: '/bin/sh',
      args: ['-c', expect.stringContaining('exec "$@"'), 'gpufleet-cgroup', '/cg/a/cgroup.procs', '--', '/usr/bin/bwrap', '--x'],
    });
  });
});
