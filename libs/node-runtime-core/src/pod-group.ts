/**
 * A pod of a multi-node replica (pod set size > 1) and its place in the engine group: its rank
 * (the pod index; pod 0 leads), the leader's address and rendezvous port, and the NICs its
 * collectives use. The leader's runtime allocates the rendezvous port and publishes it in the
 * leader's pod record (`group_port`); the other pods' runtimes read it there, so a worker
 * starts only once its leader's record says where to meet.
 */
import type { NodeInventory, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import type { EngineGroup, GroupNetwork, MultiNodeMode } from '@gpufleet/engine-presets';
import type { DesiredPod } from './desired-pods';
import type { PodPlanErrorReason } from './errors';

/**
 * Engines whose leader launches every rank itself and so must know every pod's address before it
 * starts: TRT-LLM's `mpirun -H <pod0>,<pod1>,…` (the others rendezvous at the leader).
 */
const PEER_LIST_ENGINES = ['trtllm'];

/** Levels at which the gang's pods share one NVLink fabric (scheduling-core's TOPOLOGY_LEVELS, narrowest first). */
const NVLINK_LEVELS = ['node', 'nvlink-domain'];

/** Pods per replica of the pod's pod set; 1 for a single-pod replica. */
export function groupSize(pod: DesiredPod, workload: Workload | undefined): number {
  return workload?.spec?.podSets.find((s) => s.name === pod.placement.podSet)?.size || 1;
}

/** The node of the replica's pod 0, as the scheduler placed it. */
export function leaderNodeOf(pod: DesiredPod, workload: Workload | undefined): string | undefined {
  return nodeOfPod(pod, workload, 0);
}

/** The node of pod `index` of the pod's replica, as the scheduler placed it. */
function nodeOfPod(pod: DesiredPod, workload: Workload | undefined, index: number): string | undefined {
  const { podSet, replica } = pod.placement;
  return workload?.status?.placements.find((p) => p.podSet === podSet && p.replica === replica && p.pod === index)?.node;
}

/**
 * True when the pod set requires its pods to share an NVLink domain (e.g. the nodes of an NVL72
 * rack): only then does tensor parallel span pods; a preferred level promises nothing.
 */
export function nvlinkAcrossPods(pod: DesiredPod, workload: Workload | undefined): boolean {
  const topology = workload?.spec?.podSets.find((s) => s.name === pod.placement.podSet)?.topology;
  return NVLINK_LEVELS.includes(topology?.requiredLevel ?? '');
}

/**
 * The RDMA NICs nearest the pod's accelerators: active ports on the NUMA nodes of its
 * accelerators (every active port when the inventory knows no NUMA placement).
 */
export function groupNetwork(inventory: NodeInventory, acceleratorIds: readonly string[]): GroupNetwork | undefined {
  const active = inventory.nics.filter((n) => n.state.toUpperCase() === 'ACTIVE');
  if (active.length === 0) return undefined;
  const mine = inventory.accelerators.filter((a) => acceleratorIds.includes(a.uuid) || acceleratorIds.includes(String(a.index)));
  const numa = new Set(mine.filter((a) => a.numaNode !== undefined).map((a) => a.numaNode));
  const near = active.filter((n) => n.numaNode !== undefined && numa.has(n.numaNode));
  const chosen = near.length > 0 ? near : active;
  const hcas = [...new Set(chosen.map((n) => (n.port > 0 ? `${n.name}:${n.port}` : n.name)))];
  const netdevs = [...new Set(chosen.map((n) => n.netdev).filter((d): d is string => !!d))];
  return { socketInterfaces: netdevs, ibHcas: hcas };
}

export interface GroupInput {
  readonly pod: DesiredPod;
  readonly workload: Workload | undefined;
  readonly inventory: NodeInventory;
  /** The placement's accelerator ids (UUIDs or indexes). */
  readonly acceleratorIds: readonly string[];
  /** This node's advertised host: the leader's address for a leader, the pod's own for every pod. */
  readonly advertiseHost: string;
  /** The leader only: its rendezvous port, allocated by this runtime for the life of the pod. */
  readonly rendezvousPort?: number;
  /** Workers: the leader's record in the pods bucket, when its runtime wrote one. */
  readonly leader?: PodRuntimeStatus;
  /** EngineConfig.multi_node ('' for the engine's default). */
  readonly mode: string;
  /**
   * The leader: the records of the replica's other pods (the pods bucket, whichever node runs
   * them); a worker's record carries its node's advertised host from its first write, while it
   * still waits for the leader. They give the leader every pod's address (`peerAddresses`).
   */
  readonly members?: readonly PodRuntimeStatus[];
}

export type GroupResolution =
  | { kind: 'single' }
  | { kind: 'group'; group: EngineGroup }
  /** Not startable yet; `rendezvousPort`: a leader's, published meanwhile; `reason` default GROUP_LEADER_PENDING. */
  | { kind: 'waiting'; message: string; rendezvousPort?: number; reason?: PodPlanErrorReason };

/**
 * Every pod's address by rank, the leader's (its own host) first, from the workers' records of
 * this template; `missing` lists the ranks without a record yet.
 */
export function peerAddressesOf(input: GroupInput, size: number): { addresses: string[]; missing: number[] } {
  const { podSet, replica } = input.pod.placement;
  const template = input.pod.template.engine?.templateHash ?? '';
  const addresses = [input.advertiseHost];
  const missing: number[] = [];
  for (let rank = 1; rank < size; rank++) {
    const record = input.members?.find((m) => m.pod === rank && m.podSet === podSet && m.replica === replica && m.groupRole === 'worker' && m.templateHash === template && m.host);
    if (record) addresses.push(record.host);
    else missing.push(rank);
  }
  return { addresses, missing };
}

export function resolveGroup(input: GroupInput): GroupResolution {
  const size = groupSize(input.pod, input.workload);
  if (size <= 1) return { kind: 'single' };
  const rank = input.pod.placement.pod;
  const network = groupNetwork(input.inventory, input.acceleratorIds);
  const common = {
    size,
    rank,
    podAddress: input.advertiseHost,
    nvlinkAcrossPods: nvlinkAcrossPods(input.pod, input.workload),
    ...(input.mode ? { mode: input.mode as MultiNodeMode } : {}),
    ...(network ? { network } : {}),
  };
  if (rank === 0) {
    if (!input.rendezvousPort) return { kind: 'waiting', message: 'the leader has no rendezvous port yet' };
    const peers = peerAddressesOf(input, size);
    if (peers.missing.length > 0 && PEER_LIST_ENGINES.includes(input.pod.template.engine?.engine?.engine ?? '')) {
      const which = peers.missing.map((r) => `pod ${r} on ${nodeOfPod(input.pod, input.workload, r) ?? 'its node'}`).join(', ');
      return { kind: 'waiting', reason: 'GROUP_PEERS_PENDING', rendezvousPort: input.rendezvousPort, message: `waiting for the group's workers (${which}) to publish their addresses` };
    }
    return {
      kind: 'group',
      group: { ...common, leaderAddress: input.advertiseHost, rendezvousPort: input.rendezvousPort, ...(peers.missing.length === 0 ? { peerAddresses: peers.addresses } : {}) },
    };
  }
  const leader = input.leader;
  if (!leader || !leader.groupPort || !leader.host) {
    const node = leaderNodeOf(input.pod, input.workload) ?? 'its node';
    return { kind: 'waiting', message: `waiting for the group's leader (pod 0 on ${node}) to publish its rendezvous address` };
  }
  return { kind: 'group', group: { ...common, leaderAddress: leader.host, rendezvousPort: leader.groupPort } };
}

/** States of a pod whose engine is gone for now: its rank has left the group. */
const GONE = ['Backoff', 'Failed', 'Stopped'];

/**
 * Whether a serving member of a group must restart because another member is gone: engines
 * cannot re-form around a lost rank (NCCL's communicators are fixed at start), and some notice
 * only after a long collective timeout. The leader goes when a worker is gone, a worker when its
 * leader is; each then restarts with its backoff and the group forms again. Only a Ready member
 * is restarted, so a group that is re-forming is left to finish: no restart storm.
 * `self` is this pod's record, `members` the records of the replica's other pods (same workload).
 */
export function groupRestartReason(self: PodRuntimeStatus, members: readonly PodRuntimeStatus[]): string | undefined {
  if (!self.groupRole || self.state !== 'Ready') return undefined;
  const current = members.filter((m) => m.templateHash === self.templateHash && m.replica === self.replica && m.podSet === self.podSet && m.pod !== self.pod);
  const relevant = self.groupRole === 'leader' ? current.filter((m) => m.groupRole === 'worker') : current.filter((m) => m.groupRole === 'leader');
  const gone = relevant.find((m) => GONE.includes(m.state));
  if (!gone) return undefined;
  const what = `${gone.groupRole} pod ${gone.pod} on ${gone.node} is ${gone.state}${gone.lastExit ? ` (${gone.lastExit})` : ''}`;
  return `${what}; restarting this ${self.groupRole}: engines cannot re-form around a lost rank`;
}
