/**
 * GetPreferredAllocation: which of the available device ids a container should get.
 *
 * - whole cards: the set with the strongest links between its members (NVLink first, by the
 *   number of bonded links, then xGMI/HCCS, then PCIe distance), from the node's topology
 *   (`nvidia-smi topo -m`, as the inventory holds it); exact over every candidate set when there
 *   are few, greedy from the best seed otherwise;
 * - shared and slice units: all on one card (a container's share of one accelerator), the card
 *   that fits them most tightly, so that whole cards stay free;
 * - MIG partitions: in device order.
 *
 * `must_include_deviceIDs` are always in the answer, and the answer has `allocation_size` ids.
 */
import { DeviceLink, LinkType } from '@gpufleet/contracts';
import { DevicePluginError } from './errors';
import type { PluginDevice, PluginResource } from './resources';

export interface PreferredAllocationRequest {
  readonly availableDeviceIDs: readonly string[];
  readonly mustIncludeDeviceIDs: readonly string[];
  readonly allocationSize: number;
}

/** Pairwise link strength; larger is nearer. */
export function linkWeight(link: DeviceLink | undefined): number {
  if (!link) return 0;
  switch (link.type) {
    case LinkType.LINK_TYPE_NVLINK:
      return 100 + (link.nvlinks ?? 1) * 10;
    case LinkType.LINK_TYPE_XGMI:
    case LinkType.LINK_TYPE_HCCS:
      return 100;
    case LinkType.LINK_TYPE_PIX:
      return 50;
    case LinkType.LINK_TYPE_PXB:
      return 40;
    case LinkType.LINK_TYPE_PHB:
      return 30;
    case LinkType.LINK_TYPE_NODE:
      return 20;
    case LinkType.LINK_TYPE_SYS:
      return 10;
    default:
      return 0;
  }
}

/** Link weights between accelerator ids, from the inventory's links. */
export class Topology {
  private readonly weights = new Map<string, number>();

  constructor(links: readonly DeviceLink[]) {
    for (const link of links) {
      const w = linkWeight(link);
      this.weights.set(`${link.a}\0${link.b}`, w);
      this.weights.set(`${link.b}\0${link.a}`, w);
    }
  }

  weight(a: string, b: string): number {
    return this.weights.get(`${a}\0${b}`) ?? 0;
  }
}

/** Candidate sets scored exactly up to this many; beyond, greedy growth from each seed. */
const EXACT_LIMIT = 20_000;

function binomial(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) {
    r = (r * (n - k + i)) / i;
    if (r > EXACT_LIMIT) return r;
  }
  return r;
}

export function preferredAllocation(resource: PluginResource, topology: Topology, request: PreferredAllocationRequest): string[] {
  const byId = new Map(resource.devices.map((d) => [d.id, d]));
  const lookup = (id: string): PluginDevice => {
    const device = byId.get(id);
    if (!device) throw new DevicePluginError('UNKNOWN_DEVICE', `${resource.name} has no device "${id}"`);
    return device;
  };
  const size = request.allocationSize;
  const must = [...new Set(request.mustIncludeDeviceIDs)].map(lookup);
  const mustIds = new Set(must.map((d) => d.id));
  const available = [...new Set(request.availableDeviceIDs)].map(lookup).filter((d) => !mustIds.has(d.id));
  if (!Number.isInteger(size) || size < must.length || size > must.length + available.length) {
    throw new DevicePluginError(
      'INVALID_ARGUMENT',
      `allocation_size ${size} cannot be met with ${must.length} must-include and ${available.length} other available devices of ${resource.name}`,
    );
  }
  const need = size - must.length;
  if (need === 0) return must.map((d) => d.id);
  const order = (a: PluginDevice, b: PluginDevice) => a.card.index - b.card.index || (a.unit ?? 0) - (b.unit ?? 0) || a.id.localeCompare(b.id);
  available.sort(order);
  let chosen: PluginDevice[];
  switch (resource.mode) {
    case 'whole':
      chosen = nearestCards(must, available, need, topology);
      break;
    case 'shared':
    case 'slice':
      chosen = oneCard(must, available, need);
      break;
    case 'mig':
      chosen = available.slice(0, need);
      break;
  }
  return [...must, ...chosen].map((d) => d.id);
}

function setScore(set: readonly PluginDevice[], topology: Topology): number {
  let score = 0;
  for (let i = 0; i < set.length; i++) {
    for (let j = i + 1; j < set.length; j++) score += topology.weight(set[i].card.acceleratorId, set[j].card.acceleratorId);
    // Same NUMA node as the others: a small bonus that only breaks ties between equal links.
    for (let j = i + 1; j < set.length; j++) if (set[i].card.numaNode !== undefined && set[i].card.numaNode === set[j].card.numaNode) score += 1;
  }
  return score;
}

function nearestCards(must: readonly PluginDevice[], available: readonly PluginDevice[], need: number, topology: Topology): PluginDevice[] {
  if (binomial(available.length, need) <= EXACT_LIMIT) {
    let best: PluginDevice[] = [];
    let bestScore = -1;
    const pick: PluginDevice[] = [];
    const visit = (from: number): void => {
      if (pick.length === need) {
        const score = setScore([...must, ...pick], topology);
        if (score > bestScore) {
          bestScore = score;
          best = [...pick];
        }
        return;
      }
      for (let i = from; i <= available.length - (need - pick.length); i++) {
        pick.push(available[i]);
        visit(i + 1);
        pick.pop();
      }
    };
    visit(0);
    return best;
  }
  // Greedy: from each seed (or from the must-include set), add the device nearest to the set.
  let best: PluginDevice[] = [];
  let bestScore = -1;
  const seeds = must.length > 0 ? [undefined] : available;
  for (const seed of seeds) {
    const set = seed ? [seed] : [];
    const rest = available.filter((d) => d !== seed);
    while (set.length < need) {
      let pickAt = 0;
      let pickScore = -1;
      rest.forEach((d, i) => {
        const score = [...must, ...set].reduce((s, m) => s + topology.weight(m.card.acceleratorId, d.card.acceleratorId), 0);
        if (score > pickScore) {
          pickScore = score;
          pickAt = i;
        }
      });
      set.push(...rest.splice(pickAt, 1));
    }
    const score = setScore([...must, ...set], topology);
    if (score > bestScore) {
      bestScore = score;
      best = set;
    }
  }
  return best;
}

function oneCard(must: readonly PluginDevice[], available: readonly PluginDevice[], need: number): PluginDevice[] {
  const byCard = new Map<string, PluginDevice[]>();
  for (const d of available) {
    const list = byCard.get(d.card.acceleratorId) ?? [];
    list.push(d);
    byCard.set(d.card.acceleratorId, list);
  }
  const mustCard = must[0]?.card.acceleratorId;
  if (mustCard !== undefined) {
    const same = byCard.get(mustCard) ?? [];
    if (same.length >= need) return same.slice(0, need);
  }
  // Tightest fit: the card with the fewest free units that still holds all of them.
  const fitting = [...byCard.values()].filter((units) => units.length >= need).sort((a, b) => a.length - b.length);
  if (fitting.length > 0) return fitting[0].slice(0, need);
  // No card holds them all: Allocate will refuse units across cards, but the kubelet wants an answer of the size asked.
  return [...byCard.values()].sort((a, b) => b.length - a.length).flat().slice(0, need);
}
