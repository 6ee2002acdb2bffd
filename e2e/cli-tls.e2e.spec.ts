import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { makeTestCertificates, RunningServer, startNats, type TestCertificates } from '@gpufleet/testing';
import { gpufleet } from './support/cli';
import { ServiceStack } from './support/services';

/**
 * A scheduler that speaks TLS only (GRPC_TLS_CERT_FILE/KEY_FILE, certificates made here with
 * openssl) and the CLI: with `--tls-ca` it gets its answers, without it it gets none.
 */
const ADMIN = 'tls-e2e-bootstrap-admin-token-0123456789';

describe('the CLI against a TLS-only scheduler', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-tls-'));
  let nats: RunningServer;
  let stack: ServiceStack;
  let address: string;
  let certs: TestCertificates;

  beforeAll(async () => {
    certs = makeTestCertificates(dir);
    nats = await startNats();
    stack = new ServiceStack(nats.url);
    ({ address } = await stack.scheduler({ GRPC_TLS_CERT_FILE: certs.cert, GRPC_TLS_KEY_FILE: certs.key, GPUFLEET_ADMIN_TOKEN: ADMIN }));
  });

  afterAll(async () => {
    await stack?.stop();
    await nats?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers with --tls-ca (or GPUFLEET_TLS_CA_FILE), and refuses plain text', async () => {
    const admin = { GPUFLEET_ADMIN_TOKEN: ADMIN };
    const withCa = await gpufleet(['get', 'pools', '--scheduler', address, '--tls-ca', certs.ca], admin);
    // (Node warns on stderr that TLS ServerName is an IP address, DEP0123; the answer comes.)
    expect(withCa.stderr).not.toMatch(/error/i);
    expect(withCa.code).toBe(0);
    expect(withCa.stdout).toBe('No pools found.\n');
    expect((await gpufleet(['get', 'pools', '--scheduler', address], { ...admin, GPUFLEET_TLS_CA_FILE: certs.ca })).code).toBe(0);

    const plain = await gpufleet(['get', 'pools', '--scheduler', address], admin);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toMatch(/UNAVAILABLE|No connection established|Connection dropped/i);
    const halfMutual = await gpufleet(['get', 'pools', '--scheduler', address, '--tls-ca', certs.ca, '--tls-cert', certs.cert]);
    expect(halfMutual.code).not.toBe(0);
    expect(halfMutual.stderr).toContain('--tls-cert and --tls-key go together');
  });

  it('keeps the address, the token and the CA of `auth login`, so later commands need no flags', async () => {
    const home = join(dir, 'home');
    const env = { GPUFLEET_HOME: home, GPUFLEET_ADMIN_TOKEN: '', GPUFLEET_TOKEN: '' };
    const login = await gpufleet(['auth', 'login', '--scheduler', address, '--tls-ca', certs.ca, '--token', ADMIN], env);
    expect(login.stdout).toContain(`logged in as system:admin (admin) at ${address}`);
    const me = await gpufleet(['auth', 'whoami'], env);
    expect(me.stdout).toContain('system:admin (BootstrapAdmin): admin');
    expect((await gpufleet(['get', 'pools'], env)).stdout).toBe('No pools found.\n');
    expect((await gpufleet(['auth', 'logout'], env)).code).toBe(0);
    const after = await gpufleet(['get', 'pools'], env);
    expect(after.stderr).toContain('no running gpufleet stack found');
  });
});
