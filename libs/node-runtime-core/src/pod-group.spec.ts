import { PodRuntimeStatus, WorkloadPhase, type Nic, type Workload } from '@gpufleet/contracts';
import { desiredPods, type DesiredPod } from './desired-pods';
import { groupNetwork, groupRestartReason, resolveGroup } from './pod-group';
import { planPod, type EnginePodPlan, type FailedPodPlan, type PlanContext } from './pod-plan';
import { podRuntimeStatus } from './pod-status';
import { accelerator, engineTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';

const nic = (name: string, numaNode: number, netdev: string, state = 'ACTIVE'): Nic => ({ name, port: 1, linkLayer: 'InfiniBand', state, numaNode, netdev });
const node = inventory({
  accelerators: [0, 1, 2, 3].map((i) => accelerator('nvidia', i, { numaNode: i < 2 ? 0 : 1 })),
  nics: [nic('mlx5_0', 0, 'ib0'), nic('mlx5_1', 0, 'ib1', 'DOWN'), nic('mlx5_2', 1, 'ib2')],
});

/** A two-pod replica: pod 0 on h100-0 (this node), pod 1 on h100-1. */
function gang(pod: number, topology = '', engine = 'vllm'): { desired: DesiredPod; workload: Workload } {
  const w = workload('big', engineTemplate({ engine, templateHash: 'tpl-1' }));
  w.spec!.podSets = [{ name: 'server', count: 1, size: 2, resources: undefined, topology: { requiredLevel: topology, preferredLevel: '' } }];
  w.status!.placements = [placement({ pod: 0, node: 'h100-0' }), placement({ pod: 1, node: 'h100-1' })];
  w.status!.phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED;
  const [desired] = desiredPods(NODE, ledger([{ workload: 'team-a/big', pod: placement({ pod, acceleratorIds: ['nvidia-0', 'nvidia-1'] }) }]), workloadMap(w));
  return { desired, workload: w };
}

const leaderRecord = (extra: Partial<PodRuntimeStatus> = {}): PodRuntimeStatus => ({ ...PodRuntimeStatus.fromJSON({}), workload: 'big', pod: 0, host: '10.0.0.1', port: 18000, groupRole: 'leader', groupPort: 29500, ...extra });

const ctx: PlanContext = {
  inventory: node,
  stateDir: '/state',
  engineMode: 'real',
  engineSim: { command: 'node', args: ['engine-sim.js'], cwd: '/repo' },
  stopGraceMs: 30_000,
};

describe('groupNetwork', () => {
  it('picks the active RDMA ports on the NUMA node of the pod’s accelerators', () => {
    expect(groupNetwork(node, [node.accelerators[0].uuid, '1'])).toEqual({ socketInterfaces: ['ib0'], ibHcas: ['mlx5_0:1'] });
    expect(groupNetwork(node, ['2', '3'])).toEqual({ socketInterfaces: ['ib2'], ibHcas: ['mlx5_2:1'] });
  });

  it('falls back to every active port when none is near, and to nothing without NICs', () => {
    const far = inventory({ accelerators: [accelerator('nvidia', 0, { numaNode: 3 })], nics: [nic('mlx5_0', 0, 'ib0')] });
    expect(groupNetwork(far, ['0'])?.ibHcas).toEqual(['mlx5_0:1']);
    expect(groupNetwork(inventory(), ['0'])).toBeUndefined();
  });
});

describe('resolveGroup', () => {
  it('a single-pod replica has no group', () => {
    const w = workload('small', engineTemplate());
    const [desired] = desiredPods(NODE, ledger([{ workload: 'team-a/small', pod: placement() }]), workloadMap(w));
    expect(resolveGroup({ pod: desired, workload: w, inventory: node, acceleratorIds: [], advertiseHost: '10.0.0.1', mode: '' })).toEqual({ kind: 'single' });
  });

  it('the leader meets its group at its own host and the rendezvous port its runtime gave it', () => {
    const { desired, workload: w } = gang(0);
    expect(resolveGroup({ pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.1', rendezvousPort: 29500, mode: '' })).toEqual({
      kind: 'group',
      group: { size: 2, rank: 0, podAddress: '10.0.0.1', leaderAddress: '10.0.0.1', rendezvousPort: 29500, nvlinkAcrossPods: false, network: { socketInterfaces: ['ib0'], ibHcas: ['mlx5_0:1'] } },
    });
  });

  it('a worker waits for its leader’s record, then takes the leader’s host and port from it', () => {
    const { desired, workload: w } = gang(1, 'nvlink-domain');
    const input = { pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.2', mode: 'data-parallel' };
    expect(resolveGroup(input)).toEqual({ kind: 'waiting', message: "waiting for the group's leader (pod 0 on h100-0) to publish its rendezvous address" });
    expect(resolveGroup({ ...input, leader: leaderRecord() })).toMatchObject({
      kind: 'group',
      group: { rank: 1, podAddress: '10.0.0.2', leaderAddress: '10.0.0.1', rendezvousPort: 29500, nvlinkAcrossPods: true, mode: 'data-parallel' },
    });
  });
});

describe('planPod for a group', () => {
  it('the leader is probed on /health and reports its rendezvous port', () => {
    const { desired, workload: w } = gang(0);
    const group = resolveGroup({ pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.1', rendezvousPort: 29500, mode: '' });
    const plan = planPod(desired, 18000, ctx, group) as EnginePodPlan;
    expect(plan.process.command).toBe('/bin/sh');
    expect(plan.process.health?.probe).toEqual({ kind: 'http', url: 'http://127.0.0.1:18000/health' });
    expect(plan.process.env?.NCCL_IB_HCA).toBe('mlx5_0:1');
    const status = podRuntimeStatus({ node: NODE, plan, processes: [], host: '10.0.0.1', runtimeUrl: '', now: new Date(0) });
    expect([status.groupRole, status.groupPort]).toEqual(['leader', 29500]);
  });

  it('a worker has no health probe (it serves nothing) and runs ray start against the leader', () => {
    const { desired, workload: w } = gang(1);
    const group = resolveGroup({ pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.2', leader: leaderRecord(), mode: '' });
    const plan = planPod(desired, 18001, ctx, group) as EnginePodPlan;
    expect(plan.process.health).toBeUndefined();
    expect([plan.process.command, ...(plan.process.args ?? [])]).toEqual(['ray', 'start', '--block', '--address=10.0.0.1:29500', '--node-ip-address=10.0.0.2', '--num-gpus=2', '--disable-usage-stats']);
    expect(podRuntimeStatus({ node: NODE, plan, processes: [], host: '10.0.0.2', runtimeUrl: '', now: new Date(0) }).groupRole).toBe('worker');
  });

  it('a worker without its leader’s address is Starting, saying what it waits for', () => {
    const { desired, workload: w } = gang(1);
    const group = resolveGroup({ pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.2', mode: '' });
    const plan = planPod(desired, 18001, ctx, group) as FailedPodPlan;
    expect(plan.reason).toBe('GROUP_LEADER_PENDING');
    const status = podRuntimeStatus({ node: NODE, plan, processes: [], host: '10.0.0.2', runtimeUrl: '', now: new Date(0) });
    expect(status.state).toBe('Starting');
    expect(status.message).toBe("GROUP_LEADER_PENDING: waiting for the group's leader (pod 0 on h100-0) to publish its rendezvous address");
  });
});

describe('a TRT-LLM leader and its workers’ addresses', () => {
  /** A worker's record as its runtime writes it while it waits for the leader: Starting, with its node's host. */
  const workerRecord = (extra: Partial<PodRuntimeStatus> = {}): PodRuntimeStatus => ({
    ...PodRuntimeStatus.fromJSON({}),
    node: 'h100-1',
    workload: 'big',
    podSet: 'server',
    pod: 1,
    state: 'Starting',
    host: '10.0.0.2',
    groupRole: 'worker',
    templateHash: 'tpl-1',
    ...extra,
  });
  const leaderInput = (members: PodRuntimeStatus[]) => {
    const { desired, workload: w } = gang(0, '', 'trtllm');
    return { pod: desired, workload: w, inventory: node, acceleratorIds: ['0', '1'], advertiseHost: '10.0.0.1', rendezvousPort: 29500, mode: '', members };
  };

  it('waits for every worker’s record, Starting, while publishing its rendezvous port so the workers start', () => {
    const group = resolveGroup(leaderInput([]));
    expect(group).toEqual({ kind: 'waiting', reason: 'GROUP_PEERS_PENDING', rendezvousPort: 29500, message: "waiting for the group's workers (pod 1 on h100-1) to publish their addresses" });
    const plan = planPod(gang(0, '', 'trtllm').desired, 18000, ctx, group) as FailedPodPlan;
    const status = podRuntimeStatus({ node: NODE, plan, processes: [], host: '10.0.0.1', runtimeUrl: '', now: new Date(0) });
    expect([status.state, status.groupRole, status.groupPort]).toEqual(['Starting', 'leader', 29500]);
    expect(status.message).toBe("GROUP_PEERS_PENDING: waiting for the group's workers (pod 1 on h100-1) to publish their addresses");
  });

  it('takes the workers’ hosts from their records, by rank, and launches mpirun over every pod', () => {
    const group = resolveGroup(leaderInput([workerRecord()]));
    expect(group).toMatchObject({ kind: 'group', group: { peerAddresses: ['10.0.0.1', '10.0.0.2'] } });
    const plan = planPod(gang(0, '', 'trtllm').desired, 18000, ctx, group) as EnginePodPlan;
    expect([plan.process.command, ...(plan.process.args ?? []).slice(0, 8)]).toEqual(['mpirun', '--allow-run-as-root', '-np', '4', '-H', '10.0.0.1:2,10.0.0.2:2', '--mca', 'plm_rsh_args', '-p 29500']);
  });

  it('ignores records of another template or replica, and other engines start without them', () => {
    expect(resolveGroup(leaderInput([workerRecord({ templateHash: 'tpl-0' }), workerRecord({ replica: 1 })]))).toMatchObject({ kind: 'waiting', reason: 'GROUP_PEERS_PENDING' });
    const { desired, workload: w } = gang(0);
    const vllm = resolveGroup({ ...leaderInput([]), pod: desired, workload: w });
    expect(vllm).toMatchObject({ kind: 'group', group: { rank: 0, rendezvousPort: 29500 } });
    expect(vllm).not.toHaveProperty('group.peerAddresses');
  });
});

describe('groupRestartReason', () => {
  const member = (pod: number, state: string, extra: Partial<PodRuntimeStatus> = {}): PodRuntimeStatus => ({
    ...PodRuntimeStatus.fromJSON({}),
    workload: 'big',
    podSet: 'server',
    node: `h100-${pod}`,
    pod,
    state,
    groupRole: pod === 0 ? 'leader' : 'worker',
    templateHash: 'tpl-1',
    ...extra,
  });

  it('a Ready leader restarts when a worker is gone, saying which', () => {
    expect(groupRestartReason(member(0, 'Ready'), [member(1, 'Backoff', { lastExit: 'killed by SIGKILL' })])).toBe(
      'worker pod 1 on h100-1 is Backoff (killed by SIGKILL); restarting this leader: engines cannot re-form around a lost rank',
    );
  });

  it('a Ready worker restarts when its leader is gone', () => {
    expect(groupRestartReason(member(1, 'Ready'), [member(0, 'Failed')])).toMatch(/^leader pod 0 on h100-0 is Failed; restarting this worker/);
  });

  it('leaves a group that is forming, members of another template, and single pods alone', () => {
    expect(groupRestartReason(member(0, 'Running'), [member(1, 'Backoff')])).toBeUndefined();
    expect(groupRestartReason(member(0, 'Ready'), [member(1, 'Backoff', { templateHash: 'tpl-0' })])).toBeUndefined();
    expect(groupRestartReason(member(0, 'Ready'), [member(1, 'Ready')])).toBeUndefined();
    expect(groupRestartReason(member(0, 'Ready', { groupRole: '' }), [member(1, 'Backoff')])).toBeUndefined();
  });
});
