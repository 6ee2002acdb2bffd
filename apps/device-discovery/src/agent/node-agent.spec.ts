import { Events, type EventDefinition, type NodeInventory } from '@gpufleet/contracts';
import { InventoryAssembler, parseFleet, SimulatedProvider } from '@gpufleet/device-inventory';
import { createLogger } from '@gpufleet/observability';
import { NodeAgent, type NodeAgentContext } from './node-agent';

const FLEET = parseFleet(`cluster: lab
nodes:
  - namePrefix: gpu-
    count: 2
    accelerators: { product: NVIDIA L40S, count: 4 }
`);

interface Published {
  type: string;
  payload: { nodeName?: string; generation?: number; provider?: string; error?: string };
}

/** A node agent over fakes of the nodes bucket and the event bus, logging JSON lines into `lines`. */
function agentOf(node: string, options: { generation?: number; oneOfMany?: boolean; put?: () => Promise<number> } = {}) {
  const records = new Map<string, NodeInventory>();
  const published: Published[] = [];
  const lines: { level: string; msg: string }[] = [];
  const ctx: NodeAgentContext = {
    cluster: 'lab',
    records: {
      put: async (key, value) => {
        if (options.put) return options.put();
        records.set(key, value);
        return records.size;
      },
    },
    bus: {
      publish: <T>(def: EventDefinition<T>, payload: T) => {
        published.push({ type: def.type, payload: payload as Published['payload'] });
        return 'id';
      },
    },
    logger: createLogger({ service: 'test', level: 'debug', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }),
    oneOfMany: options.oneOfMany ?? false,
  };
  const provider = new SimulatedProvider(FLEET, node);
  const assembler = new InventoryAssembler({ nodeName: node, cluster: 'lab', agentVersion: 'test', generation: options.generation ?? 0 });
  const agent = new NodeAgent(node, [provider], assembler, ctx);
  const events = (def: EventDefinition<unknown>) => published.filter((p) => p.type === def.type).map((p) => p.payload);
  return { agent, provider, records, events, lines };
}

const INTERVALS = { detectMs: 30_000, heartbeatMs: 10_000 };

describe('a node agent', () => {
  afterEach(() => jest.useRealTimers());

  it('writes its own record, continuing from its previous generation, and beats as its node', async () => {
    const { agent, records, events } = agentOf('gpu-1', { generation: 6 });
    await agent.start(INTERVALS, 1);
    agent.stop();
    expect(agent.inventory?.generation).toBe(7);
    const record = records.get('gpu-1')!;
    expect(record).toMatchObject({ nodeName: 'gpu-1', cluster: 'lab', generation: 7 });
    const other = await new SimulatedProvider(FLEET, 'gpu-0').detect();
    expect(record.accelerators).toHaveLength(4);
    expect(record.accelerators.map((a) => a.uuid)).not.toEqual(other.accelerators!.map((a) => a.uuid));
    expect(events(Events.inventory)).toHaveLength(1);
    expect(events(Events.heartbeat)).toEqual([expect.objectContaining({ nodeName: 'gpu-1', cluster: 'lab', generation: 7 })]);
  });

  it('publishes only when the content changed', async () => {
    const { agent, events } = agentOf('gpu-0');
    await agent.detectionPass();
    await agent.detectionPass();
    expect(events(Events.inventory)).toHaveLength(1);
    expect(agent.inventory?.generation).toBe(1);
  });

  it('keeps the last good devices when a pass fails, and tells of it as its node', async () => {
    const { agent, provider, events, lines } = agentOf('gpu-0');
    await agent.detectionPass();
    provider.simulateFailure('nvidia-smi: NVML driver/library version mismatch');
    await agent.detectionPass();
    expect(agent.inventory?.accelerators).toHaveLength(4);
    expect(agent.inventory?.providers[0]).toMatchObject({ provider: 'simulated', ok: false, error: 'nvidia-smi: NVML driver/library version mismatch' });
    expect(events(Events.detectionFailed)).toEqual([
      expect.objectContaining({ nodeName: 'gpu-0', cluster: 'lab', provider: 'simulated', error: 'nvidia-smi: NVML driver/library version mismatch' }),
    ]);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'simulated detection failed, keeping the last good result: nvidia-smi: NVML driver/library version mismatch',
    ]);
  });

  it('says when its record could not be written, and that it was on the next try', async () => {
    let fail = true;
    const { agent, lines } = agentOf('gpu-0', { put: async () => (fail ? Promise.reject(new Error('TIMEOUT')) : 1) });
    await agent.detectionPass();
    expect(agent.recordStale).toBe(true);
    expect(lines.map((l) => `${l.level}: ${l.msg}`)).toContain('warn: could not write node record: TIMEOUT');
    fail = false;
    expect(await agent.publishInventory('reconnected')).toBe(true);
    expect(agent.recordStale).toBe(false);
    expect(lines.at(-1)).toMatchObject({ level: 'info', msg: 'inventory generation 1 (reconnected): 4 accelerators, 0 NICs' });
  });

  it('logs its routine lines at debug when it is one of many nodes', async () => {
    const { agent, lines } = agentOf('gpu-0', { oneOfMany: true, put: async () => Promise.reject(new Error('TIMEOUT')) });
    await agent.detectionPass();
    expect(lines.map((l) => l.level)).toEqual(['debug']);
    expect(await agent.publishInventory('reconnected')).toBe(false);
  });

  it('starts its periodic beats and passes `phase` of an interval in, then beats every interval until stopped', async () => {
    jest.useFakeTimers();
    const { agent, events } = agentOf('gpu-0');
    await agent.start(INTERVALS, 0.25);
    const beats = () => events(Events.heartbeat).length;
    expect(beats()).toBe(1);
    jest.advanceTimersByTime(2_499);
    expect(beats()).toBe(1);
    jest.advanceTimersByTime(1);
    expect(beats()).toBe(2);
    jest.advanceTimersByTime(10_000);
    expect(beats()).toBe(3);
    jest.advanceTimersByTime(20_000);
    expect(beats()).toBe(5);
    agent.stop();
    jest.advanceTimersByTime(60_000);
    expect(beats()).toBe(5);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('with phase 1 beats exactly every interval after the first, as one agent per node always did', async () => {
    jest.useFakeTimers();
    const { agent, events } = agentOf('gpu-0');
    await agent.start(INTERVALS, 1);
    jest.advanceTimersByTime(9_999);
    expect(events(Events.heartbeat)).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(events(Events.heartbeat)).toHaveLength(2);
    jest.advanceTimersByTime(30_000);
    expect(events(Events.heartbeat)).toHaveLength(5);
    agent.stop();
  });
});
