/**
 * The kubelet's word on devices (its pod-resources API, as the node agent reports it in a
 * `KubeletDevices` record) against the scheduler's devices ledger. On the kubernetes runtime the
 * kubelet, not the ledger, decides which device ids a container gets: when they differ, the
 * ledger is corrected to what the kubelet assigned, and devices the kubelet cannot hand out
 * (unhealthy, not registered) are kept out of placement.
 */
import type { Accelerator, KubeletDevices, NodeInventory, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { normalizeMigProfileName } from '@gpufleet/device-inventory/catalog';
import { deviceResourceOf, vendorOfPlacement } from './devices';

/** The devices the kubelet gave one Pod (its containers together) of one resource. */
export interface KubeletPodDevices {
  readonly resource: string;
  readonly deviceIds: readonly string[];
}

/** `<namespace>/<name>` of a Kubernetes Pod: the key of `kubeletPodDevicesOf`. */
export function kubePodKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Per Pod (`kubePodKey`), the devices of each gpufleet resource its containers hold. */
export function kubeletPodDevicesOf(report: KubeletDevices): Map<string, KubeletPodDevices[]> {
  const byPod = new Map<string, Map<string, string[]>>();
  for (const c of report.assigned) {
    const key = kubePodKey(c.namespace, c.pod);
    let resources = byPod.get(key);
    if (!resources) byPod.set(key, (resources = new Map()));
    const ids = resources.get(c.resource) ?? [];
    ids.push(...c.deviceIds);
    resources.set(c.resource, ids);
  }
  return new Map([...byPod].map(([key, resources]) => [key, [...resources].map(([resource, deviceIds]) => ({ resource, deviceIds: [...new Set(deviceIds)] }))]));
}

/** The card UUID of a device id: a card's own, or the card of a shared or slice unit (`<uuid>::<k>`). */
export function cardUuidOfDeviceId(id: string): string {
  const at = id.lastIndexOf('::');
  return at < 0 ? id : id.slice(0, at);
}

function uuidOf(a: Accelerator): string {
  return a.uuid || a.id;
}

export type PlacementFromKubelet = { readonly ok: true; readonly placement: PodPlacement; readonly changed: boolean } | { readonly ok: false; readonly message: string };

/**
 * The pod's placement with the devices the kubelet assigned in place of the ledger's: the same
 * object (`changed: false`) when they agree. Refused (`ok: false`, with why) when the kubelet's
 * devices cannot be written in the ledger's terms: another resource than the pod asked for, an id
 * the inventory does not know, another count, shared units spread over several cards.
 */
export function placementFromKubelet(placement: PodPlacement, devices: KubeletPodDevices, inventory: NodeInventory): PlacementFromKubelet {
  const wanted = deviceResourceOf(placement, vendorOfPlacement(placement, inventory));
  if (!wanted) return { ok: true, placement, changed: false };
  if (devices.resource !== wanted.name) {
    return { ok: false, message: `the kubelet assigned ${devices.resource}, but the pod asks for ${wanted.name}` };
  }
  const ids = devices.deviceIds;
  if (placement.partition) {
    if (ids.length !== 1) return { ok: false, message: `the kubelet assigned ${ids.length} devices of ${devices.resource}, expected 1 MIG device` };
    for (const a of inventory.accelerators) {
      const mig = a.migDevices.find((m) => m.uuid === ids[0]);
      if (!mig) continue;
      if (mig.placementStart === undefined) return { ok: false, message: `MIG device ${ids[0]} on ${a.id} has no reported placement start` };
      const partition = { acceleratorId: a.id, profile: normalizeMigProfileName(mig.profile), start: mig.placementStart };
      const same = placement.partition.acceleratorId === partition.acceleratorId && placement.partition.start === partition.start && normalizeMigProfileName(placement.partition.profile) === partition.profile;
      return same ? { ok: true, placement, changed: false } : { ok: true, placement: { ...placement, partition }, changed: true };
    }
    return { ok: false, message: `MIG device ${ids[0]} is not in the inventory of node ${inventory.nodeName}` };
  }
  const byUuid = new Map(inventory.accelerators.map((a) => [uuidOf(a), a]));
  const cards: Accelerator[] = [];
  for (const id of ids) {
    const card = byUuid.get(cardUuidOfDeviceId(id));
    if (!card) return { ok: false, message: `device ${id} of ${devices.resource} is not in the inventory of node ${inventory.nodeName}` };
    if (!cards.includes(card)) cards.push(card);
  }
  cards.sort((a, b) => a.index - b.index || a.id.localeCompare(b.id));
  const whole = placement.sharedTokens === 0 && placement.sliceMemoryMib === 0 && placement.sliceCoresPercent === 0;
  if (whole && ids.length !== wanted.quantity) {
    return { ok: false, message: `the kubelet assigned ${ids.length} devices of ${devices.resource}, the ledger holds ${wanted.quantity}` };
  }
  if (!whole && cards.length !== 1) {
    return { ok: false, message: `the kubelet spread the pod's ${devices.resource} units over ${cards.length} cards (${cards.map((c) => c.id).join(', ')}); the ledger holds them on one accelerator` };
  }
  const acceleratorIds = cards.map((c) => c.id);
  const same = acceleratorIds.length === placement.acceleratorIds.length && acceleratorIds.every((id) => placement.acceleratorIds.includes(id));
  return same ? { ok: true, placement, changed: false } : { ok: true, placement: { ...placement, acceleratorIds }, changed: true };
}

/** One pod whose ledger entry says other devices than the kubelet assigned. */
export interface LedgerCorrection {
  /** The ledger entry's workload, `<namespace>/<name>`. */
  readonly workload: string;
  /** The Kubernetes Pod, `<namespace>/<name>`. */
  readonly kubePod: string;
  readonly resource: string;
  readonly before: PodPlacement;
  readonly after: PodPlacement;
}

/** A pod whose kubelet devices cannot be taken into the ledger; it is left as it is. */
export interface LedgerCorrectionProblem {
  readonly workload: string;
  readonly kubePod: string;
  readonly message: string;
}

export interface LedgerCheck {
  readonly corrections: LedgerCorrection[];
  readonly problems: LedgerCorrectionProblem[];
}

export interface LedgerCheckInput {
  readonly ledger: NodeLedger;
  readonly inventory: NodeInventory;
  readonly report: KubeletDevices;
  /** The Kubernetes Pod (`kubePodKey`) that runs a gpufleet pod id (podId of libs/contracts); undefined when there is none. */
  readonly kubePodOf: (podId: string) => string | undefined;
}

/**
 * Every ledger entry of the node whose Pod the kubelet has given devices, compared with them.
 * Entries without a Pod, or whose Pod the kubelet lists no devices for (not admitted yet, gone),
 * are left alone: the ledger's devices stay reserved for them.
 */
export function ledgerCorrectionsOf(input: LedgerCheckInput): LedgerCheck {
  const kubelet = kubeletPodDevicesOf(input.report);
  const corrections: LedgerCorrection[] = [];
  const problems: LedgerCorrectionProblem[] = [];
  for (const entry of input.ledger.entries) {
    const pod = entry.pod;
    if (!pod) continue;
    const kubePod = input.kubePodOf(`${entry.workload}/${pod.podSet}/${pod.replica}/${pod.pod}`);
    if (!kubePod) continue;
    const assigned = kubelet.get(kubePod);
    if (!assigned || assigned.length === 0) continue;
    if (assigned.length > 1) {
      problems.push({ workload: entry.workload, kubePod, message: `the kubelet assigned several gpufleet resources (${assigned.map((a) => a.resource).join(', ')}); a pod holds one` });
      continue;
    }
    const result = placementFromKubelet(pod, assigned[0], input.inventory);
    if (!result.ok) problems.push({ workload: entry.workload, kubePod, message: result.message });
    else if (result.changed) corrections.push({ workload: entry.workload, kubePod, resource: assigned[0].resource, before: pod, after: result.placement });
  }
  return { corrections, problems };
}

/**
 * Accelerators of the inventory the kubelet cannot allocate: none of their device ids (the card's
 * UUID, its shared or slice units, its MIG devices) is in any allocatable list of the report. A
 * report without any gpufleet resource (the plugin not registered yet) withholds nothing: the
 * kubelet then refuses every such Pod itself, which the pod status shows.
 */
export function withheldAccelerators(inventory: NodeInventory, report: KubeletDevices | undefined): Set<string> {
  const withheld = new Set<string>();
  if (!report || report.allocatable.length === 0) return withheld;
  const cards = new Set<string>();
  const ids = new Set<string>();
  for (const r of report.allocatable) {
    for (const id of r.deviceIds) {
      ids.add(id);
      cards.add(cardUuidOfDeviceId(id));
    }
  }
  for (const a of inventory.accelerators) {
    const allocatable = cards.has(uuidOf(a)) || a.migDevices.some((m) => m.uuid !== '' && ids.has(m.uuid));
    if (!allocatable) withheld.add(a.id);
  }
  return withheld;
}
