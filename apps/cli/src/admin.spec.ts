import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { adminTokenPath, cliClientOptions, ensureAdminToken, isLoopbackUrl, loadAdminToken, loadCliToken } from './admin';
import { loginPath, removeLogin, saveLogin } from './login';

describe('the admin token of a local stack', () => {
  let home: string;
  const saved = { admin: process.env.GPUFLEET_ADMIN_TOKEN, user: process.env.GPUFLEET_TOKEN };

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'gpufleet-admin-'));
    delete process.env.GPUFLEET_ADMIN_TOKEN;
    delete process.env.GPUFLEET_TOKEN;
  });
  afterEach(() => {
    rmSync(home, { recursive: true, force: true });
    for (const [name, value] of [['GPUFLEET_ADMIN_TOKEN', saved.admin], ['GPUFLEET_TOKEN', saved.user]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('is made once, 256 random bits readable by the owner only, and kept for the next runs', () => {
    expect(loadAdminToken(home)).toBeUndefined();
    const first = ensureAdminToken(home);
    expect(first.created).toBe(true);
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(adminTokenPath(home)).mode & 0o777).toBe(0o600);
    expect(ensureAdminToken(home)).toEqual({ token: first.token, created: false });
    expect(loadAdminToken(home)).toBe(first.token);
    expect(ensureAdminToken(mkdtempSync(join(tmpdir(), 'gpufleet-admin-'))).token).not.toBe(first.token);
  });

  it('is GPUFLEET_ADMIN_TOKEN when that is set, and then nothing is written', () => {
    process.env.GPUFLEET_ADMIN_TOKEN = 'from-env';
    expect(ensureAdminToken(home)).toEqual({ token: 'from-env', created: false });
    expect(() => readFileSync(adminTokenPath(home))).toThrow(/ENOENT/);
    writeFileSync(adminTokenPath(home), 'from-file\n');
    expect(loadAdminToken(home)).toBe('from-env');
  });

  it('rides on every call of the CLI clients only when there is one', () => {
    expect(cliClientOptions()).not.toHaveProperty('interceptors');
    process.env.GPUFLEET_TOKEN = 't';
    expect(cliClientOptions().interceptors).toHaveLength(1);
  });

  it('gives way to GPUFLEET_TOKEN, then to the token of `auth login` (kept 0600), and comes back after logout', () => {
    ensureAdminToken(home);
    const admin = loadAdminToken(home);
    expect(loadCliToken(home)).toBe(admin);
    saveLogin(home, { token: 'gfat_user' });
    expect(statSync(loginPath(home)).mode & 0o777).toBe(0o600);
    expect(loadCliToken(home)).toBe('gfat_user');
    saveLogin(home, { token: 'gfat_other' }); // a second login replaces the first
    expect(loadCliToken(home)).toBe('gfat_other');
    process.env.GPUFLEET_TOKEN = 'gfat_env';
    expect(loadCliToken(home)).toBe('gfat_env');
    delete process.env.GPUFLEET_TOKEN;
    expect(removeLogin(home)).toBe(true);
    expect(removeLogin(home)).toBe(false);
    expect(loadCliToken(home)).toBe(admin);
  });

  it('goes to a log URL only when it is on this machine', () => {
    expect(['http://127.0.0.1:8088/v1/pods', 'http://localhost:1/x', 'http://[::1]:8088/nodes/gpu-0/v1/pods'].every(isLoopbackUrl)).toBe(true);
    expect(['http://10.0.0.5:8088/v1/pods', 'http://evil.example/127.0.0.1', 'not a url'].some(isLoopbackUrl)).toBe(false);
  });
});
