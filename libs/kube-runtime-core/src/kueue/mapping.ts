// Pure mapping between gpufleet's pools and queues and Kueue's kueue.x-k8s.io/v1beta2 objects,
// and from a Kueue Workload to a gpufleet placement request (the gpufleet-placement AdmissionCheck).
import type { KubernetesObject } from '@kubernetes/client-node';
import { AcceleratorVendor, PreemptionPolicy, QueueingStrategy, type ClusterQueue, type LocalQueue, type NodeInventory, type PodPlacement, type PodSet } from '@gpufleet/contracts';
import { computeNodeLabels, LABEL } from '@gpufleet/device-inventory';
import { resourceName } from '@gpufleet/device-plugin-core';
import { vendorName } from '@gpufleet/process-spec';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../names';

export const KUEUE_GROUP = 'kueue.x-k8s.io';
export const KUEUE_VERSION = 'v1beta2';
export const KUEUE_API_VERSION = `${KUEUE_GROUP}/${KUEUE_VERSION}`;
/** gpufleet's quota unit as a Kueue resource: credits per hour (docs/scheduling.md#credits). */
export const CREDITS_RESOURCE = 'gpufleet.io/credits';
/** Credits per whole accelerator per hour. */
export const CREDITS_PER_ACCELERATOR = 1_600_000;
export const ADMISSION_CHECK = 'gpufleet-placement';
export const ADMISSION_CHECK_CONTROLLER = 'gpufleet.io/placement';

/** The labels that tell one pool's nodes from another's: the accelerator product, architecture and OS. */
export const POOL_LABEL_KEYS: readonly string[] = [LABEL.nvidiaProduct, LABEL.amdProduct, LABEL.npuProduct, LABEL.arch, LABEL.os];

export type KueueKind = 'ResourceFlavor' | 'ClusterQueue' | 'LocalQueue' | 'AdmissionCheck';
/** Plural resource names, for the API paths. */
export const KUEUE_PLURAL: Record<KueueKind | 'Workload', string> = {
  ResourceFlavor: 'resourceflavors',
  ClusterQueue: 'clusterqueues',
  LocalQueue: 'localqueues',
  AdmissionCheck: 'admissionchecks',
  Workload: 'workloads',
};

export interface KueueObject extends KubernetesObject {
  apiVersion: string;
  kind: KueueKind;
  metadata: { name: string; namespace?: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

/** What the mirror needs of a pool. */
export interface KueuePool {
  name: string;
  /** Accelerator vendor of the pool's identity; UNSPECIFIED for a CPU-only pool. */
  acceleratorVendor: AcceleratorVendor;
  acceleratorProduct: string;
  /** Inventories of the pool's nodes (their labels are computed from them, as device-discovery does). */
  nodes: readonly NodeInventory[];
}

const managed = (): Record<string, string> => ({ [MANAGED_BY_LABEL]: MANAGED_BY });

/**
 * The node labels every node of the pool has alike, among POOL_LABEL_KEYS, computed from the
 * inventories as device-discovery labels Kubernetes Nodes; `{}` for a pool without nodes.
 */
export function poolNodeLabels(nodes: readonly NodeInventory[]): Record<string, string> {
  if (nodes.length === 0) return {};
  const all = nodes.map((n) => computeNodeLabels(n));
  const out: Record<string, string> = {};
  for (const key of POOL_LABEL_KEYS) {
    const value = all[0][key];
    if (value !== undefined && all.every((l) => l[key] === value)) out[key] = value;
  }
  return out;
}

/** The device plugin's whole-accelerator resource of the pool (`gpufleet.io/nvidia-gpu`), undefined for a CPU-only pool. */
export function acceleratorResourceOf(pool: Pick<KueuePool, 'acceleratorVendor' | 'acceleratorProduct'>): string | undefined {
  if (pool.acceleratorVendor === AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED || pool.acceleratorProduct === '') return undefined;
  try {
    return resourceName(vendorName(pool.acceleratorVendor), 'whole');
  } catch {
    return undefined;
  }
}

export function resourceFlavorOf(pool: KueuePool): KueueObject {
  return {
    apiVersion: KUEUE_API_VERSION,
    kind: 'ResourceFlavor',
    metadata: { name: pool.name, labels: managed() },
    spec: { nodeLabels: poolNodeLabels(pool.nodes) },
  };
}

const KUEUE_PREEMPTION: Partial<Record<PreemptionPolicy, string>> = {
  [PreemptionPolicy.PREEMPTION_POLICY_NEVER]: 'Never',
  [PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY]: 'LowerPriority',
  [PreemptionPolicy.PREEMPTION_POLICY_ANY]: 'Any',
};

/** Whole accelerators a number of credits buys. */
const accelerators = (credits: number): number => Math.floor(credits / CREDITS_PER_ACCELERATOR);

/**
 * A gpufleet ClusterQueue as a Kueue ClusterQueue of the same name: one resource group over its
 * pool's flavor covering `gpufleet.io/credits` (nominalQuota, borrowingLimit, lendingLimit as
 * gpufleet has them) and, for an accelerator pool, its whole-accelerator resource with the
 * accelerators those credits buy, and cpu and memory with the pool's totals (when its nodes are
 * known); the cohort as cohortName; every workload waits for the gpufleet-placement AdmissionCheck.
 */
export function clusterQueueOf(queue: ClusterQueue, pool: (Pick<KueuePool, 'acceleratorVendor' | 'acceleratorProduct'> & { nodes?: readonly NodeInventory[] }) | undefined): KueueObject {
  const credits: Record<string, unknown> = { name: CREDITS_RESOURCE, nominalQuota: String(queue.nominalQuota) };
  const hasCohort = queue.cohort !== '';
  if (hasCohort && queue.borrowingLimit !== undefined) credits.borrowingLimit = String(queue.borrowingLimit);
  if (hasCohort && queue.lendingLimit !== undefined) credits.lendingLimit = String(queue.lendingLimit);
  const resources = [credits];
  const covered = [CREDITS_RESOURCE];
  const accelerator = pool && acceleratorResourceOf(pool);
  if (accelerator) {
    covered.push(accelerator);
    const acc: Record<string, unknown> = { name: accelerator, nominalQuota: String(accelerators(queue.nominalQuota)) };
    if (hasCohort && queue.borrowingLimit !== undefined) acc.borrowingLimit = String(accelerators(queue.borrowingLimit));
    if (hasCohort && queue.lendingLimit !== undefined) acc.lendingLimit = String(accelerators(queue.lendingLimit));
    resources.push(acc);
  }
  // cpu and memory are covered with the pool's totals, so Workloads that ask for them (most do)
  // are admissible; the gpufleet-placement check decides whether they fit on a node.
  const nodes = pool?.nodes ?? [];
  if (nodes.length > 0) {
    covered.push('cpu', 'memory');
    const vcpu = nodes.reduce((n, i) => n + (i.cpu?.logicalCpus ?? 0), 0);
    const mib = nodes.reduce((n, i) => n + (i.memory?.totalMib ?? 0), 0);
    resources.push({ name: 'cpu', nominalQuota: String(vcpu) }, { name: 'memory', nominalQuota: `${mib}Mi` });
  }
  const spec: Record<string, unknown> = {
    namespaceSelector: {},
    queueingStrategy: queue.queueingStrategy === QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO ? 'StrictFIFO' : 'BestEffortFIFO',
    resourceGroups: [{ coveredResources: covered, flavors: [{ name: queue.pool, resources }] }],
    admissionChecksStrategy: { admissionChecks: [{ name: ADMISSION_CHECK }] },
    preemption: {
      withinClusterQueue: KUEUE_PREEMPTION[queue.withinClusterQueue] ?? 'Never',
      reclaimWithinCohort: KUEUE_PREEMPTION[queue.reclaimWithinCohort] ?? 'Never',
    },
  };
  if (hasCohort) spec.cohortName = queue.cohort;
  if (queue.fairSharingWeight > 0 && queue.fairSharingWeight !== 1) spec.fairSharing = { weight: String(queue.fairSharingWeight) };
  return { apiVersion: KUEUE_API_VERSION, kind: 'ClusterQueue', metadata: { name: queue.name, labels: managed() }, spec };
}

export function localQueueOf(queue: LocalQueue): KueueObject {
  return {
    apiVersion: KUEUE_API_VERSION,
    kind: 'LocalQueue',
    metadata: { name: queue.name, namespace: queue.namespace, labels: managed() },
    spec: { clusterQueue: queue.clusterQueue },
  };
}

export function admissionCheckOf(): KueueObject {
  return {
    apiVersion: KUEUE_API_VERSION,
    kind: 'AdmissionCheck',
    metadata: { name: ADMISSION_CHECK, labels: managed() },
    spec: { controllerName: ADMISSION_CHECK_CONTROLLER },
  };
}

/** The AdmissionCheck's status as its controller reports it: Active=True. */
export function admissionCheckStatus(now: Date, generation = 1): Record<string, unknown> {
  return {
    conditions: [{ type: 'Active', status: 'True', reason: 'Active', message: 'gpufleet answers this check from its placement engine', lastTransitionTime: now.toISOString(), observedGeneration: generation }],
  };
}

export interface KueueDesired {
  resourceFlavors: KueueObject[];
  clusterQueues: KueueObject[];
  localQueues: KueueObject[];
  admissionChecks: KueueObject[];
}

/** Everything the mirror keeps in Kubernetes for these pools and queues. A ClusterQueue whose pool is unknown keeps no accelerator resource. */
export function desiredKueueObjects(input: { pools: readonly KueuePool[]; clusterQueues: readonly ClusterQueue[]; localQueues: readonly LocalQueue[] }): KueueDesired {
  const pools = new Map(input.pools.map((p) => [p.name, p]));
  const byName = <T extends { metadata: { name: string; namespace?: string } }>(a: T, b: T): number => {
    const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
    const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  return {
    resourceFlavors: input.pools.map(resourceFlavorOf).sort(byName),
    clusterQueues: input.clusterQueues.map((q) => clusterQueueOf(q, pools.get(q.pool))).sort(byName),
    localQueues: input.localQueues.map(localQueueOf).sort(byName),
    admissionChecks: [admissionCheckOf()],
  };
}

/** `kind namespace/name` of an object, the key desired and observed are matched by. */
export function kueueKey(obj: Pick<KubernetesObject, 'kind' | 'metadata'>): string {
  return `${obj.kind} ${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/** Observed objects labelled managed-by gpufleet that nothing desired matches: the ones to delete. */
export function staleKueueObjects(desired: readonly KubernetesObject[], observed: readonly KubernetesObject[]): KubernetesObject[] {
  const want = new Set(desired.map(kueueKey));
  return observed.filter((o) => o.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && !o.metadata?.deletionTimestamp && !want.has(kueueKey(o)));
}

// ---------------------------------------------------------------- the admission check

/** A Kubernetes quantity as a number ("500m" → 0.5, "2Gi" → 2147483648); NaN when it is not one. */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  if (typeof q === 'number') return q;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(q.trim());
  if (!m) return NaN;
  const mult: Record<string, number> = {
    '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
    Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
  };
  return Number(m[1]) * mult[m[2] ?? ''];
}

export interface KueueWorkload {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
  spec?: {
    queueName?: string;
    podSets?: Array<{
      name?: string;
      count?: number;
      template?: { spec?: { containers?: Array<{ resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> } }> } };
    }>;
  };
  status?: {
    admission?: { clusterQueue?: string };
    admissionChecks?: AdmissionCheckState[];
  };
}

export interface AdmissionCheckState {
  name: string;
  state: 'Pending' | 'Ready' | 'Retry' | 'Rejected';
  message?: string;
  lastTransitionTime?: string;
  podSetUpdates?: unknown[];
  [k: string]: unknown;
}

/** The gpufleet-placement entry of the Workload's status, when the Workload has one. */
export function placementCheckOf(workload: KueueWorkload): AdmissionCheckState | undefined {
  return workload.status?.admissionChecks?.find((c) => c.name === ADMISSION_CHECK);
}

/** True when the check waits for gpufleet's answer. */
export function awaitsPlacement(workload: KueueWorkload): boolean {
  return placementCheckOf(workload)?.state === 'Pending';
}

export type PodSetsResult = { ok: true; podSets: PodSet[] } | { ok: false; message: string };

/**
 * Kueue's podSets as gpufleet pod sets: `count` pods of one pod each, asking the sum over the
 * containers of `<vendor>-gpu` whole accelerators (gpufleet's device-plugin resource, or
 * `nvidia.com/gpu`), cpu (rounded up to whole vCPU) and memory (rounded up to MiB); the
 * requests, or the limits where a resource has no request.
 */
export function podSetsOfWorkload(workload: KueueWorkload, acceleratorResource: string | undefined): PodSetsResult {
  const sets = workload.spec?.podSets ?? [];
  if (sets.length === 0) return { ok: false, message: 'the Workload has no podSets' };
  const podSets: PodSet[] = [];
  for (const [i, ps] of sets.entries()) {
    const name = ps.name ?? `podset-${i}`;
    let gpus = 0;
    let cpu = 0;
    let memory = 0;
    for (const c of ps.template?.spec?.containers ?? []) {
      const req = { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
      for (const [resource, value] of Object.entries(req)) {
        const n = parseQuantity(value);
        if (Number.isNaN(n)) return { ok: false, message: `pod set "${name}": ${resource} "${value}" is not a quantity` };
        if (resource === 'cpu') cpu += n;
        else if (resource === 'memory') memory += n;
        else if (resource === acceleratorResource || resource === 'gpufleet.io/nvidia-gpu' || resource === 'nvidia.com/gpu') gpus += n;
      }
    }
    if (!Number.isInteger(gpus)) return { ok: false, message: `pod set "${name}": whole accelerators only, got ${gpus}` };
    podSets.push({
      name,
      count: Math.max(1, ps.count ?? 1),
      size: 1,
      resources: {
        accelerator: gpus > 0 ? { whole: gpus, sharedTokens: undefined, slice: undefined, partitionProfile: undefined } : undefined,
        vcpu: Math.ceil(cpu - 1e-9),
        memoryMib: Math.ceil(memory / 2 ** 20 - 1e-9),
      },
      topology: { requiredLevel: '', preferredLevel: '' },
    });
  }
  return { ok: true, podSets };
}

/** The ClusterQueue the Workload is reserved in (Kueue evaluates checks after reserving quota), else the one its LocalQueue leads to. */
export function clusterQueueOfWorkload(workload: KueueWorkload, localQueueTarget: (namespace: string, name: string) => string | undefined): string | undefined {
  const reserved = workload.status?.admission?.clusterQueue;
  if (reserved) return reserved;
  const queue = workload.spec?.queueName;
  return queue ? localQueueTarget(workload.metadata?.namespace ?? 'default', queue) : undefined;
}

/** "Ready: placed on gpu-0, gpu-1 (2 pods)" style message of placements. */
export function placedMessage(placements: readonly Pick<PodPlacement, 'node'>[]): string {
  const nodes = [...new Set(placements.map((p) => p.node))].sort();
  return `gpufleet can place the ${placements.length === 1 ? 'pod' : `${placements.length} pods`} on ${nodes.length === 1 ? 'node' : 'nodes'} ${nodes.join(', ')}`;
}

/**
 * The Workload's admissionChecks with the gpufleet-placement entry set to `state` and `message`
 * (lastTransitionTime moves only when the state does); undefined when nothing would change.
 */
export function withPlacementCheck(workload: KueueWorkload, state: AdmissionCheckState['state'], message: string, now: Date): AdmissionCheckState[] | undefined {
  const checks = workload.status?.admissionChecks ?? [];
  const current = checks.find((c) => c.name === ADMISSION_CHECK);
  if (!current) return undefined;
  const clipped = message.length > 32_768 ? `${message.slice(0, 32_765)}...` : message;
  if (current.state === state && current.message === clipped) return undefined;
  const next: AdmissionCheckState = { ...current, state, message: clipped, lastTransitionTime: current.state === state && current.lastTransitionTime ? current.lastTransitionTime : now.toISOString() };
  return checks.map((c) => (c.name === ADMISSION_CHECK ? next : c));
}
