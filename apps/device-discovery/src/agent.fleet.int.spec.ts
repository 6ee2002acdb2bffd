// One agent process presenting many simulated nodes (SIMULATED_NODES) against a real
// nats-server: each node gets its own record, heartbeats and generations, as if every node had
// an agent of its own; records come back after a NATS restart; a bad node list stops the start.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { Buckets, Events, NodeInventory } from '@gpufleet/contracts';
import { EventBus, KvStore } from '@gpufleet/messaging';
import { startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { startAgent, type AgentUnderTest } from './__fixtures__/agent-harness';

const CLUSTER = 'fleet';
const FLEET = `cluster: ${CLUSTER}
nodes:
  - namePrefix: h100-
    count: 3
    accelerators: { product: NVIDIA H100 80GB HBM3, count: 8 }
    nics: { count: 8 }
  - namePrefix: l40s-
    count: 2
    accelerators: { product: NVIDIA L40S, count: 4 }
`;
const NODES = ['h100-0', 'h100-1', 'h100-2', 'l40s-0', 'l40s-1'];

let nats: RunningServer;
let nc: NatsConnection;
let dir: string;
let fleetFile: string;
let records: KvStore<NodeInventory>;
let bus: EventBus;
let agent: AgentUnderTest | undefined;

const env = (extra: Record<string, string> = {}) => ({
  GPUFLEET_CLUSTER: CLUSTER,
  NATS_URL: nats.url,
  GPUFLEET_PROVIDERS: 'simulated',
  GPUFLEET_FLEET_FILE: fleetFile,
  HEARTBEAT_INTERVAL_S: '0.2',
  DETECT_INTERVAL_S: '1',
  ...extra,
});

async function stored(): Promise<Map<string, NodeInventory>> {
  const entries = await records.list();
  return new Map(entries.map((e) => [e.key, e.value]));
}

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  records = await KvStore.open(nc.jetstream(), Buckets.nodes(CLUSTER), NodeInventory);
  bus = new EventBus(nc, CLUSTER);
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-agent-fleet-it-'));
  fleetFile = join(dir, 'fleet.yaml');
  writeFileSync(fleetFile, FLEET);
});

afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('one agent presenting every node of a fleet file (SIMULATED_NODES=*)', () => {
  it('writes one record per node with that node’s own accelerators, and beats for every node', async () => {
    const beats = new Map<string, number>();
    const sub = bus.subscribe(Events.heartbeat, (e) => void beats.set(e.payload.nodeName, (beats.get(e.payload.nodeName) ?? 0) + 1));
    agent = await startAgent(env({ SIMULATED_NODES: '*' }));

    const byNode = await stored();
    expect([...byNode.keys()].sort()).toEqual([...NODES].sort());
    for (const [name, inv] of byNode) {
      expect(inv).toMatchObject({ nodeName: name, cluster: CLUSTER, generation: 1 });
      expect(inv.accelerators).toHaveLength(name.startsWith('h100') ? 8 : 4);
      expect(inv.nics).toHaveLength(name.startsWith('h100') ? 8 : 0);
      expect(inv.accelerators[0].product).toBe(name.startsWith('h100') ? 'NVIDIA H100 80GB HBM3' : 'NVIDIA L40S');
      expect(inv.topology?.nvlinkDomain).toBe(name.startsWith('h100') ? name : '');
    }
    const uuids = [...byNode.values()].flatMap((inv) => inv.accelerators.map((a) => a.uuid));
    expect(new Set(uuids).size).toBe(3 * 8 + 2 * 4);

    // Every node beats on its own timer: each is heard from more than once.
    await waitFor('two heartbeats from every node', () => NODES.every((n) => (beats.get(n) ?? 0) >= 2) || undefined, { timeoutMs: 10_000 });
    expect([...beats.keys()].sort()).toEqual([...NODES].sort());
    sub.unsubscribe();
    expect(JSON.parse((await agent.readiness()).body)).toMatchObject({ status: 'ready' });
  });

  it('continues every node’s own generation after the agent restarts', async () => {
    // One node was republished more often than the others before; its count must carry on.
    const h1 = (await records.get('h100-1'))!;
    await records.put('h100-1', { ...h1.value, generation: 41 });
    const before = await stored();

    agent = await startAgent(env({ SIMULATED_NODES: '*' }));
    const after = await stored();
    for (const name of NODES) expect(after.get(name)!.generation).toBe(before.get(name)!.generation + 1);
    expect(after.get('h100-1')!.generation).toBe(42);
  });

  it('writes every node’s record again after NATS restarts (the store may have lost them)', async () => {
    agent = await startAgent(env({ SIMULATED_NODES: '*' }));
    for (const name of NODES) await records.delete(name);
    expect((await stored()).size).toBe(0);
    await nats.restart();
    await waitFor('every record written again', async () => ((await stored().catch(() => new Map())).size === NODES.length ? true : undefined), { timeoutMs: 20_000 });
    expect([...(await stored()).keys()].sort()).toEqual([...NODES].sort());
  });

  it('presents only the nodes SIMULATED_NODES lists, leaving the others alone', async () => {
    for (const name of NODES) await records.delete(name);
    agent = await startAgent(env({ SIMULATED_NODES: 'l40s-1,h100-2' }));
    expect([...(await stored()).keys()].sort()).toEqual(['h100-2', 'l40s-1']);
  });

  it('stops the start naming SIMULATED_NODES and the nodes the file lacks', async () => {
    await expect(startAgent(env({ SIMULATED_NODES: 'h100-0,h100-7' }), false)).rejects.toThrow(
      `SIMULATED_NODES: the fleet file ${fleetFile} has no node "h100-7"; its nodes are h100-0 … h100-2, l40s-0, l40s-1 ("*" presents them all)`,
    );
    await expect(startAgent({ ...env({ SIMULATED_NODES: '*' }), GPUFLEET_PROVIDERS: 'auto' }, false)).rejects.toThrow(
      'SIMULATED_NODES: only valid with GPUFLEET_PROVIDERS=simulated, not "auto"',
    );
  });
});

describe('an agent without SIMULATED_NODES', () => {
  it('presents NODE_NAME alone, as before', async () => {
    await records.delete('l40s-0');
    const beats: string[] = [];
    const sub = bus.subscribe(Events.heartbeat, (e) => void beats.push(e.payload.nodeName));
    agent = await startAgent(env({ NODE_NAME: 'l40s-0' }));
    const inv = (await records.get('l40s-0'))!.value;
    expect(inv.accelerators).toHaveLength(4);
    await waitFor('a heartbeat', () => beats.length > 1 || undefined);
    expect(new Set(beats)).toEqual(new Set(['l40s-0']));
    sub.unsubscribe();
  });
});
