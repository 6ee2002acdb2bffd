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

/** Levels at which the gang's pods share one NVLink fabric (scheduling-core's TOPOLOGY_LEVELS, narrowest first). */
const NVLINK_LEVELS = ['node', 'nvlink-domain'];

/** Pods per replica of the pod's pod set; 1 for a single-pod replica. */
export function groupSize(pod: DesiredPod, workload: Workload | undefined): number {
  return workload?.spec?.podSets.find((s) => s.name === pod.placement.podSet)?.size || 1;
}

/** The node of the replica's pod 0, as the scheduler placed it. */
export function leaderNodeOf(pod: DesiredPod, workload: Workload | undefined): string | undefined {
  const { podSet, replica } = pod.placement;
  return workload?.status?.placements.find((p) => p.podSet === podSet && p.replica === replica && p.pod === 0)?.node;
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
}

export type GroupResolution = { kind: 'single' } | { kind: 'group'; group: EngineGroup } | { kind: 'waiting'; message: string };

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
    return { kind: 'group', group: { ...common, leaderAddress: input.advertiseHost, rendezvousPort: input.rendezvousPort } };
  }
  const leader = input.leader;
  if (!leader || !leader.groupPort || !leader.host) {
    const node = leaderNodeOf(input.pod, input.workload) ?? 'its node';
    return { kind: 'waiting', message: `waiting for the group's leader (pod 0 on ${node}) to publish its rendezvous address` };
  }
  return { kind: 'group', group: { ...common, leaderAddress: leader.host, rendezvousPort: leader.groupPort } };
}
