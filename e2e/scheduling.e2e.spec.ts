import {
  Buckets,
  ClusterQueue,
  Lease,
  NodeInventory,
  NodeLedger,
  PreemptionPolicy,
  QueueServiceClient,
  QueueingStrategy,
  SchedulingServiceClient,
  WorkloadPhase,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { callUnary, channelCredentials } from '@gpufleet/grpc-kit';
import { KvStore, connectNats } from '@gpufleet/messaging';
import { ledgerConflicts, ledgerWorkloads } from '@gpufleet/scheduling-core';
import { RunningServer, startNats, waitFor } from '@gpufleet/testing';
import { ServiceStack } from './support/services';

const NODES = ['h100-0', 'h100-1', 'l40s-0', 'a100-mig-0'];
const TOTAL = 60;

function queue(name: string, pool: string, quota: number): ClusterQueue {
  return ClusterQueue.fromPartial({
    name,
    pool,
    nominalQuota: quota,
    queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
    withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
    reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
    fairSharingWeight: 1,
    packing: 'binpack',
  });
}

/** Workload i of the stream: whole H100s, L40S slices and A100 MIG partitions, mixed. */
function workload(i: number): WorkloadSpec {
  const kind = i % 3;
  const accelerator = kind === 0 ? { whole: 1 + (i % 2) } : kind === 1 ? { slice: { memoryMib: 8192, coresPercent: 20 } } : { partitionProfile: '1g.10gb' };
  return WorkloadSpec.fromPartial({
    namespace: 'stream',
    name: `w-${i}`,
    localQueue: ['h100', 'l40s', 'mig'][kind],
    priority: 0,
    podSets: [{ name: 'main', count: 1, size: 1, resources: { accelerator, vcpu: 2, memoryMib: 4096 } }],
  });
}

/**
 * Two scheduler replicas on real NATS; the leader is killed (SIGKILL) in the middle of a stream
 * of submissions. Every workload must end admitted exactly once, or pending with a reason, and
 * the devices ledger must never hold a device twice.
 */
describe('scheduler failover during a stream of submissions', () => {
  let nats: RunningServer;
  let stack: ServiceStack;

  beforeAll(async () => {
    nats = await startNats();
    stack = new ServiceStack(nats.url);
  });
  afterAll(async () => {
    await stack?.stop();
    await nats?.dispose();
  });

  it('admits every workload exactly once or leaves it pending with a reason', async () => {
    const env = { LEADER_RENEW_S: '0.5', LEADER_EXPIRE_S: '2', NOT_READY_TIMEOUT_S: '30' };
    const a = await stack.scheduler(env);
    await Promise.all(NODES.map((n) => stack.agent(n, { HEARTBEAT_INTERVAL_S: '1' })));
    const b = await stack.scheduler(env);
    const nc = await connectNats({ servers: [nats.url], name: 'e2e-observer' });
    const leases = await KvStore.open(nc.jetstream(), Buckets.leases('dev'), Lease);
    const holder = async () => (await leases.get('scheduler'))?.value.holder ?? '';
    await waitFor('a leader', async () => (await holder()) || undefined);
    const leaderIsA = (await holder()).endsWith(`/${a.proc.child.pid}`);
    const [leader, standby] = leaderIsA ? [a, b] : [b, a];

    const creds = channelCredentials();
    const queues = new QueueServiceClient(standby.address, creds);
    const scheduling = new SchedulingServiceClient(standby.address, creds);
    await waitFor('pools reported', async () => {
      for (const [name, pool, quota] of [
        ['h100', 'h100-80gb-hbm3-x86-64', 16 * 1_600_000],
        ['l40s', 'l40s-x86-64', 4 * 1_600_000],
        ['mig', 'a100-sxm4-80gb-x86-64', 8 * 1_600_000],
      ] as const) {
        await callUnary(queues, queues.putClusterQueue, { clusterQueue: queue(name, pool, quota) });
        await callUnary(queues, queues.putLocalQueue, { localQueue: { namespace: 'stream', name, clusterQueue: name } });
      }
      return true;
    }, { timeoutMs: 30_000, intervalMs: 500 });

    const killedAt = Math.floor(TOTAL / 3);
    let killTime = 0;
    for (let i = 0; i < TOTAL; i++) {
      if (i === killedAt) {
        leader.proc.child.kill('SIGKILL');
        killTime = Date.now();
      }
      await waitFor(`submit w-${i}`, async () => {
        await callUnary(scheduling, scheduling.submitWorkload, { spec: workload(i) });
        return true;
      }, { timeoutMs: 20_000, intervalMs: 200 });
      await new Promise((r) => setTimeout(r, 25));
    }

    await waitFor('the standby to take over', async () => ((await holder()).endsWith(`/${standby.proc.child.pid}`)) || undefined, { timeoutMs: 15_000 });
    expect(Date.now() - killTime).toBeLessThan(15_000);

    // Wait until the new leader settled every workload.
    const list = async () => (await callUnary(scheduling, scheduling.listWorkloads, { namespace: 'stream', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: 0, pageToken: '' })).workloads;
    await waitFor('workloads settled', async () => {
      const ws = await list();
      if (ws.length !== TOTAL) return undefined;
      for (const w of ws) {
        if (w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED) continue;
        const { explanation } = await callUnary(scheduling, scheduling.explainPending, { namespace: 'stream', name: w.spec!.name });
        if (!explanation?.gates.some((g) => !g.passed && g.reason)) return undefined;
      }
      return true;
    }, { timeoutMs: 60_000, intervalMs: 500 });

    const workloads = await list();
    const admitted = workloads.filter((w) => w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
    expect(admitted.length).toBeGreaterThan(TOTAL / 2);

    // The ledger agrees: each admitted workload is held once, nothing else is held, no device twice.
    const ledgerStore = await KvStore.open(nc.jetstream(), Buckets.ledger('dev'), NodeLedger);
    const nodeStore = await KvStore.open(nc.jetstream(), Buckets.nodes('dev'), NodeInventory);
    const holders = new Map<string, number>();
    for (const { key, value } of await ledgerStore.list()) {
      const inventory = (await nodeStore.get(key))!.value;
      expect(ledgerConflicts(value, inventory)).toEqual([]);
      for (const e of value.entries) holders.set(e.workload, (holders.get(e.workload) ?? 0) + 1);
      expect(ledgerWorkloads(value).every((k) => k.startsWith('stream/'))).toBe(true);
    }
    expect([...holders.keys()].sort()).toEqual(admitted.map((w) => `stream/${w.spec!.name}`).sort());
    for (const w of admitted) {
      expect(holders.get(`stream/${w.spec!.name}`)).toBe(w.status!.placements.length);
    }
    queues.close();
    scheduling.close();
    await nc.close();
  });
});
