import { GPUInstance, InstancePhase } from '@gpufleet/contracts';
import { knownHostsLine, sshArgv, sshTarget } from './ssh-argv';

const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey root@node';

function instance(status: Partial<NonNullable<GPUInstance['status']>>): GPUInstance {
  return GPUInstance.fromPartial({ spec: { name: 'dev', namespace: 'default' }, status });
}

describe('knownHostsLine', () => {
  it('pins the key to [host]:port, without the comment', () => {
    expect(knownHostsLine('127.0.0.1', 40022, HOST_KEY)).toBe('[127.0.0.1]:40022 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey');
  });

  it('uses the bare host for port 22, as OpenSSH looks it up', () => {
    expect(knownHostsLine('node-1.example', 22, HOST_KEY)).toBe('node-1.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey');
  });

  it('replaces host patterns a key line already carries', () => {
    expect(knownHostsLine('10.0.0.5', 2200, '[localhost]:1234 ecdsa-sha2-nistp256 AAAAE2Vj')).toBe('[10.0.0.5]:2200 ecdsa-sha2-nistp256 AAAAE2Vj');
  });

  it('refuses something that is not a key line', () => {
    expect(() => knownHostsLine('h', 2, 'not a key')).toThrow(/not an OpenSSH key line/);
  });
});

describe('sshArgv', () => {
  const target = { host: '127.0.0.1', port: 40022, user: 'gpufleet' };
  const pinned = [
    '-p', '40022',
    '-o', 'UserKnownHostsFile=/tmp/x/known_hosts',
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'StrictHostKeyChecking=yes',
    '-o', 'CheckHostIP=no',
    '-o', 'UpdateHostKeys=no',
    '-o', 'PasswordAuthentication=no',
    '-o', 'KbdInteractiveAuthentication=no',
  ];

  it('opens a login shell with only the instance host key trusted', () => {
    expect(sshArgv({ target, knownHostsFile: '/tmp/x/known_hosts' })).toEqual([...pinned, '--', 'gpufleet@127.0.0.1']);
  });

  it('offers only the given identity and runs a command after the destination', () => {
    expect(sshArgv({ target, knownHostsFile: '/tmp/x/known_hosts', identityFile: '/k/id', command: ['nvidia-smi', '-L'] })).toEqual([
      ...pinned, '-i', '/k/id', '-o', 'IdentitiesOnly=yes', '--', 'gpufleet@127.0.0.1', 'nvidia-smi', '-L',
    ]);
  });

  it('forces a terminal with tty and never sets BatchMode', () => {
    const argv = sshArgv({ target, knownHostsFile: '/k', tty: true, command: ['htop'] });
    expect(argv.slice(-4)).toEqual(['-t', '--', 'gpufleet@127.0.0.1', 'htop']);
    expect(argv.join(' ')).not.toMatch(/BatchMode/);
  });
});

describe('sshTarget', () => {
  it('is the address and host key of a Running instance', () => {
    const running = instance({ phase: InstancePhase.INSTANCE_PHASE_RUNNING, sshHost: '127.0.0.1', sshPort: 40022, sshUser: 'gpufleet', sshHostKey: HOST_KEY });
    expect(sshTarget(running, 'default', 'dev')).toEqual({ host: '127.0.0.1', port: 40022, user: 'gpufleet', hostKey: HOST_KEY });
  });

  it('refuses an instance that is not Running, with its message and what to do', () => {
    expect(() => sshTarget(instance({ phase: InstancePhase.INSTANCE_PHASE_PENDING, message: 'Quota: ExceedsQuota' }), 'team-a', 'dev')).toThrow(
      'FAILED_PRECONDITION: instance team-a/dev is Pending, not Running (Quota: ExceedsQuota); wait for Running: `gpufleet get instance dev -n team-a -w`',
    );
    expect(() => sshTarget(instance({ phase: InstancePhase.INSTANCE_PHASE_STOPPED }), 'default', 'dev')).toThrow(
      'FAILED_PRECONDITION: instance default/dev is Stopped, not Running; start it with `gpufleet start instance dev --wait`',
    );
    expect(() => sshTarget(instance({ phase: InstancePhase.INSTANCE_PHASE_FAILED, message: 'node lost' }), 'default', 'dev')).toThrow(
      /is Failed, not Running \(node lost\); see `gpufleet describe instance dev` and `gpufleet logs dev --sshd`/,
    );
  });

  it('refuses a Running instance without an address or host key', () => {
    expect(() => sshTarget(instance({ phase: InstancePhase.INSTANCE_PHASE_RUNNING, sshHostKey: HOST_KEY }), 'default', 'dev')).toThrow(/no SSH address/);
    expect(() => sshTarget(instance({ phase: InstancePhase.INSTANCE_PHASE_RUNNING, sshHost: 'h', sshPort: 2 }), 'default', 'dev')).toThrow(/no SSH host key/);
  });
});
