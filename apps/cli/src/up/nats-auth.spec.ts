import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { nkeyPublicKey } from '@gpufleet/messaging';
import { natsAuthDir, stackIdentities, writeNatsAuth } from './nats-auth';

describe('stackIdentities', () => {
  it('gives the scheduler, the router, model delivery and each group of nodes its agent and its runtime an identity', () => {
    const ids = stackIdentities([
      { label: 'h100-0+1', nodes: ['h100-0', 'h100-1'] },
      { label: 'cpu-0', nodes: ['cpu-0'] },
    ]);
    expect(ids.map((i) => i.name)).toEqual(['scheduler', 'router', 'model-delivery', 'agent-h100-0+1', 'runtime-h100-0+1', 'agent-cpu-0', 'runtime-cpu-0']);
    expect(ids[3].spec).toEqual({ component: 'agent', nodes: ['h100-0', 'h100-1'] });
    expect(ids[6].spec).toEqual({ component: 'runtime', nodes: ['cpu-0'] });
    expect(ids[2].spec).toEqual({ component: 'delivery', control: true, nodes: '*' });
  });
});

describe('writeNatsAuth', () => {
  let home: string;
  beforeEach(() => (home = mkdtempSync(join(tmpdir(), 'gpufleet-up-auth-'))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const identities = stackIdentities([{ label: 'n-0', nodes: ['n-0'] }]);

  it('writes one seed file (0600, in a 0700 directory) per identity and a config with only their public keys', () => {
    const { configFile, seedFiles } = writeNatsAuth(home, 'dev', identities);
    expect(statSync(natsAuthDir(home)).mode & 0o777).toBe(0o700);
    expect([...seedFiles.keys()]).toEqual(['scheduler', 'router', 'model-delivery', 'agent-n-0', 'runtime-n-0']);
    const config = readFileSync(configFile, 'utf8');
    for (const file of seedFiles.values()) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const seed = readFileSync(file, 'utf8').trim();
      expect(seed).toMatch(/^SU/);
      expect(config).not.toContain(seed);
      expect(config).toContain(`"nkey": "${nkeyPublicKey(new TextEncoder().encode(seed))}"`);
    }
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
  });

  it('starts afresh on every run: new seeds, no identity of an earlier fleet left behind', () => {
    const first = writeNatsAuth(home, 'dev', stackIdentities([{ label: 'old-0', nodes: ['old-0'] }]));
    const before = readFileSync(first.seedFiles.get('scheduler')!, 'utf8');
    const second = writeNatsAuth(home, 'dev', identities);
    expect(readFileSync(second.seedFiles.get('scheduler')!, 'utf8')).not.toBe(before);
    expect(readdirSync(natsAuthDir(home)).sort()).toEqual(['agent-n-0.nk', 'model-delivery.nk', 'nats-server.conf', 'router.nk', 'runtime-n-0.nk', 'scheduler.nk']);
  });
});
