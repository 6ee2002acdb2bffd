import { execFileSync, spawnSync } from 'child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir, userInfo } from 'os';
import { join } from 'path';
import { freePort, isPortOpen, requireBinary } from '@gpufleet/process-kit';
import { devicesEnv, specHash } from '@gpufleet/process-spec';
import { isSameProcessAlive } from './proc';
import { ProcessTable } from './process-table';
import { requireSshd, SshdInstance } from './sshd-instance';
import { StateFile } from './state-file';

// A real OpenSSH sshd per instance, logged into with the real ssh client. Without sshd this
// fails with the install command (bash tools/scripts/bootstrap.sh sshd installs it).
const user = userInfo().username;
let dir: string;
let instance: SshdInstance;

function keyPair(name: string): { key: string; pub: string } {
  const key = join(dir, name);
  execFileSync(requireBinary('ssh-keygen'), ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key]);
  return { key, pub: readFileSync(`${key}.pub`, 'utf8').trim() };
}

function ssh(args: string[], command: string, port = instance.port) {
  const result = spawnSync(
    'ssh',
    [
      '-F', '/dev/null',
      '-p', String(port),
      '-o', 'BatchMode=yes',
      '-o', 'IdentitiesOnly=yes',
      '-o', 'IdentityAgent=none',
      '-o', 'ConnectTimeout=5',
      '-o', 'LogLevel=ERROR',
      ...args,
      `${user}@127.0.0.1`,
      command,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const untrusted = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'];

let client: { key: string; pub: string };
let stranger: { key: string; pub: string };

beforeAll(async () => {
  requireSshd();
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-sshd-'));
  client = keyPair('client');
  stranger = keyPair('stranger');
  instance = new SshdInstance({
    id: 'dev-1',
    baseDir: join(dir, 'instances'),
    authorizedKeys: [client.pub],
    env: { ...devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 2 }, { index: 3 }] }), NOTE: `it's "quoted" $HOME; not expanded` },
    backoff: { baseMs: 100 },
  });
  await instance.start();
});

afterAll(async () => {
  await instance?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('SshdInstance', () => {
  it('lets the authorized key in, with the allocated devices and the working directory', () => {
    const r = ssh(['-i', client.key, ...untrusted], 'echo $CUDA_VISIBLE_DEVICES; pwd');
    expect(r).toMatchObject({ status: 0, stdout: `2,3\n${instance.workDir}\n` });
  });

  it('passes environment values through verbatim', () => {
    const r = ssh(['-i', client.key, ...untrusted], 'printf "%s|%s\\n" "$NOTE" "$CUDA_DEVICE_ORDER"');
    expect(r.stdout).toBe(`it's "quoted" $HOME; not expanded|PCI_BUS_ID\n`);
  });

  it('presents its own host key', () => {
    const knownHosts = join(dir, 'known_hosts');
    writeFileSync(knownHosts, `[127.0.0.1]:${instance.port} ${instance.hostPublicKey}\n`);
    const r = ssh(['-i', client.key, '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${knownHosts}`], 'true');
    expect(r.status).toBe(0);
    expect(instance.hostPublicKey).toMatch(/^ssh-ed25519 \S+ gpufleet-instance-dev-1$/);
  });

  it('refuses a key that is not authorized', () => {
    const r = ssh(['-i', stranger.key, ...untrusted], 'true');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('Permission denied (publickey)');
  });

  it('offers public keys only: no password, no keyboard-interactive', () => {
    const r = ssh(
      ['-v', ...untrusted, '-o', 'PubkeyAuthentication=no', '-o', 'PreferredAuthentications=password,keyboard-interactive'],
      'true',
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Authentications that can continue: publickey\r?\n/);
    expect(r.stderr).not.toMatch(/can continue: .*(password|keyboard-interactive)/);
  });

  it('writes a config that allows only the current user, by key', () => {
    const config = readFileSync(join(instance.dir, 'sshd_config'), 'utf8');
    expect(config).toContain(`AllowUsers ${user}\n`);
    expect(config).toContain('PasswordAuthentication no\n');
    expect(config).toContain('KbdInteractiveAuthentication no\n');
    expect(config).toContain('AuthenticationMethods publickey\n');
    expect(config).toContain(`ListenAddress 127.0.0.1\nHostKey ${instance.dir}/ssh_host_ed25519_key\n`);
  });

  it('is restarted by its supervisor when sshd dies, on the same port and host key', async () => {
    const before = instance.status()!;
    process.kill(before.pid!, 'SIGKILL');
    const after = await instance.supervisor!.waitFor((s) => s.state === 'Ready' && s.pid !== undefined && s.pid !== before.pid, 10_000, 'a new sshd');
    expect(after.restarts).toBe(before.restarts + 1);
    const knownHosts = join(dir, 'known_hosts');
    writeFileSync(knownHosts, `[127.0.0.1]:${instance.port} ${instance.hostPublicKey}\n`);
    expect(ssh(['-i', client.key, '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${knownHosts}`], 'echo $CUDA_VISIBLE_DEVICES').stdout).toBe('2,3\n');
  });

  it('tears down on stop: sshd gone, port closed, directory removed', async () => {
    const other = new SshdInstance({ id: 'dev-2', baseDir: join(dir, 'instances'), authorizedKeys: [client.pub] });
    await other.start();
    const port = other.port;
    const { pid, startTime } = other.status()!;
    expect(await isPortOpen(port)).toBe(true);
    await other.stop();
    expect(isSameProcessAlive(pid!, startTime!)).toBe(false);
    expect(await isPortOpen(port)).toBe(false);
    expect(existsSync(other.dir)).toBe(false);
    expect(existsSync(instance.dir)).toBe(true);
  });

  it('prepares an sshd for a ProcessTable to run, and to re-adopt after a runtime restart with the same host key', async () => {
    const baseDir = join(dir, 'supervised');
    const options = { id: 'dev-3', baseDir, authorizedKeys: [client.pub], env: { GPU_SLOT: '3' } };
    const port = await freePort();
    const stateFile = join(dir, 'processes.json');

    const first = new SshdInstance(options);
    const spec = first.prepare(port);
    expect(spec).toMatchObject({ id: 'instance/dev-3/sshd', args: ['-D', '-e', '-f', join(first.dir, 'sshd_config')], restart: 'always' });
    expect(first.port).toBe(port);
    expect(readFileSync(join(first.dir, 'sshd_config'), 'utf8')).toContain(`Port ${port}\n`);
    const hostKey = first.hostPublicKey;

    const table = new ProcessTable(new StateFile(stateFile), { adoptedPollMs: 50, killGraceMs: 2_000 });
    const { pid } = await table.start(spec).waitForState('Ready', 10_000);
    const knownHosts = join(dir, 'known_hosts_supervised');
    writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostKey}\n`);
    const login = () => ssh(['-i', client.key, '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${knownHosts}`], 'echo $GPU_SLOT', port);
    expect(login()).toMatchObject({ status: 0, stdout: '3\n' });

    // The runtime restarts: a new SshdInstance prepares the same directory for the same port.
    table.detachAll();
    const second = new SshdInstance(options);
    const again = second.prepare(port);
    expect(specHash(again)).toBe(specHash(spec));
    expect(second.hostPublicKey).toBe(hostKey);
    const next = new ProcessTable(new StateFile(stateFile), { adoptedPollMs: 50, killGraceMs: 2_000 });
    const restored = await next.restore([again]);
    expect(restored.decisions.map((d) => d.action)).toEqual(['adopt']);
    expect(next.get(again.id)!.status().pid).toBe(pid);
    expect(login()).toMatchObject({ status: 0, stdout: '3\n' });

    await next.stop(again.id, 2_000);
    await second.stop();
    expect(await isPortOpen(port)).toBe(false);
    expect(existsSync(second.dir)).toBe(false);
  });
});
