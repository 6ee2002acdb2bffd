import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { waitFor } from '@gpufleet/process-kit';
import type { ProcessSandbox, ProcessSpec } from '@gpufleet/process-spec';
import { detectSandbox, writeSandboxIdentity } from './sandbox';
import { SupervisedProcess } from './supervised-process';

// Real bwrap sandboxes (root, bubblewrap installed: `bash tools/scripts/bootstrap.sh bwrap`, as
// `npm test` does). Two pods A and B under one state directory, as a node runtime lays them out.
beforeAll(() => {
  const support = detectSandbox();
  if (!support.supported) throw new Error(`this host cannot sandbox pods: ${support.reason}`);
});

let dir: string;
let state: string;
const running: SupervisedProcess[] = [];

const UID_A = 261_001;
const UID_B = 261_002;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-sandbox-'));
  state = join(dir, 'state');
  mkdirSync(join(state, 'dev'), { recursive: true, mode: 0o700 });
  // The simulated fleet's device nodes: placeholders the sandbox binds at /dev/nvidia<N>.
  for (const name of ['nvidia0', 'nvidia1', 'nvidiactl']) writeFileSync(join(state, 'dev', name), '', { mode: 0o666 });
  process.env.GPUFLEET_RUNTIME_SECRET = 'runtime-only-secret';
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop(0)));
  delete process.env.GPUFLEET_RUNTIME_SECRET;
  rmSync(dir, { recursive: true, force: true });
});

/** A pod's directory (owned by its uid, as the node runtime makes it) and its sandbox. */
function pod(name: string, uid: number, devices: string[]): { home: string; sandbox: ProcessSandbox } {
  const home = join(state, 'pods', name, 'work');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chownSync(home, uid, uid);
  const files = writeSandboxIdentity(join(state, 'pods', name), { name: `pod-${name}`, uid, gid: uid, home });
  return {
    home,
    sandbox: {
      uid,
      gid: uid,
      writable: [home],
      hidden: [state],
      devices: [...devices, 'nvidiactl'].map((d) => ({ source: join(state, 'dev', d), target: `/dev/${d}` })),
      readOnly: files,
    },
  };
}

function supervise(spec: Omit<ProcessSpec, 'id' | 'logFile'> & { id: string }): { proc: SupervisedProcess; log: () => string } {
  const logFile = join(dir, `${spec.id}.log`);
  const proc = new SupervisedProcess({ logFile, restart: 'never', ...spec });
  running.push(proc);
  return { proc, log: () => readFileSync(logFile, 'utf8') };
}

describe('a pod in a bwrap sandbox', () => {
  it("sees only its own files, processes, devices and environment: not another pod's, not the runtime's", async () => {
    const a = pod('a', UID_A, ['nvidia0']);
    const b = pod('b', UID_B, ['nvidia1']);
    writeFileSync(join(b.home, 'authorized_keys'), 'ssh-ed25519 AAAAB3 b@laptop\n', { mode: 0o600 });
    chownSync(join(b.home, 'authorized_keys'), UID_B, UID_B);
    const podB = supervise({ id: 'b', command: '/bin/sleep', args: ['300'], cwd: b.home, sandbox: b.sandbox, env: { POD: 'b' } });
    podB.proc.start();
    const { pid: pidB } = await podB.proc.waitForState('Ready');

    const probe = [
      'echo "uid=$(id -u) name=$(id -un)"',
      'echo "pids=$(ls /proc | grep -E "^[0-9]+$" | tr "\\n" " ")"',
      'echo "env=$(env | sort | tr "\\n" " ")"',
      'echo "dev=$(ls /dev | tr "\\n" " ")"',
      `cat /proc/${process.pid}/environ >/dev/null 2>&1 && echo "runtime-environ=readable" || echo "runtime-environ=unreadable"`,
      `kill -0 ${pidB} 2>/dev/null && echo "b-process=visible" || echo "b-process=invisible"`,
      `ls ${b.home} >/dev/null 2>&1 && echo "b-files=visible" || echo "b-files=invisible"`,
      `cat ${join(b.home, 'authorized_keys')} >/dev/null 2>&1 && echo "b-keys=readable" || echo "b-keys=unreadable"`,
      `echo evil >> ${join(b.home, 'authorized_keys')} 2>/dev/null && echo "b-keys=writable" || echo "b-keys=unwritable"`,
      'touch /etc/gpufleet-probe 2>/dev/null && echo "system=writable" || echo "system=read-only"',
      'touch ./mine && echo "home=writable"',
      'touch /tmp/mine && echo "tmp=writable"',
      'touch /dev/shm/mine && echo "shm=writable"',
      'echo done',
    ].join('; ');
    const podA = supervise({ id: 'a', command: '/bin/sh', args: ['-c', probe], cwd: a.home, sandbox: a.sandbox, env: { POD: 'a', CUDA_VISIBLE_DEVICES: '0' } });
    podA.proc.start();
    await podA.proc.waitForState(['Stopped', 'Failed'], 15_000);
    const out = podA.log();
    expect(podA.proc.status().lastExit).toMatchObject({ code: 0 });
    expect(out).toContain(`uid=${UID_A} name=pod-a`);
    // Its PID namespace: bwrap's init (1) and its own few processes, nothing of the host.
    const pids = /^pids=(.*)$/m.exec(out)?.[1].trim().split(' ').map(Number) ?? [];
    expect(Math.max(...pids)).toBeLessThan(10);
    // The environment is exactly the spec's plus PATH (sh adds PWD, SHLVL, _).
    const env = (/^env=(.*)$/m.exec(out)?.[1] ?? '').trim().split(' ').map((kv) => kv.split('=')[0]);
    expect(env.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n)).sort()).toEqual(['CUDA_VISIBLE_DEVICES', 'PATH', 'POD']);
    expect(out).not.toContain('runtime-only-secret');
    expect(out).not.toMatch(/^env=.*GPUFLEET_RUNTIME_SECRET/m);
    expect(out).toMatch(/^dev=.*\bnvidia0\b/m);
    expect(out).toMatch(/^dev=.*\bnvidiactl\b/m);
    expect(out).not.toMatch(/^dev=.*\bnvidia1\b/m);
    for (const line of ['runtime-environ=unreadable', 'b-process=invisible', 'b-files=invisible', 'b-keys=unreadable', 'b-keys=unwritable', 'system=read-only', 'home=writable', 'tmp=writable', 'shm=writable', 'done']) {
      expect(out).toContain(line);
    }
    expect(readFileSync(join(b.home, 'authorized_keys'), 'utf8')).toBe('ssh-ed25519 AAAAB3 b@laptop\n');
    expect(podB.proc.state).toBe('Ready');
  });

  it('reports a sandboxed pod killed by a signal as killed, and stops its whole sandbox', async () => {
    const a = pod('a', UID_A, []);
    const { proc, log } = supervise({
      id: 'a',
      command: '/bin/sh',
      args: ['-c', 'sleep 300 & echo armed; wait'],
      cwd: a.home,
      sandbox: a.sandbox,
      stopGraceMs: 500,
    });
    proc.start();
    await waitFor('the pod', () => log().includes('armed') || undefined);
    await proc.stop();
    expect(proc.status().state).toBe('Stopped');
    expect(['SIGTERM', 'SIGKILL']).toContain(proc.status().lastExit?.signal);
  });
});
