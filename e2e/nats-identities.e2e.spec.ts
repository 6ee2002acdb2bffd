import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { connect, JSONCodec, NatsConnection } from 'nats';
import { Buckets } from '@gpufleet/contracts';
import { connectNats } from '@gpufleet/messaging';
import { UpProcess, gpufleet } from './support/cli';
import { REPO_ROOT } from './support/services';

const DEV_FLEET = join(REPO_ROOT, 'examples/fleets/dev.yaml');
const DENIED = /permissions violation/i;

/**
 * `gpufleet up` with two nodes per process: its NATS server admits only the stack's identities,
 * and the identity of one agent process (nodes h100-0 and h100-1) may write those nodes'
 * records but not another node's, nor an API key (docs/security.md).
 */
describe('NATS identities of `gpufleet up`', () => {
  const home = mkdtempSync(join(tmpdir(), 'gpufleet-e2e-nats-'));
  const at = ['--home', home];
  const up = new UpProcess([...at, '--fleet', DEV_FLEET, '--nodes-per-process', '2', '--nats-port', '0', '--redis-port', '0', '--router-port', '0', '--scheduler-port', '0', '--scheduler-http-port', '0']);
  let natsUrl = '';
  let agent: NatsConnection | undefined;

  beforeAll(async () => {
    await up.waitUp();
    natsUrl = (JSON.parse(readFileSync(join(home, 'context.json'), 'utf8')) as { natsUrl: string }).natsUrl;
  });

  afterAll(async () => {
    await agent?.close();
    await up.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('serves the whole fleet with one identity per process, and refuses a client without one', async () => {
    const nodes = await gpufleet(['get', 'nodes', '-o', 'json', ...at]);
    expect(nodes.code).toBe(0);
    expect((JSON.parse(nodes.stdout) as { items: unknown[] }).items).toHaveLength(5);
    await expect(connect({ servers: [natsUrl], reconnect: false })).rejects.toThrow(/authorization violation/i);
  });

  it("lets an agent's identity write its own nodes' records only, and no API key", async () => {
    agent = await connectNats({ servers: [natsUrl], name: 'e2e-agent', nkeySeedFile: join(home, 'nats-auth', 'agent-h100-0+1.nk') });
    const js = agent.jetstream();
    const record = (name: string) => JSONCodec().encode({ nodeName: name, cluster: 'dev' });
    const nodes = Buckets.nodes('dev');
    const own = await agent.jetstream().views.kv(nodes, { bindOnly: true });
    const current = await own.get('h100-1');
    await expect(js.publish(`$KV.${nodes}.h100-1`, current!.value)).resolves.toBeDefined();
    await expect(js.publish(`$KV.${nodes}.l40s-0`, record('l40s-0'))).rejects.toThrow(DENIED);
    await expect(js.publish(`$KV.${Buckets.apiKeys('dev')}.forged`, JSONCodec().encode({ id: 'forged' }))).rejects.toThrow(DENIED);
    await expect((await agent.jetstreamManager()).streams.delete(`KV_${nodes}`)).rejects.toThrow(DENIED);
  });
});
