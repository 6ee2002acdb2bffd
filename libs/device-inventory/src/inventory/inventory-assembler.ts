import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { NodeInventory, ProviderStatus, TopologyPlacement } from '@gpufleet/contracts';
import type { HostInfo } from '../host/host-info';
import { computeNodeLabels } from '../labels/node-labels';
import type { DetectionResult } from '../provider';
import { contentFingerprint } from './content-fingerprint';

/** How one provider pass ended: what it found (and, for host-like providers, the host facts), or why it failed. */
export type ProviderOutcome = { ok: DetectionResult; host?: HostInfo } | { error: Error };

export interface InventoryAssemblerOptions {
  nodeName: string;
  cluster: string;
  agentVersion: string;
  topology?: TopologyPlacement;
  /** The node's own labels (configuration); they win over computed labels of the same key. */
  nodeLabels?: Record<string, string>;
  /** Last published generation (e.g. read back after a restart) so generations keep increasing. */
  generation?: number;
  clock?: () => Date;
}

export interface AssembledInventory {
  /** Its lists and labels are the caller's; the devices, links and host facts in them are shared with the assembler: read-only. */
  inventory: NodeInventory;
  /** True when the content differs from the previous assembly: the agent should publish. */
  changed: boolean;
}

interface ProviderState {
  result?: DetectionResult;
  host?: HostInfo;
  error?: string;
  lastSuccess?: Date;
  lastAttempt: Date;
}

/**
 * A copy of every object of a result, sharing the strings (which cannot change): what the
 * provider does with its result afterwards does not reach the assembler, and an agent
 * presenting 1,000 nodes does not hold each node's device names and UUIDs twice.
 */
function copyResult(result: DetectionResult): DetectionResult {
  const copy: DetectionResult = { ...result };
  if (result.accelerators) copy.accelerators = result.accelerators.map((a) => ({ ...a, migDevices: a.migDevices.map((m) => ({ ...m })) }));
  if (result.nics) copy.nics = result.nics.map((n) => ({ ...n }));
  if (result.links) copy.links = result.links.map((l) => ({ ...l }));
  return copy;
}

/** Fresh lists and labels over the shared devices, so a caller's changes to them stay its own. */
function handOut(inventory: NodeInventory): NodeInventory {
  const { accelerators, nics, links, labels } = inventory;
  return { ...inventory, accelerators: [...accelerators], nics: [...nics], links: [...links], labels: { ...labels } };
}

/**
 * The agent's memory of every provider's last pass, merged into one NodeInventory.
 * A failed pass keeps that provider's last good devices (and says why in its status);
 * a successful pass replaces them, so finding nothing removes them.
 */
export class InventoryAssembler {
  private readonly providers = new Map<string, ProviderState>();
  private readonly clock: () => Date;
  private topology: TopologyPlacement | undefined;
  private nodeLabels: Record<string, string>;
  private generationValue: number;
  /** SHA-256 of the last content fingerprint, not its text: an agent presenting 1,000 nodes keeps one per node. */
  private lastFingerprint: string | undefined;
  /** The last inventory built in full, and the recorded objects (and errors) it was built from. */
  private last: { inputs: unknown[]; inventory: NodeInventory } | undefined;

  constructor(private readonly options: InventoryAssemblerOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.topology = options.topology ? { ...options.topology } : undefined;
    this.nodeLabels = { ...options.nodeLabels };
    this.generationValue = options.generation ?? 0;
  }

  get generation(): number {
    return this.generationValue;
  }

  record(provider: string, outcome: ProviderOutcome): void {
    const now = this.clock();
    const previous = this.providers.get(provider);
    if ('error' in outcome) {
      this.providers.set(provider, { ...previous, error: outcome.error.message || String(outcome.error), lastAttempt: now });
      return;
    }
    // A pass that found what the last one did keeps the objects recorded then: an agent
    // presenting 1,000 nodes then replaces (and collects) nothing on most passes.
    const same = <T>(kept: T | undefined, found: T | undefined): kept is T => kept !== undefined && isDeepStrictEqual(kept, found);
    const { ok, host } = outcome;
    this.providers.set(provider, {
      result: same(previous?.result, ok) ? previous.result : copyResult(ok),
      host: same(previous?.host, host) ? previous.host : host && { ...host, cpu: { ...host.cpu }, memory: { ...host.memory } },
      lastSuccess: now,
      lastAttempt: now,
    });
  }

  setTopology(topology: TopologyPlacement | undefined): void {
    this.topology = topology ? { ...topology } : undefined;
    this.last = undefined;
  }

  setNodeLabels(labels: Record<string, string>): void {
    this.nodeLabels = { ...labels };
    this.last = undefined;
  }

  /** Builds the inventory from everything recorded; bumps the generation only if the content changed. */
  assemble(): AssembledInventory {
    const names = [...this.providers.keys()].sort();
    const states = names.map((name) => ({ name, state: this.providers.get(name)! }));
    const providers = states.map(({ name, state }): ProviderStatus => ({
      provider: name,
      ok: state.error === undefined,
      error: state.error ?? '',
      lastSuccess: state.lastSuccess,
      lastAttempt: state.lastAttempt,
    }));
    const observedAt = this.clock();
    const inputs = states.flatMap(({ name, state }) => [name, state.result, state.host, state.error]);
    const last = this.last;
    if (last && inputs.length === last.inputs.length && inputs.every((input, i) => input === last.inputs[i])) {
      // The very objects of the last assembly (record keeps them when a pass found the same), so
      // the same content: no labels or fingerprint to compute on the passes where nothing moved.
      return { inventory: handOut({ ...last.inventory, providers, observedAt }), changed: false };
    }

    const results = states.map((s) => s.state.result).filter((r): r is DetectionResult => r !== undefined);
    // Providers report disjoint things; the first (by name) that knows a version or the host wins.
    const host = states.map((s) => s.state.host).find((h): h is HostInfo => h !== undefined);
    const driverVersion = results.find((r) => r.driverVersion)?.driverVersion;
    const runtimeVersion = results.find((r) => r.runtimeVersion)?.runtimeVersion;

    const accelerators = results.flatMap((r) => r.accelerators ?? []);
    const nics = results.flatMap((r) => r.nics ?? []);
    // A link is kept only when both ends were reported: `nvidia-smi topo -m` names NICs that
    // the rdma provider may not report (disabled, or its pass failed before any success).
    const known = new Set([...accelerators.map((a) => a.id), ...nics.map((n) => n.name)]);
    const links = results.flatMap((r) => r.links ?? []).filter((l) => known.has(l.a) && known.has(l.b));

    const inventory: NodeInventory = {
      nodeName: this.options.nodeName,
      cluster: this.options.cluster,
      os: host?.os ?? '',
      kernel: host?.kernel ?? '',
      cpu: host?.cpu,
      memory: host?.memory,
      localStorageGib: host?.localStorageGib ?? 0,
      accelerators,
      nics,
      links,
      topology: this.topology,
      labels: {},
      ...(driverVersion !== undefined ? { driverVersion } : {}),
      ...(runtimeVersion !== undefined ? { runtimeVersion } : {}),
      providers,
      generation: 0,
      observedAt,
      agentVersion: this.options.agentVersion,
    };
    const labels = { ...computeNodeLabels(inventory), ...this.nodeLabels };
    inventory.labels = Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));

    const fingerprint = createHash('sha256').update(contentFingerprint(inventory)).digest('base64');
    const changed = fingerprint !== this.lastFingerprint;
    if (changed) {
      this.generationValue += 1;
      this.lastFingerprint = fingerprint;
    }
    inventory.generation = this.generationValue;
    this.last = { inputs, inventory };
    return { inventory: handOut(inventory), changed };
  }
}
