import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { adminTokenPath, cliClientOptions, ensureAdminToken, isLoopbackUrl, loadAdminToken } from './admin';

describe('the admin token of a local stack', () => {
  let home: string;
  const saved = process.env.GPUFLEET_ADMIN_TOKEN;

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'gpufleet-admin-'));
    delete process.env.GPUFLEET_ADMIN_TOKEN;
  });
  afterEach(() => {
    rmSync(home, { recursive: true, force: true });
    if (saved === undefined) delete process.env.GPUFLEET_ADMIN_TOKEN;
    else process.env.GPUFLEET_ADMIN_TOKEN = saved;
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
    process.env.GPUFLEET_ADMIN_TOKEN = 't';
    expect(cliClientOptions().interceptors).toHaveLength(1);
  });

  it('goes to a log URL only when it is on this machine', () => {
    expect(['http://127.0.0.1:8088/v1/pods', 'http://localhost:1/x', 'http://[::1]:8088/nodes/gpu-0/v1/pods'].every(isLoopbackUrl)).toBe(true);
    expect(['http://10.0.0.5:8088/v1/pods', 'http://evil.example/127.0.0.1', 'not a url'].some(isLoopbackUrl)).toBe(false);
  });
});
