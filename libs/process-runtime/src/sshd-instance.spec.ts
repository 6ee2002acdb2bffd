import { SshdInstance, strictModesPossible } from './sshd-instance';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk2Yf7pXb1nG7dGZ9T0x4pD4b3mC8gI0rVq7m1QGQxU alice@laptop';

describe('SshdInstance options', () => {
  const base = { id: 'dev-1', baseDir: '/var/lib/gpufleet/instances', authorizedKeys: [KEY] };

  it('lives in <baseDir>/<id> and starts sessions in <dir>/work by default', () => {
    const instance = new SshdInstance(base);
    expect(instance.dir).toBe('/var/lib/gpufleet/instances/dev-1');
    expect(instance.workDir).toBe('/var/lib/gpufleet/instances/dev-1/work');
    expect(new SshdInstance({ ...base, workDir: '/data/alice' }).workDir).toBe('/data/alice');
  });

  it('refuses an id that could leave the base directory', () => {
    expect(() => new SshdInstance({ ...base, id: '../etc' })).toThrow(/INVALID_ARGUMENT: GPU instance "..\/etc": the id may hold/);
  });

  it('refuses to start without a key: there is no other way in', () => {
    expect(() => new SshdInstance({ ...base, authorizedKeys: [] })).toThrow(/at least one public key/);
  });

  it('refuses a key line with options or that is no key at all', () => {
    expect(() => new SshdInstance({ ...base, authorizedKeys: [`command="/bin/sh" ${KEY}`] })).toThrow(/not an OpenSSH public key line/);
    expect(() => new SshdInstance({ ...base, authorizedKeys: ['hunter2'] })).toThrow(/not an OpenSSH public key line/);
    expect(() => new SshdInstance({ ...base, authorizedKeys: [`${KEY}\nssh-ed25519 AAAA other`] })).toThrow(/not an OpenSSH public key line/);
  });

  it('refuses paths sshd_config would need quoting for, and a relative base directory', () => {
    expect(() => new SshdInstance({ ...base, baseDir: '/var/lib/my instances' })).toThrow(/cannot take unquoted/);
    expect(() => new SshdInstance({ ...base, workDir: '/data/100%' })).toThrow(/cannot take unquoted/);
    expect(() => new SshdInstance({ ...base, baseDir: 'instances' })).toThrow(/must be an absolute path/);
  });

  it('refuses an invalid environment variable name, listen address or port', () => {
    expect(() => new SshdInstance({ ...base, env: { 'CUDA VISIBLE': '0' } })).toThrow(/not a valid name/);
    expect(() => new SshdInstance({ ...base, listenAddress: '0.0.0.0 2222' })).toThrow(/not an address/);
    expect(() => new SshdInstance({ ...base, port: 70000 })).toThrow(/not a TCP port/);
  });

  it('has no port or host key before start', () => {
    expect(() => new SshdInstance(base).port).toThrow(/FAILED_PRECONDITION: GPU instance dev-1 is not started/);
  });

  it('refuses to prepare for a port that is not a TCP port, before touching the disk', () => {
    expect(() => new SshdInstance(base).prepare(0)).toThrow('INVALID_ARGUMENT: GPU instance "dev-1": port 0 is not a TCP port');
    expect(() => new SshdInstance(base).prepare(65_536)).toThrow(/port 65536 is not a TCP port/);
  });
});

describe('strictModesPossible', () => {
  const tree = (modes: Record<string, { uid: number; mode: number }>) => (p: string) => {
    const st = modes[p];
    if (!st) throw new Error(`ENOENT ${p}`);
    return st;
  };

  it('holds when every directory up to / belongs to root or the user and no one else may write it', () => {
    const stat = tree({ '/': { uid: 0, mode: 0o40755 }, '/var': { uid: 0, mode: 0o40755 }, '/var/gf': { uid: 1000, mode: 0o40700 } });
    expect(strictModesPossible('/var/gf', 1000, stat)).toBe(true);
  });

  it('fails under a world-writable directory such as /tmp, sticky bit or not', () => {
    const stat = tree({ '/': { uid: 0, mode: 0o40755 }, '/tmp': { uid: 0, mode: 0o41777 }, '/tmp/gf': { uid: 0, mode: 0o40700 } });
    expect(strictModesPossible('/tmp/gf', 0, stat)).toBe(false);
  });

  it('fails when another user owns a directory on the way', () => {
    const stat = tree({ '/': { uid: 0, mode: 0o40755 }, '/home': { uid: 0, mode: 0o40755 }, '/home/bob': { uid: 1001, mode: 0o40755 } });
    expect(strictModesPossible('/home/bob', 1000, stat)).toBe(false);
  });
});
