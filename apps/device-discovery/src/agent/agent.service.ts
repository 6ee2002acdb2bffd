import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, Events, NodeInventory } from '@gpufleet/contracts';
import { InventoryAssembler, loadFleetFile } from '@gpufleet/device-inventory';
import { EventBus, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { AGENT_CONFIG, AgentConfig } from '../config';
import { ProviderSet, buildProviders, hasHostInfo } from './providers';

export const AGENT_VERSION = '0.1.0';

/**
 * The node agent's loop: detect with every provider, assemble the inventory, publish it and
 * write the node record when it changed, and beat every HEARTBEAT_INTERVAL_S.
 */
@Injectable()
export class AgentService implements OnModuleInit, OnApplicationShutdown {
  private assembler!: InventoryAssembler;
  private providers!: ProviderSet;
  private nodes!: KvStore<NodeInventory>;
  private current?: NodeInventory;
  private timers: NodeJS.Timeout[] = [];
  private passRunning = false;
  private stopped = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly bus: EventBus,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  get inventory(): NodeInventory | undefined {
    return this.current;
  }

  async onModuleInit(): Promise<void> {
    const { config } = this;
    this.providers = await buildProviders(config, loadFleetFile);
    this.nodes = await KvStore.open(this.nc.jetstream(), Buckets.nodes(config.GPUFLEET_CLUSTER), NodeInventory);
    // Generations keep increasing across agent restarts, so readers can order inventories.
    const previous = await this.nodes.get(config.NODE_NAME).catch(() => undefined);
    const labels = Object.fromEntries(config.NODE_LABELS.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    this.assembler = new InventoryAssembler({
      nodeName: config.NODE_NAME,
      cluster: config.GPUFLEET_CLUSTER,
      agentVersion: AGENT_VERSION,
      topology: this.providers.simulated?.topology,
      nodeLabels: { ...this.providers.simulated?.nodeLabels, ...labels },
      generation: previous?.value.generation ?? 0,
    });
    const names = this.providers.providers.map((p) => p.name);
    this.logger.info({ node: config.NODE_NAME, providers: names }, `providers: ${names.join(', ') || 'none'}`);
    await this.detectionPass();
    this.heartbeat();
    this.timers.push(setInterval(() => void this.detectionPass(), config.DETECT_INTERVAL_S * 1000));
    this.timers.push(setInterval(() => this.heartbeat(), config.HEARTBEAT_INTERVAL_S * 1000));
    void this.republishOnReconnect();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
  }

  /** One pass over every provider; publishes only when the content changed. */
  async detectionPass(): Promise<void> {
    if (this.passRunning || this.stopped) return;
    this.passRunning = true;
    try {
      for (const provider of this.providers.providers) {
        try {
          const ok = await provider.detect();
          const host = hasHostInfo(provider) ? await provider.readHostInfo() : undefined;
          this.assembler.record(provider.name, { ok, host });
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          this.assembler.record(provider.name, { error });
          this.logger.warn(
            { node: this.config.NODE_NAME, provider: provider.name, err: error },
            `${provider.name} detection failed, keeping the last good result: ${error.message}`,
          );
          this.bus.publish(Events.detectionFailed, {
            nodeName: this.config.NODE_NAME,
            cluster: this.config.GPUFLEET_CLUSTER,
            provider: provider.name,
            error: error.message,
            time: new Date(),
          });
        }
      }
      const { inventory, changed } = this.assembler.assemble();
      this.current = inventory;
      if (changed) await this.publishInventory('changed');
    } finally {
      this.passRunning = false;
    }
  }

  private async publishInventory(why: string): Promise<void> {
    const inv = this.current;
    if (!inv) return;
    this.bus.publish(Events.inventory, inv);
    try {
      await this.nodes.put(inv.nodeName, inv);
      this.logger.info(
        { node: inv.nodeName, generation: inv.generation, reason: why, accelerators: inv.accelerators.length, nics: inv.nics.length },
        `inventory generation ${inv.generation} (${why}): ${inv.accelerators.length} accelerators, ${inv.nics.length} NICs`,
      );
    } catch (err) {
      // NATS is away; the reconnect handler writes the record again.
      this.logger.warn({ node: inv.nodeName, err }, `could not write node record: ${(err as Error).message}`);
    }
  }

  private heartbeat(): void {
    if (this.stopped) return;
    this.bus.publish(Events.heartbeat, {
      nodeName: this.config.NODE_NAME,
      cluster: this.config.GPUFLEET_CLUSTER,
      generation: this.current?.generation ?? 0,
      sentAt: new Date(),
    });
  }

  /** After NATS comes back, write the record and beat at once: the store may have lost it. */
  private async republishOnReconnect(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (this.stopped) return;
      if (s.type === 'reconnect') {
        this.heartbeat();
        await this.publishInventory('reconnected');
      }
    }
  }
}
