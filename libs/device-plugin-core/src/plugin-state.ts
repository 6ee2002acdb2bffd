/**
 * The device plugins of one node as data: resources from the inventory, device health, the
 * kubelet's view of each resource's devices, preferred allocations and Allocate answers. The
 * agent serves it over gRPC; this class knows nothing of sockets.
 */
import { NodeInventory } from '@gpufleet/contracts';
import { DEVICE_HEALTHY, DEVICE_UNHEALTHY, type deviceplugin } from '@gpufleet/contracts/kubelet';
import { allocateContainer, type AllocateOptions } from './allocate';
import { DevicePluginError } from './errors';
import { DEFAULT_HEALTH, DeviceHealth, type HealthObservation, type HealthOptions } from './health';
import { preferredAllocation, Topology, type PreferredAllocationRequest } from './preferred';
import { DEFAULT_SETTINGS, resourcesOf, type DevicePluginSettings, type PluginCard, type PluginResource } from './resources';

export interface DevicePluginStateOptions {
  readonly settings?: DevicePluginSettings;
  readonly health?: HealthOptions;
  readonly allocate?: AllocateOptions;
}

export class DevicePluginState {
  private readonly settings: DevicePluginSettings;
  private readonly health: DeviceHealth;
  private readonly allocateOptions: AllocateOptions;
  private byName = new Map<string, PluginResource>();
  private topology = new Topology([]);
  /** Cards known to the plugin, by UUID; a card missing from an inventory stays (and is observed bad). */
  private cards = new Map<string, PluginCard>();
  private lastInventory: NodeInventory | undefined;

  constructor(options: DevicePluginStateOptions = {}) {
    this.settings = options.settings ?? DEFAULT_SETTINGS;
    this.health = new DeviceHealth(options.health ?? DEFAULT_HEALTH);
    this.allocateOptions = options.allocate ?? {};
  }

  /**
   * Takes a new inventory. Every known card it lists counts as one good observation, every known
   * card it lacks, or whose vendor provider failed this pass, as one bad observation; a card that stays
   * missing turns Unhealthy through the hysteresis, not at once. Returns the names of resources
   * whose device list the kubelet must be sent again (health or devices changed).
   */
  update(inventory: NodeInventory): Set<string> {
    const before = this.snapshot();
    const present = new Set(inventory.accelerators.map((a) => a.uuid || a.id));
    // A vendor provider whose pass failed (its tool crashed, timed out) is a failed probe of its cards.
    const failed = new Map(inventory.providers.filter((p) => !p.ok).map((p) => [p.provider, p.error]));
    for (const [uuid, card] of this.cards) {
      const error = failed.get(card.vendor);
      if (error !== undefined) this.health.observe(uuid, { ok: false, reason: `${card.vendor} detection failed: ${error}` });
      else this.health.observe(uuid, present.has(uuid) ? { ok: true } : { ok: false, reason: 'missing from the detection pass' });
    }
    // Keep the devices of cards that went missing, so the kubelet sees them Unhealthy rather than gone.
    const missing = this.lastInventory?.accelerators.filter((a) => !present.has(a.uuid || a.id) && this.cards.has(a.uuid || a.id)) ?? [];
    const merged: NodeInventory = { ...inventory, accelerators: [...inventory.accelerators, ...missing] };
    this.lastInventory = merged;
    const resources = resourcesOf(merged, this.settings);
    this.byName = new Map(resources.map((r) => [r.name, r]));
    this.cards = new Map(resources.flatMap((r) => r.devices.map((d) => [d.card.uuid, d.card] as const)));
    this.topology = new Topology(merged.links);
    return this.changedSince(before);
  }

  /** One health observation of a card (by UUID); returns the resources whose device list changed. */
  observe(cardUuid: string, observation: HealthObservation): Set<string> {
    if (!this.cards.has(cardUuid)) return new Set();
    if (!this.health.observe(cardUuid, observation)) return new Set();
    return new Set(this.resources().filter((r) => r.devices.some((d) => d.card.uuid === cardUuid)).map((r) => r.name));
  }

  resources(): PluginResource[] {
    return [...this.byName.values()];
  }

  resource(name: string): PluginResource {
    const resource = this.byName.get(name);
    if (!resource) throw new DevicePluginError('UNKNOWN_RESOURCE', `this node offers no ${name}; it offers ${[...this.byName.keys()].join(', ') || 'no device resources'}`);
    return resource;
  }

  isHealthy(cardUuid: string): boolean {
    return this.health.isHealthy(cardUuid);
  }

  /** The ListAndWatch device list of a resource. */
  devices(name: string): deviceplugin.Device[] {
    return this.resource(name).devices.map((d) => ({
      ID: d.id,
      health: this.health.isHealthy(d.card.uuid) ? DEVICE_HEALTHY : DEVICE_UNHEALTHY,
      topology: d.card.numaNode === undefined ? undefined : { nodes: [{ ID: d.card.numaNode }] },
    }));
  }

  preferred(name: string, request: PreferredAllocationRequest): string[] {
    return preferredAllocation(this.resource(name), this.topology, request);
  }

  allocate(name: string, deviceIds: readonly string[]): deviceplugin.ContainerAllocateResponse {
    return allocateContainer(this.resource(name), deviceIds, this.allocateOptions);
  }

  private snapshot(): Map<string, string> {
    return new Map(this.resources().map((r) => [r.name, JSON.stringify(this.devices(r.name))]));
  }

  private changedSince(before: Map<string, string>): Set<string> {
    const after = this.snapshot();
    const changed = new Set<string>();
    for (const [name, list] of after) if (before.get(name) !== list) changed.add(name);
    for (const name of before.keys()) if (!after.has(name)) changed.add(name);
    return changed;
  }
}
