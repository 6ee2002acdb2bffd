import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { requireContext, requireRouter } from './context';
import { applyLoginTls, loginPath, readLogin, saveLogin } from './login';

describe('the saved login of `gpufleet auth login`', () => {
  let home: string;
  beforeEach(() => (home = mkdtempSync(join(tmpdir(), 'gpufleet-login-'))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('keeps the token, the addresses and absolute TLS paths, and reads them back', () => {
    saveLogin(home, { token: 'gfat_x', scheduler: 'fleet.example.com:50051', router: 'fleet.example.com:50055', tls: { ca: 'ca.pem', cert: 'me.crt', key: 'me.key' } });
    const login = readLogin(home)!;
    expect(login).toMatchObject({ token: 'gfat_x', scheduler: 'fleet.example.com:50051', router: 'fleet.example.com:50055' });
    expect(login.tls?.ca).toBe(join(process.cwd(), 'ca.pem'));
  });

  it('is where later commands find the cluster when no local stack runs from the home, after the flags', () => {
    expect(() => requireContext(home)).toThrow('or log in to a cluster with `gpufleet auth login --scheduler HOST:PORT --token …`');
    saveLogin(home, { token: 'gfat_x', scheduler: 'fleet.example.com:50051', router: 'fleet.example.com:50055' });
    expect(requireContext(home).scheduler).toBe('fleet.example.com:50051');
    expect(requireContext(home, 'other:1').scheduler).toBe('other:1');
    expect(requireRouter(home).grpc).toBe('fleet.example.com:50055');
  });

  it('gives its TLS files only when neither flags nor the environment name any', () => {
    const login = { token: 't', tls: { ca: '/etc/ca.pem', cert: '/etc/me.crt', key: '/etc/me.key' } };
    const env: NodeJS.ProcessEnv = {};
    applyLoginTls(login, env);
    expect(env).toEqual({ GPUFLEET_TLS_CA_FILE: '/etc/ca.pem', GPUFLEET_TLS_CERT_FILE: '/etc/me.crt', GPUFLEET_TLS_KEY_FILE: '/etc/me.key' });
    const mine: NodeJS.ProcessEnv = { GPUFLEET_TLS_CA_FILE: '/mine/ca.pem' };
    applyLoginTls(login, mine);
    expect(mine).toEqual({ GPUFLEET_TLS_CA_FILE: '/mine/ca.pem' });
  });

  it('says where a broken login file is and how to fix it', () => {
    writeFileSync(loginPath(home), '{not json');
    expect(() => readLogin(home)).toThrow(`${loginPath(home)} is not JSON; log in again`);
    writeFileSync(loginPath(home), JSON.stringify({ scheduler: 'x:1' }));
    expect(() => readLogin(home)).toThrow('has no token');
    writeFileSync(loginPath(home), JSON.stringify({ token: 't', tls: { ca: 42 } }));
    expect(() => readLogin(home)).toThrow('tls.ca must be a non-empty string');
  });
});
