import { bwrapCommand, detectSandbox, sandboxEnv, sandboxExit } from './sandbox';

const tools = { bwrap: '/usr/bin/bwrap', setpriv: '/usr/bin/setpriv' };

describe('bwrapCommand', () => {
  const spec = {
    id: 'p',
    command: '/bin/sh',
    args: ['-c', 'true'],
    cwd: '/var/lib/gf/pods/p/work',
    sandbox: {
      uid: 200_100,
      gid: 200_100,
      writable: ['/var/lib/gf/pods/p/work'],
      hidden: ['/var/lib/gf'],
      devices: [{ source: '/var/lib/gf/dev/nvidia1', target: '/dev/nvidia1' }, { source: '/dev/nvidia-caps/nvidia-cap12' }],
    },
  };

  it('hides the state directory, then binds the pod directory with reachable (0755) parents', () => {
    const { command, args } = bwrapCommand(spec, tools);
    expect(command).toBe('/usr/bin/bwrap');
    const line = args.join(' ');
    expect(line).toContain('--ro-bind / / --dev /dev --proc /proc');
    expect(line).toContain('--perms 1777 --tmpfs /tmp');
    expect(line).toContain('--perms 1777 --tmpfs /dev/shm');
    expect(line).toMatch(/--perms 0755 --tmpfs \/var\/lib\/gf .*--perms 0755 --dir \/var\/lib\/gf\/pods --perms 0755 --dir \/var\/lib\/gf\/pods\/p --bind \/var\/lib\/gf\/pods\/p\/work \/var\/lib\/gf\/pods\/p\/work/);
    expect(line).toContain('--dev-bind-try /var/lib/gf/dev/nvidia1 /dev/nvidia1');
    expect(line).toContain('--perms 0755 --dir /dev/nvidia-caps --dev-bind-try /dev/nvidia-caps/nvidia-cap12 /dev/nvidia-caps/nvidia-cap12');
    expect(line).toContain('--chdir /var/lib/gf/pods/p/work');
    expect(line).toMatch(/-- \/usr\/bin\/setpriv --reuid=200100 --regid=200100 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \/bin\/sh -c true$/);
    // Pods outlive the runtime (adoption); values never go on the command line.
    expect(args).not.toContain('--die-with-parent');
    expect(args).not.toContain('--setenv');
  });

  it("empties an ancestor other users cannot enter (root's home), so the pod reaches its own directories below it", () => {
    const home = '/root/.gpufleet/node-runtime/h0';
    const host = { exists: () => true, mode: (p: string) => (p === '/root' ? 0o40700 : 0o40755) };
    const { args } = bwrapCommand(
      { id: 'p', command: '/bin/true', cwd: `${home}/work`, sandbox: { uid: 200_100, gid: 200_100, writable: [`${home}/work`], hidden: [home], devices: [] } },
      tools,
      host,
    );
    expect(args.join(' ')).toMatch(
      /--perms 0755 --tmpfs \/root .*--perms 0755 --dir \/root\/.gpufleet --perms 0755 --dir \/root\/.gpufleet\/node-runtime --perms 0755 --tmpfs \/root\/.gpufleet\/node-runtime\/h0 .*--bind \/root\/.gpufleet\/node-runtime\/h0\/work/,
    );
  });

  it('binds a working directory under /tmp (a clone there) back read-only, before the hidden state inside it', () => {
    const repo = '/tmp/ci';
    const engine = { ...spec, cwd: repo, sandbox: { ...spec.sandbox, hidden: ['/tmp/ci/home/state'], writable: ['/tmp/ci/home/state/pods/p/work'] } };
    const line = bwrapCommand(engine, tools).args.join(' ');
    expect(line).toMatch(/--perms 1777 --tmpfs \/tmp .*--ro-bind \/tmp\/ci \/tmp\/ci .*--perms 0755 --tmpfs \/tmp\/ci\/home\/state .*--bind \/tmp\/ci\/home\/state\/pods\/p\/work/);
    expect(line).toContain('--chdir /tmp/ci');
    // Within a directory bound anyway, or at /, nothing more is bound.
    expect(bwrapCommand(spec, tools).args.join(' ')).not.toContain(`--ro-bind ${spec.cwd}`);
    expect(bwrapCommand({ ...spec, cwd: '/' }, tools).args.join(' ')).not.toContain('--ro-bind / / --ro-bind');
  });

  it("binds a checkout under a directory other users cannot enter (root's home) back read-only", () => {
    const host = { exists: () => true, mode: (p: string) => (p === '/root' ? 0o40700 : 0o40755) };
    const line = bwrapCommand({ ...spec, cwd: '/root/src/gpufleet' }, tools, host).args.join(' ');
    expect(line).toMatch(/--perms 0755 --tmpfs \/root .*--perms 0755 --dir \/root\/src --ro-bind \/root\/src\/gpufleet \/root\/src\/gpufleet/);
  });

  it('leaves an unsandboxed spec alone', () => {
    expect(bwrapCommand({ id: 'p', command: 'x', args: ['y'] }, tools)).toEqual({ command: 'x', args: ['y'] });
  });
});

describe('sandboxEnv', () => {
  it("is the spec's environment plus PATH, nothing of the runtime's", () => {
    expect(sandboxEnv({ A: '1' }, { PATH: '/usr/bin', NATS_PASSWORD: 'secret' })).toEqual({ PATH: '/usr/bin', A: '1' });
    expect(sandboxEnv({ PATH: '/opt/bin' }, { PATH: '/usr/bin' })).toEqual({ PATH: '/opt/bin' });
  });
});

describe('sandboxExit', () => {
  it("turns bwrap's 128+N into the signal", () => {
    expect(sandboxExit(137, null)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(sandboxExit(3, null)).toEqual({ code: 3, signal: null });
    expect(sandboxExit(null, 'SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });
  });
});

describe('detectSandbox', () => {
  it('says why it cannot sandbox when not root or without bwrap', () => {
    expect(detectSandbox({ uid: 1000 })).toEqual({ supported: false, reason: expect.stringContaining('not root') });
    const missing = detectSandbox({
      uid: 0,
      findBinary: (n) => {
        throw new Error(`${n} is not installed`);
      },
    });
    expect(missing).toEqual({ supported: false, reason: expect.stringContaining('bubblewrap') });
  });
});
