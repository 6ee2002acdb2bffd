import { readFileSync } from 'fs';
import { Buckets, CapacityServiceClient, NodeInventory, NodePhase } from '@gpufleet/contracts';
import { KvStore, connectNats } from '@gpufleet/messaging';
import { callUnary } from '@gpufleet/grpc-kit';
import { RunningServer, startNats, stopOne, waitFor } from '@gpufleet/testing';
import { ServiceStack, capacityClient, instanceTypes, wholeCapacityByProduct } from './support/services';

const NODES = ['h100-0', 'h100-1', 'l40s-0', 'a100-mig-0', 'cpu-0'];
const H100 = 'NVIDIA H100 80GB HBM3';

/**
 * Simulated agents on a real nats-server feed a real scheduler process; capacity is read over
 * gRPC. Heartbeats every 0.5 s and a 3 s NotReady timeout keep the test short; the defaults
 * (15 s / 45 s) follow the same code path.
 */
describe('capacity from simulated agents (real NATS, real processes)', () => {
  let nats: RunningServer;
  let stack: ServiceStack;
  let client: CapacityServiceClient;

  beforeAll(async () => {
    nats = await startNats();
    stack = new ServiceStack(nats.url);
    const scheduler = await stack.scheduler({ NOT_READY_TIMEOUT_S: '3' });
    client = capacityClient(scheduler.address);
    await Promise.all(NODES.map((n) => stack.agent(n, { HEARTBEAT_INTERVAL_S: '0.5' })));
    await waitFor('all nodes registered', async () => {
      const { nodes } = await callUnary(client, client.listNodes, { pool: '', labelSelector: {}, pageSize: 0, pageToken: '' });
      return nodes.length === NODES.length || undefined;
    });
  });

  afterAll(async () => {
    client?.close();
    await stack?.stop();
    await nats?.dispose();
  });

  it('offers one InstanceType family per pool with the capacity the fleet file implies', async () => {
    const { pools } = await callUnary(client, client.listPools, { pageSize: 0, pageToken: '' });
    expect(pools.map((p) => [p.identity?.acceleratorProduct, p.nodes.length]).sort()).toEqual(
      [['', 1], ['NVIDIA A100-SXM4-80GB', 1], ['NVIDIA L40S', 1], [H100, 2]].sort(),
    );
    expect(await wholeCapacityByProduct(client)).toMatchObject({ [H100]: 16, 'NVIDIA L40S': 4, 'NVIDIA A100-SXM4-80GB': 0 });

    const types = await instanceTypes(client);
    const h100x8 = types.find((t) => t.acceleratorProduct === H100 && t.unit?.accelerators === 8)!;
    expect(h100x8.creditPrice).toBe(8 * 1_600_000);
    expect(h100x8.capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 16, capacity: 16 });
    expect(h100x8.capacity?.shared?.capacity).toBe(160);
    // MIG-enabled A100s offer partitions only.
    const a100 = types.find((t) => t.acceleratorProduct === 'NVIDIA A100-SXM4-80GB')!;
    expect(a100.capacity?.shared?.capacity).toBe(0);
    expect((a100.capacity?.partitioned ?? []).some((p) => (p.view?.capacity ?? 0) > 0)).toBe(true);

    const { instanceType } = await callUnary(client, client.getInstanceType, { name: h100x8.name });
    expect(instanceType?.name).toBe(h100x8.name);
  });

  it('pages ListNodes in name order with a token, every node once', async () => {
    const names: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const res = await callUnary(client, client.listNodes, { pool: '', labelSelector: {}, pageSize: 2, pageToken });
      expect(res.nodes.length).toBeLessThanOrEqual(2);
      names.push(...res.nodes.map((n) => n.name));
      pageToken = res.nextPageToken;
      pages++;
    } while (pageToken !== '');
    expect(pages).toBe(3);
    expect(names).toEqual([...NODES].sort());
    await expect(callUnary(client, client.listNodes, { pool: '', labelSelector: {}, pageSize: 2, pageToken: 'not-a-token' })).rejects.toMatchObject({ details: expect.stringMatching(/^INVALID_ARGUMENT: page_token: /) });
  });

  it('answers unknown names and bad input with precise errors', async () => {
    await expect(callUnary(client, client.getInstanceType, { name: 'no-such.1x' })).rejects.toMatchObject({
      code: 5,
      details: expect.stringContaining('NOT_FOUND: InstanceType "no-such.1x" does not exist'),
    });
    await expect(callUnary(client, client.getNode, { name: '' })).rejects.toMatchObject({
      code: 3,
      details: expect.stringContaining('name: expected a non-empty name'),
    });
    await expect(callUnary(client, client.listInstanceTypes, { pool: 'nope', pageSize: 0, pageToken: '' })).rejects.toMatchObject({
      code: 5,
      details: expect.stringMatching(/pool "nope" does not exist \(pools: /),
    });
  });

  it('ignores a malformed node record and keeps the accepted one', async () => {
    const nc = await connectNats({ servers: [nats.url], name: 'e2e-writer' });
    try {
      const store = await KvStore.open(nc.jetstream(), Buckets.nodes('dev'), NodeInventory);
      const current = (await store.get('l40s-0'))!.value;
      await store.put('l40s-0', { ...current, generation: current.generation + 1, cluster: 'elsewhere', accelerators: [] });
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await wholeCapacityByProduct(client))['NVIDIA L40S']).toBe(4);
      const log = readFileSync(stack.group.list().find((p) => p.spec.name === 'scheduler')!.spec.logFile, 'utf8');
      expect(log).toMatch(/INVALID_NODE_RECORD: l40s-0 revision \d+ ignored: cluster: expected \\"dev\\", got \\"elsewhere\\"/);
    } finally {
      await nc.close();
    }
  });

  it('a stopped node leaves the views within the timeout and returns when its agent restarts', async () => {
    const agent = stack.group.list().find((p) => p.spec.name === 'agent/h100-1')!;
    const watch = client.watchInstanceTypes({ pool: '', initial: false });
    const seen: number[] = [];
    watch.on('data', (ev) => {
      if (ev.instanceType?.acceleratorProduct === H100 && ev.instanceType.unit?.accelerators === 1) {
        seen.push(ev.instanceType.capacity.whole.capacity);
      }
    });
    watch.on('error', () => undefined);

    const stoppedAt = Date.now();
    agent.child.kill('SIGKILL');
    await waitFor('h100-1 capacity to leave', async () => ((await wholeCapacityByProduct(client))[H100] === 8) || undefined, {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const leftAfterMs = Date.now() - stoppedAt;
    expect(leftAfterMs).toBeLessThan(60_000);
    const { node } = await callUnary(client, client.getNode, { name: 'h100-1' });
    expect(node?.status?.phase).toBe(NodePhase.NODE_PHASE_NOT_READY);
    expect(node?.status?.reason).toBe('HeartbeatMissed');

    await stack.agent('h100-1', { HEARTBEAT_INTERVAL_S: '0.5' });
    await waitFor('h100-1 capacity to return', async () => ((await wholeCapacityByProduct(client))[H100] === 16) || undefined, {
      timeoutMs: 30_000,
    });
    await waitFor('watch events', () => (seen.includes(8) && seen.includes(16)) || undefined);
    watch.cancel();
  });

  it('keeps serving and catching up across a NATS restart', async () => {
    await nats.restart();
    // Every service reconnects; an agent started after the restart is seen, nodes stay Ready.
    // cpu-0's agent is replaced by one with a new label (two agents for one node would race:
    // the old one writes its record again when it reconnects).
    const old = stack.group.list().find((p) => p.spec.name === 'agent/cpu-0')!;
    await stopOne(old, 5_000);
    await stack.agent('cpu-0', { HEARTBEAT_INTERVAL_S: '0.5', NODE_LABELS: 'team=research' });
    await waitFor('the relabelled node record to arrive', async () => {
      const { node } = await callUnary(client, client.getNode, { name: 'cpu-0' });
      return node?.inventory?.labels['team'] === 'research' || undefined;
    }, { timeoutMs: 30_000 });
    await waitFor('all nodes Ready again', async () => {
      const { nodes } = await callUnary(client, client.listNodes, { pool: '', labelSelector: {}, pageSize: 0, pageToken: '' });
      return nodes.every((n) => n.status?.phase === NodePhase.NODE_PHASE_READY) || undefined;
    }, { timeoutMs: 30_000 });
    expect((await wholeCapacityByProduct(client))[H100]).toBe(16);
  });
});
