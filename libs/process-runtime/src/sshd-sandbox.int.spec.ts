import { execFileSync, spawnSync } from 'child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { homedir } from 'os';
import { join } from 'path';
import { requireBinary } from '@gpufleet/process-kit';
import { detectSandbox, writeSandboxIdentity } from './sandbox';
import { requireSshd, SshdInstance } from './sshd-instance';

// Two GPU instances on one node, each sshd in its own bwrap sandbox as its own uid, logged into
// with the real ssh client: what a session of A can reach of B and of the runtime. The state
// lives in the user's home, as `gpufleet up`'s does (~/.gpufleet): root's is 0700, which the
// pods' uids cannot enter on the host.
let dir: string;
let state: string;
const instances: SshdInstance[] = [];

function keyPair(name: string): { key: string; pub: string } {
  const key = join(dir, name);
  execFileSync(requireBinary('ssh-keygen'), ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key]);
  return { key, pub: readFileSync(`${key}.pub`, 'utf8').trim() };
}

function ssh(user: string, key: string, port: number, command: string) {
  const result = spawnSync(
    'ssh',
    ['-F', '/dev/null', '-p', String(port), '-i', key, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR',
      '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', `${user}@127.0.0.1`, command],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** An instance as the node runtime lays it out: `<state>/instances/<name>`, identity files in `<state>/pods/<name>`. */
async function instance(name: string, uid: number, device: string, pub: string): Promise<SshdInstance> {
  const podDir = join(state, 'pods', name);
  mkdirSync(podDir, { recursive: true });
  const baseDir = join(state, 'instances');
  const user = `pod-${name}`;
  const readOnly = writeSandboxIdentity(podDir, { name: user, uid, gid: uid, home: join(baseDir, name, 'work') });
  const sshd = new SshdInstance({
    id: name,
    baseDir,
    authorizedKeys: [pub],
    env: { CUDA_VISIBLE_DEVICES: '0', POD: name },
    logFile: join(podDir, 'sshd.log'),
    sandbox: {
      uid,
      gid: uid,
      user,
      hidden: [state],
      devices: [device, 'nvidiactl'].map((d) => ({ source: join(state, 'dev', d), target: `/dev/${d}` })),
      readOnly,
    },
  });
  instances.push(sshd);
  await sshd.start();
  return sshd;
}

beforeAll(() => {
  requireSshd();
  const support = detectSandbox();
  if (!support.supported) throw new Error(`this host cannot sandbox pods: ${support.reason}`);
});

beforeEach(() => {
  dir = mkdtempSync(join(homedir(), '.gpufleet-test-sshd-sandbox-'));
  state = join(dir, 'state');
  mkdirSync(join(state, 'dev'), { recursive: true, mode: 0o700 });
  for (const d of ['nvidia0', 'nvidia1', 'nvidiactl']) writeFileSync(join(state, 'dev', d), '', { mode: 0o666 });
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((i) => i.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe('two sandboxed GPU instances on one node', () => {
  it("lets a session of A see only A: not B's files, processes or keys, not the runtime's environment, only A's devices", async () => {
    const keyA = keyPair('a');
    const keyB = keyPair('b');
    const a = await instance('a', 262_001, 'nvidia0', keyA.pub);
    const b = await instance('b', 262_002, 'nvidia1', keyB.pub);
    const bKeys = join(b.dir, 'authorized_keys');
    const probe = [
      'echo "id=$(id -u):$(id -un) pwd=$(pwd)"',
      'echo "pids=$(ls /proc | grep -cE "^[0-9]+$")"',
      'echo "dev=$(ls /dev | tr "\\n" " ")"',
      `cat /proc/${process.pid}/environ >/dev/null 2>&1 && echo runtime-environ=readable || echo runtime-environ=unreadable`,
      `ls ${b.dir} >/dev/null 2>&1 && echo b-dir=visible || echo b-dir=invisible`,
      `cat ${bKeys} >/dev/null 2>&1 && echo b-keys=readable || echo b-keys=unreadable`,
      `(echo x >> ${bKeys}) 2>/dev/null && echo b-keys=writable || echo b-keys=unwritable`,
      `(echo x >> ${join(a.dir, 'authorized_keys')}) 2>/dev/null && echo own-keys=writable || echo own-keys=read-only`,
      `sed -i s/ForceCommand/X/ ${join(a.dir, 'sshd_config')} 2>/dev/null && echo own-config=writable || echo own-config=read-only`,
      'touch work-file && echo work=writable',
      'echo "cuda=$CUDA_VISIBLE_DEVICES"',
    ].join('; ');
    const r = ssh('pod-a', keyA.key, a.port, probe);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`id=262001:pod-a pwd=${a.workDir}`);
    expect(Number(/^pids=(\d+)$/m.exec(r.stdout)?.[1])).toBeLessThan(12);
    expect(r.stdout).toMatch(/^dev=.*\bnvidia0\b/m);
    expect(r.stdout).not.toMatch(/^dev=.*\bnvidia1\b/m);
    for (const line of ['runtime-environ=unreadable', 'b-dir=invisible', 'b-keys=unreadable', 'b-keys=unwritable', 'own-keys=read-only', 'own-config=read-only', 'work=writable', 'cuda=0']) {
      expect(r.stdout).toContain(line);
    }
    expect(readFileSync(bKeys, 'utf8')).toBe(`${keyB.pub}\n`);
    // Each instance takes its own user and key only.
    expect(ssh('pod-b', keyB.key, b.port, 'id -u')).toMatchObject({ status: 0, stdout: '262002\n' });
    expect(ssh('pod-b', keyA.key, b.port, 'id -u').status).not.toBe(0);
    expect(ssh('root', keyA.key, a.port, 'id -u').status).not.toBe(0);
  });
});
