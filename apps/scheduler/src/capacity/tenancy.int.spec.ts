// Nodes that cannot keep tenants apart, end to end through a real nats-server and an in-process
// scheduler: a node runtime's report (written here into the runtimes bucket, the contract the
// node runtime fulfils) says its pods run unconfined, so the scheduler places one namespace's
// pods at a time on it, ListNodes shows the report, and the admin's SANDBOX_ALLOW_SHARING lifts it.
import { Buckets, NodeRuntimeReport, WorkloadPhase, type Workload } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { StopWaiting, waitFor } from '@gpufleet/testing';
import { workload } from '../__fixtures__/requests';
import { SchedulerHarness } from '../__fixtures__/scheduler-harness';

let h: SchedulerHarness;
let runtimes: KvStore<NodeRuntimeReport>;

beforeAll(async () => {
  h = await SchedulerHarness.start({ nodes: 1 });
  runtimes = await KvStore.open(h.nc.jetstream(), Buckets.runtimes(h.cluster), NodeRuntimeReport);
});
afterAll(async () => h?.stop());

const report = (overrides: Partial<NodeRuntimeReport>) =>
  NodeRuntimeReport.fromPartial({ node: 'gpu-0', runtime: 'process', sandboxed: false, sandboxDetail: 'pod sandboxes are off (SANDBOX=off)', sharingAllowed: false, reportedAt: new Date(), ...overrides });

async function submit(namespace: string, name: string): Promise<void> {
  await callUnary(h.clients.scheduling, h.clients.scheduling.submitWorkload, { spec: workload({ namespace, name }) }, { metadata: h.admin() });
}

/** Until it is admitted: for a workload already pending, whose gates say nothing new yet. */
async function admitted(namespace: string, name: string): Promise<Workload> {
  return waitFor(`${namespace}/${name} to be admitted`, async () => {
    const { workload: w } = await callUnary(h.clients.scheduling, h.clients.scheduling.getWorkload, { namespace, name }, { metadata: h.admin() });
    return w?.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED ? w : undefined;
  }, { timeoutMs: 15_000, intervalMs: 50 });
}

async function settled(namespace: string, name: string): Promise<Workload> {
  return waitFor(`${namespace}/${name} to be admitted or explained`, async () => {
    const { workload: w } = await callUnary(h.clients.scheduling, h.clients.scheduling.getWorkload, { namespace, name }, { metadata: h.admin() });
    const phase = w?.status?.phase;
    if (phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED) return w;
    return phase === WorkloadPhase.WORKLOAD_PHASE_PENDING && (w?.status?.pending?.gates.length ?? 0) > 0 ? w : undefined;
  }, { timeoutMs: 15_000, intervalMs: 50 });
}

describe('a node whose runtime cannot sandbox', () => {
  it('shows the report in ListNodes', async () => {
    await runtimes.put('gpu-0', report({}));
    const node = await waitFor('ListNodes to show the runtime report', async () => {
      const { nodes } = await callUnary(h.clients.capacity, h.clients.capacity.listNodes, { pool: '', labelSelector: {}, pageSize: 0, pageToken: '' }, { metadata: h.admin() });
      return nodes[0]?.runtime ? nodes[0] : undefined;
    }, { timeoutMs: 15_000, intervalMs: 50 });
    expect(node.runtime).toMatchObject({ node: 'gpu-0', runtime: 'process', sandboxed: false, sharingAllowed: false });
  });

  it('takes a second namespace only once the admin allows sharing', async () => {
    await submit('team-a', 'first');
    expect((await settled('team-a', 'first')).status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
    // team-a may use the rest of the node.
    await submit('team-a', 'second');
    expect((await settled('team-a', 'second')).status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);

    await submit('team-b', 'other');
    // Its first gate may be another (its namespace's default LocalQueue being created): wait for
    // the placement's, and make sure it is never admitted meanwhile.
    const gate = "1 node runs pods unconfined (no sandbox) and holds another namespace's pods, so it takes none of namespace team-b's: gpu-0 (team-a)";
    const pending = await waitFor('team-b/other to wait for the node', async () => {
      const w = await settled('team-b', 'other');
      if (w.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_PENDING) throw new StopWaiting(`team-b/other was ${String(w.status?.phase)}`);
      return JSON.stringify(w.status?.pending?.gates).includes(gate) ? w : undefined;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    expect(pending.status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_PENDING);

    await runtimes.put('gpu-0', report({ sharingAllowed: true }));
    // It was pending with the gate: settled() would answer at once, before the report arrives.
    expect((await admitted('team-b', 'other')).status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
  });

  it('a sandboxed report makes the node shared again', async () => {
    await runtimes.put('gpu-0', report({ sandboxed: true, sandboxDetail: 'pods run sandboxed' }));
    await submit('team-c', 'third');
    expect((await settled('team-c', 'third')).status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
  });
});
