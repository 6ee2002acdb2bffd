/**
 * The in-memory mirror of the devices ledger and the placement step of admission.
 *
 * The engine holds every node's inventory and the ledger entries on it, and derives from them
 * the free devices and the indexes placement searches (see pool-index). `tryPlace` works out a
 * whole workload by holding its pods tentatively and undoing them before it returns, so it
 * never changes state; `commit` re-checks every pod against the live state and records it, so
 * no accelerator, token, slice or partition is ever handed out twice, even if the caller
 * commits stale placements. Ledger entries are the truth: an inventory change re-derives the
 * node from them, and entries for unknown nodes wait for their node.
 *
 * Policy (see device-choice): whole accelerators are always bin-packed onto the node with the
 * fewest free accelerators that fits, keeping whole nodes free for 8-accelerator pods and
 * gangs; the request's `packing` applies to shared tokens, slices and MIG partitions.
 * Pod sets are placed hardest first (replicas confined to one domain, then the most
 * accelerators), so small pods do not fragment the domain a gang needs.
 */
import type { NodeInventory, NodeLedger, PodPlacement, PodSet } from '@gpufleet/contracts';
import { NodeAllocations, poolBaseName, poolIdentityOf } from '@gpufleet/capacity-core';
import { migProfileIndex } from '@gpufleet/device-inventory';
import { clonePod, comparePods, ledgerAllocations, ledgerConflicts, podHoldOf, podLabel } from '../ledger';
import type { Packing, PlacementFailure, PlacementOutcome, PlacementRequest, Placer, WorkloadKey } from '../placer';
import { chooseDevices } from './device-choice';
import { largestFreeBlock, noPlaceForPod, notEnoughRoom, topologyUnsatisfiable } from './diagnosis';
import { indexProblems } from './index-audit';
import { NodeState } from './node-state';
import { PodDemand, podDemandOf } from './pod-demand';
import { Domain, PoolIndex } from './pool-index';
import { placeInDomain, placeReplica, ReplicaRequest } from './replica-placement';
import { TentativePlacement } from './tentative-placement';
import { FencedNode, fencedClause, namespaceOfKey, NodeTenancy, otherTenants } from './tenancy';
import { TOPOLOGY_LEVELS, topologyLevelIndex } from './topology-levels';

/** One pod set of a request, read and checked once. */
interface PodSetPlan {
  readonly podSet: PodSet;
  /** Position in the request, for ordering the outcome. */
  readonly order: number;
  readonly demand: PodDemand;
  readonly replicas: number;
  readonly size: number;
  readonly required: number;
  readonly preferred: number;
}

type PlanOrFailure = { ok: true; plans: PodSetPlan[] } | ({ ok: false } & PlacementFailure);

/** The pool a node belongs to when the caller does not say: its capacity-model base name. */
export function defaultPoolOf(inventory: NodeInventory): string {
  return poolBaseName(poolIdentityOf(inventory));
}

export class PlacementEngine implements Placer {
  private readonly nodes = new Map<string, NodeState>();
  private readonly pools = new Map<string, PoolIndex>();
  /** Nodes per pool, Ready or not, for messages. */
  private readonly poolMembers = new Map<string, number>();
  /** node -> workload -> its pods there, sorted. */
  private readonly ledgers = new Map<string, Map<WorkloadKey, PodPlacement[]>>();
  /** workload -> nodes it holds something on. */
  private readonly holdings = new Map<WorkloadKey, Set<string>>();
  /** Nodes that take one namespace's pods at a time (see tenancy). */
  private readonly exclusive = new Set<string>();
  private readonly applyPod = (node: NodeState, pod: PodPlacement, sign: 1 | -1): void => this.adjust(node, pod, sign);

  // ---- nodes and ledger ------------------------------------------------------------------

  /**
   * Adds a node or replaces its inventory. `pool` is the name the capacity model gave the
   * node's pool (`Node.pool`); only Ready nodes are placed on, but ledger entries on any node
   * keep its devices taken. `tenancy` says whether pods of several namespaces may share it.
   * `withheld` accelerators are offered for nothing (the kubelet cannot allocate them).
   */
  upsertNode(inventory: NodeInventory, ready: boolean, pool: string = defaultPoolOf(inventory), tenancy: NodeTenancy = 'shared', withheld?: ReadonlySet<string>): void {
    const name = inventory.nodeName;
    if (name === '') throw new Error('INVALID_ARGUMENT: node inventory has an empty nodeName');
    const old = this.nodes.get(name);
    if (old) this.detach(old);
    if (tenancy === 'exclusive') this.exclusive.add(name);
    else this.exclusive.delete(name);
    const node = new NodeState(inventory, pool, ready, withheld);
    this.nodes.set(name, node);
    this.poolMembers.set(pool, (this.poolMembers.get(pool) ?? 0) + 1);
    for (const pods of this.ledgers.get(name)?.values() ?? []) for (const pod of pods) this.adjust(node, pod, 1);
    if (ready) this.poolIndex(pool).add(node);
  }

  /** Forgets a node. Its ledger entries stay (and count again if it returns) until released. */
  removeNode(name: string): void {
    const node = this.nodes.get(name);
    if (node) this.detach(node);
    this.exclusive.delete(name);
  }

  /**
   * Replaces the whole ledger with the store's (start-up, leader takeover) and re-derives every
   * node. Returns the conflicts found in it, for the log; the entries are kept regardless.
   */
  loadLedger(ledgers: readonly NodeLedger[]): string[] {
    this.ledgers.clear();
    this.holdings.clear();
    for (const ledger of ledgers) {
      for (const entry of ledger.entries) if (entry.pod) this.record(ledger.node, entry.workload, clonePod(entry.pod));
    }
    for (const byWorkload of this.ledgers.values()) for (const pods of byWorkload.values()) pods.sort(comparePods);
    for (const node of [...this.nodes.values()]) this.upsertNode(node.inventory, node.ready, node.pool, this.tenancyOf(node.name), node.withheld);
    const conflicts: string[] = [];
    for (const name of [...this.ledgers.keys()].sort()) {
      const node = this.nodes.get(name);
      if (node) conflicts.push(...ledgerConflicts(this.ledgerOf(name), node.inventory));
    }
    return conflicts;
  }

  /** The node's ledger as the store keeps it: entries by workload, then pod. */
  ledgerOf(node: string): NodeLedger {
    const byWorkload = this.ledgers.get(node);
    const entries = [...(byWorkload?.keys() ?? [])]
      .sort()
      .flatMap((workload) => (byWorkload?.get(workload) ?? []).map((pod) => ({ workload, pod: clonePod(pod) })));
    return { node, entries };
  }

  /** What the capacity views should subtract on the node (`CapacityModel.setAllocations`). */
  allocationsOf(node: string): NodeAllocations {
    return ledgerAllocations(this.ledgerOf(node));
  }

  /** Nodes whose ledgers hold the workload: the ones to write after commit or release. */
  nodesTouchedBy(key: WorkloadKey): string[] {
    return [...(this.holdings.get(key) ?? [])].sort();
  }

  /** The workload's committed pods, sorted. */
  placementsOf(key: WorkloadKey): PodPlacement[] {
    const pods: PodPlacement[] = [];
    for (const node of this.holdings.get(key) ?? []) for (const pod of this.ledgers.get(node)?.get(key) ?? []) pods.push(clonePod(pod));
    return pods.sort(comparePods);
  }

  /** Differences between the incremental indexes and a rebuild from the ledger; empty when sound. */
  auditIndexes(): string[] {
    return indexProblems(
      this.nodes.values(),
      (name) => this.pools.get(name),
      (name) => [...(this.ledgers.get(name)?.values() ?? [])].flat(),
    );
  }

  // ---- Placer ----------------------------------------------------------------------------

  /** Whether the node takes pods of several namespaces (see tenancy). */
  tenancyOf(node: string): NodeTenancy {
    return this.exclusive.has(node) ? 'exclusive' : 'shared';
  }

  tryPlace(request: PlacementRequest): PlacementOutcome {
    const index = this.pools.get(request.pool);
    if (!index || index.readyNodes === 0) return this.poolUnavailable(request.pool);
    // Exclusive nodes holding another namespace's pods are fenced while this request is placed:
    // a flag every device choice checks, so the indexes stay as they are and the common case
    // (no exclusive node) costs nothing. (Taking them out of the index and back cost ~13 µs a
    // node per request: docs/benchmarks.md#tenancy.) The failure diagnosis may still count
    // their free devices; the clause it gets names them.
    const fenced = this.fence(index, namespaceOfKey(request.key));
    try {
      const outcome = this.placeIn(index, request, fenced.length);
      if (outcome.ok || fenced.length === 0) return outcome;
      return { ...outcome, message: `${outcome.message}; ${fencedClause(fenced, namespaceOfKey(request.key))}` };
    } finally {
      for (const f of fenced) {
        const node = this.nodes.get(f.node);
        if (node) node.fenced = false;
      }
    }
  }

  /** Fences the Ready exclusive nodes of the pool where another namespace holds something. */
  private fence(index: PoolIndex, namespace: string): FencedNode[] {
    const fenced: FencedNode[] = [];
    for (const name of this.exclusive) {
      const node = this.nodes.get(name);
      if (!node?.indexed || node.pool !== index.name) continue;
      const tenants = otherTenants(this.ledgers.get(name)?.keys() ?? [], namespace);
      if (tenants.length === 0) continue;
      node.fenced = true;
      fenced.push({ node: name, tenants });
    }
    return fenced.sort((a, b) => a.node.localeCompare(b.node));
  }

  private placeIn(index: PoolIndex, request: PlacementRequest, fenced: number): PlacementOutcome {
    if (index.readyNodes === fenced) return { ok: false, reason: 'NoFit', message: `pool ${request.pool} has no Ready node that takes namespace ${namespaceOfKey(request.key)}'s pods now`, largestFreeBlock: 'nothing: no node may take the pods' };
    const planned = this.plan(request);
    if (!planned.ok) return planned;
    const packing: Packing = request.packing === 'spread' ? 'spread' : 'binpack';
    // Hardest first: replicas confined to one domain, then the most accelerators per replica.
    const plans = [...planned.plans].sort((a, b) => difficulty(b) - difficulty(a) || a.order - b.order);
    const tentative = new TentativePlacement(this.applyPod);
    const preferredNodes = this.preferredDomains(request);
    for (const plan of plans) {
      for (let replica = 0; replica < plan.replicas; replica++) {
        const replicaRequest = { ...replicaOf(plan, replica, packing), ...(preferredNodes.length > 0 ? { preferredNodes } : {}) };
        if (!placeReplica(index, replicaRequest, tentative)) {
          return { ok: false, ...this.explain(index, plans, plan, replicaRequest, tentative) };
        }
      }
    }
    const orderOf = new Map(planned.plans.map((p) => [p.podSet.name, p.order]));
    const placements = tentative.held
      .map((h) => h.pod)
      .sort((a, b) => (orderOf.get(a.podSet) ?? 0) - (orderOf.get(b.podSet) ?? 0) || comparePods(a, b));
    tentative.undoTo(0);
    return { ok: true, placements };
  }

  /** The node-level domains of the request's preferred nodes that are Ready, in its pool and not fenced off. */
  private preferredDomains(request: PlacementRequest): Domain[] {
    const out: Domain[] = [];
    for (const name of request.preferredNodes ?? []) {
      const node = this.nodes.get(name);
      const domain = node?.domains[0];
      if (node && node.ready && !node.fenced && node.pool === request.pool && domain) out.push(domain);
    }
    return out;
  }

  /**
   * Records an admitted workload. Every pod is checked against the live state first (its
   * devices free, its node's vCPU and memory enough); on any problem nothing is recorded and
   * the error names the pod and the device. Returns the nodes whose ledgers changed.
   */
  commit(key: WorkloadKey, placements: PodPlacement[]): string[] {
    if (this.holdings.has(key)) throw new Error(`FAILED_PRECONDITION: commit of ${key}: it already holds devices; release it first`);
    const tentative = new TentativePlacement(this.applyPod);
    const pods = new Set<string>();
    for (const placement of placements) {
      const node = this.nodes.get(placement.node);
      const id = `${placement.podSet}\u0000${placement.replica}\u0000${placement.pod}`;
      const problem = pods.has(id) ? 'the pod is listed twice' : node ? (this.tenantProblem(node.name, key) ?? holdProblem(node, placement)) : `node ${placement.node} is unknown`;
      pods.add(id);
      if (problem !== undefined || !node) {
        tentative.undoTo(0);
        throw new Error(`FAILED_PRECONDITION: commit of ${key}: ${podLabel(key, placement)}: ${problem}`);
      }
      tentative.hold(node, clonePod(placement));
    }
    for (const { node, pod } of tentative.held) this.record(node.name, key, pod);
    for (const node of this.holdings.get(key) ?? []) this.ledgers.get(node)?.get(key)?.sort(comparePods);
    return this.nodesTouchedBy(key);
  }

  /**
   * Frees everything the workload holds (finished, deleted, preempted) and returns the nodes
   * whose ledgers changed. Unknown keys are a no-op.
   */
  release(key: WorkloadKey): string[] {
    const touched = this.nodesTouchedBy(key);
    for (const name of touched) {
      const byWorkload = this.ledgers.get(name);
      const node = this.nodes.get(name);
      for (const pod of byWorkload?.get(key) ?? []) if (node) this.adjust(node, pod, -1);
      byWorkload?.delete(key);
      if (byWorkload?.size === 0) this.ledgers.delete(name);
    }
    this.holdings.delete(key);
    return touched;
  }

  // ---- internals -------------------------------------------------------------------------

  /** Why the workload may not hold anything on an exclusive node now; undefined when it may. */
  private tenantProblem(node: string, key: WorkloadKey): string | undefined {
    if (!this.exclusive.has(node)) return undefined;
    const tenants = otherTenants(this.ledgers.get(node)?.keys() ?? [], namespaceOfKey(key));
    return tenants.length === 0 ? undefined : `node ${node} runs pods unconfined and holds pods of namespace ${tenants.join(', ')}: it takes one namespace at a time`;
  }

  private poolIndex(pool: string): PoolIndex {
    let index = this.pools.get(pool);
    if (!index) {
      index = new PoolIndex(pool);
      this.pools.set(pool, index);
    }
    return index;
  }

  private detach(node: NodeState): void {
    const index = this.pools.get(node.pool);
    index?.remove(node);
    this.nodes.delete(node.name);
    const members = (this.poolMembers.get(node.pool) ?? 1) - 1;
    if (members > 0) {
      this.poolMembers.set(node.pool, members);
    } else {
      this.poolMembers.delete(node.pool);
      this.pools.delete(node.pool);
    }
  }

  private record(node: string, workload: WorkloadKey, pod: PodPlacement): void {
    let byWorkload = this.ledgers.get(node);
    if (!byWorkload) {
      byWorkload = new Map();
      this.ledgers.set(node, byWorkload);
    }
    const pods = byWorkload.get(workload);
    if (pods) pods.push(pod);
    else byWorkload.set(workload, [pod]);
    let nodes = this.holdings.get(workload);
    if (!nodes) {
      nodes = new Set();
      this.holdings.set(workload, nodes);
    }
    nodes.add(node);
  }

  /** Applies (sign 1) or takes back (sign -1) one pod, keeping the pool's indexes in step. */
  private adjust(node: NodeState, pod: PodPlacement, sign: 1 | -1): void {
    const index = node.indexed ? this.pools.get(node.pool) : undefined;
    if (!index) {
      node.applyPod(pod, sign);
      return;
    }
    node.applyPod(pod, sign, index);
    index.refreshNode(node);
  }

  private poolUnavailable(pool: string): PlacementOutcome {
    const members = this.poolMembers.get(pool) ?? 0;
    const message =
      members === 0
        ? `pool ${pool} has no nodes (is the ClusterQueue's pool name right?)`
        : `pool ${pool} has ${members} node${members === 1 ? '' : 's'}, none of them Ready`;
    return { ok: false, reason: 'PoolUnavailable', message, largestFreeBlock: 'nothing: no Ready node' };
  }

  private plan(request: PlacementRequest): PlanOrFailure {
    const plans: PodSetPlan[] = [];
    for (const [order, podSet] of request.podSets.entries()) {
      const demand = podDemandOf(podSet);
      if (!demand.ok) return { ok: false, reason: 'NoFit', message: demand.problem, largestFreeBlock: 'not applicable' };
      const required = levelOf(podSet.topology?.requiredLevel);
      const preferred = levelOf(podSet.topology?.preferredLevel);
      for (const [which, level] of [
        ['required', required],
        ['preferred', preferred],
      ] as const) {
        if (level === undefined) {
          const given = which === 'required' ? podSet.topology?.requiredLevel : podSet.topology?.preferredLevel;
          return {
            ok: false,
            reason: 'TopologyUnsatisfiable',
            message: `pod set "${podSet.name}" asks for ${which} topology level "${given}"; levels are ${TOPOLOGY_LEVELS.join(', ')}`,
            largestFreeBlock: 'not applicable',
          };
        }
      }
      plans.push({
        podSet,
        order,
        demand: demand.demand,
        replicas: podSet.count,
        // Proto3 has no "unset": a replica of 0 pods is read as the usual single pod.
        size: Math.max(1, podSet.size),
        required: required ?? -1,
        preferred: preferred ?? -1,
      });
    }
    return { ok: true, plans };
  }

  /**
   * Says why `failed` did not fit. Decided while the workload's other pods are still held
   * (would the replica fit without its topology?), then described on the clean state.
   */
  private explain(
    index: PoolIndex,
    plans: readonly PodSetPlan[],
    failed: PodSetPlan,
    replica: ReplicaRequest,
    tentative: TentativePlacement,
  ): PlacementFailure {
    let topologyOnly = false;
    if (failed.required >= 0 && failed.size > 1) {
      const mark = tentative.mark();
      topologyOnly = placeInDomain(index, index.root, replica, tentative);
      tentative.undoTo(mark);
    }
    tentative.undoTo(0);
    if (topologyOnly) {
      const explanation = topologyUnsatisfiable(index, failed.podSet.name, failed.demand, failed.size, failed.required);
      return { reason: 'TopologyUnsatisfiable', message: explanation.message, largestFreeBlock: explanation.largestFreeBlock };
    }
    const demand = failed.demand;
    const largest = largestFreeBlock(index, demand).full;
    if (chooseDevices(index, index.root, demand, replica.packing)) {
      const message = notEnoughRoom(index, failed.podSet.name, demand, failed.replicas * failed.size, plans.length > 1);
      return { reason: 'NoFit', message, largestFreeBlock: largest };
    }
    const deviceExists =
      demand.kind !== 'host' && chooseDevices(index, index.root, { ...demand, vcpu: 0, memoryMib: 0 }, replica.packing) !== undefined;
    return {
      reason: 'NoFit',
      message: `pod set "${failed.podSet.name}": ${noPlaceForPod(index, demand, deviceExists)}`,
      largestFreeBlock: largest,
    };
  }
}

function levelOf(level: string | undefined): number | undefined {
  if (level === undefined || level === '') return -1;
  const index = topologyLevelIndex(level);
  return index < 0 ? undefined : index;
}

function difficulty(plan: PodSetPlan): number {
  const confined = plan.required >= 0 && plan.size > 1 ? 1_000_000 : 0;
  return confined + plan.demand.whole * plan.size;
}

function replicaOf(plan: PodSetPlan, replica: number, packing: Packing): ReplicaRequest {
  return {
    podSet: plan.podSet.name,
    replica,
    size: plan.size,
    demand: plan.demand,
    required: plan.required,
    preferred: plan.preferred,
    packing,
  };
}

/** Why the pod cannot be held on the node now; undefined when it can. */
function holdProblem(node: NodeState, pod: PodPlacement): string | undefined {
  if (!node.hostFits(pod.vcpu, pod.memoryMib)) {
    return `node ${node.name} has ${node.freeVcpu} vCPU and ${node.freeMemoryMib} MiB memory free; the pod asks ${pod.vcpu} vCPU and ${pod.memoryMib} MiB`;
  }
  const hold = podHoldOf(pod);
  if (hold.kind === 'host') return undefined;
  const ids = hold.kind === 'whole' ? hold.acceleratorIds : [hold.acceleratorId];
  if (new Set(ids).size !== ids.length) return `accelerator ids ${ids.join(', ')} repeat`;
  for (const id of ids) {
    const a = node.byId.get(id);
    if (!a) return `node ${node.name} offers no accelerator ${id}`;
    const at = `accelerator ${id} of node ${node.name}`;
    switch (hold.kind) {
      case 'whole':
        if (!a.isFree) return `${at} is not free`;
        break;
      case 'shared':
        if (hold.tokens > 10) return `${hold.tokens} shared tokens is more than one accelerator has`;
        if (a.freeTokens < hold.tokens) return `${at} has ${Math.max(0, a.freeTokens)} free shared tokens, the pod asks ${hold.tokens}`;
        break;
      case 'slice':
        if (a.freeCoresPercent < hold.coresPercent || a.freeSliceMemoryMib < hold.memoryMib) {
          return a.freeCoresPercent < 0
            ? `${at} is not available for slices`
            : `${at} has ${a.freeSliceMemoryMib} MiB and ${a.freeCoresPercent}% compute free for slices, the pod asks ${hold.memoryMib} MiB and ${hold.coresPercent}%`;
        }
        break;
      case 'partition': {
        const mig = a.partitionable;
        if (!mig) return a.mig ? `${at} is held in another mode` : `${at} is not MIG-enabled`;
        const profileIndex = migProfileIndex(mig.geometry, hold.profile);
        if (profileIndex < 0) return `${at} offers no MIG profile ${hold.profile}`;
        const existing = mig.existingAt(profileIndex, hold.start);
        if (existing ? existing.holds > 0 : !mig.isFreeStart(mig.geometry.profiles[profileIndex], hold.start)) {
          return `${hold.profile}@${hold.start} on ${at} is taken or not a valid start`;
        }
        break;
      }
    }
  }
  return undefined;
}
