import { Events, type NodeInventory } from '@gpufleet/contracts';
import type { DeviceProvider, InventoryAssembler } from '@gpufleet/device-inventory';
import type { EventBus, KvStore } from '@gpufleet/messaging';
import type { Logger } from '@gpufleet/observability';
import { hasHostInfo } from './providers';

/** What the nodes of one agent process share: one nodes bucket, one event bus, one logger. */
export interface NodeAgentContext {
  readonly cluster: string;
  readonly records: Pick<KvStore<NodeInventory>, 'put'>;
  readonly bus: Pick<EventBus, 'publish'>;
  readonly logger: Logger;
  /**
   * The process presents many nodes: each node's routine lines (record written, record not
   * written) go at debug, and the agent logs one line for all of them instead.
   */
  readonly oneOfMany: boolean;
  /** Called after every detection pass with its inventory, changed or not (the device plugin's health feed). */
  readonly onPass?: (nodeName: string, inventory: NodeInventory) => void;
}

export interface NodeAgentIntervals {
  detectMs: number;
  heartbeatMs: number;
}

/**
 * One presented node's loop, free of NestJS: detect with every provider, assemble the
 * inventory, publish it and write the node record when it changed, and beat on a timer. Each
 * node keeps its own providers, inventory, generation and timers, so an agent running one per
 * fleet node looks to the scheduler like one agent per node.
 */
export class NodeAgent {
  private current?: NodeInventory;
  private readonly timers: NodeJS.Timeout[] = [];
  private passRunning = false;
  private stopped = false;
  private writeFailed = false;

  constructor(
    readonly nodeName: string,
    private readonly providers: readonly DeviceProvider[],
    private readonly assembler: InventoryAssembler,
    private readonly ctx: NodeAgentContext,
  ) {}

  /** The last assembled inventory; undefined until the first detection pass has finished. */
  get inventory(): NodeInventory | undefined {
    return this.current;
  }

  /** The last write of the node record failed: the bucket may hold an older inventory (or none). */
  get recordStale(): boolean {
    return this.writeFailed;
  }

  /**
   * The first detection pass (writing the record), a heartbeat, then the timers. The first
   * periodic pass and beat come `phase` (0 < phase ≤ 1) of their interval later, then one every
   * interval: phase 1 for a lone node; phases spread over (0, 1] keep 1,000 nodes of one
   * process from beating in the same millisecond.
   */
  async start(intervals: NodeAgentIntervals, phase: number): Promise<void> {
    await this.detectionPass();
    this.heartbeat();
    if (this.stopped) return;
    this.every(intervals.detectMs, phase, () => void this.detectionPass());
    this.every(intervals.heartbeatMs, phase, () => this.heartbeat());
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
  }

  /** One pass over every provider; publishes only when the content changed. */
  async detectionPass(): Promise<void> {
    if (this.passRunning || this.stopped) return;
    this.passRunning = true;
    try {
      for (const provider of this.providers) {
        try {
          const ok = await provider.detect();
          const host = hasHostInfo(provider) ? await provider.readHostInfo() : undefined;
          this.assembler.record(provider.name, { ok, host });
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          this.assembler.record(provider.name, { error });
          this.ctx.logger.warn(
            { node: this.nodeName, provider: provider.name, err: error },
            `${provider.name} detection failed, keeping the last good result: ${error.message}`,
          );
          this.ctx.bus.publish(Events.detectionFailed, {
            nodeName: this.nodeName,
            cluster: this.ctx.cluster,
            provider: provider.name,
            error: error.message,
            time: new Date(),
          });
        }
      }
      const { inventory, changed } = this.assembler.assemble();
      this.current = inventory;
      this.ctx.onPass?.(this.nodeName, inventory);
      if (changed) await this.publishInventory('changed');
    } finally {
      this.passRunning = false;
    }
  }

  /** Publishes the inventory and writes the node record; false when the write failed (NATS away). */
  async publishInventory(why: string): Promise<boolean> {
    const inv = this.current;
    if (!inv) return true;
    const { logger, oneOfMany } = this.ctx;
    this.ctx.bus.publish(Events.inventory, inv);
    try {
      await this.ctx.records.put(inv.nodeName, inv);
      this.writeFailed = false;
      logger[oneOfMany ? 'debug' : 'info'](
        { node: inv.nodeName, generation: inv.generation, reason: why, accelerators: inv.accelerators.length, nics: inv.nics.length },
        `inventory generation ${inv.generation} (${why}): ${inv.accelerators.length} accelerators, ${inv.nics.length} NICs`,
      );
      return true;
    } catch (err) {
      // NATS is away; the reconnect handler writes the record again.
      this.writeFailed = true;
      logger[oneOfMany ? 'debug' : 'warn']({ node: inv.nodeName, err }, `could not write node record: ${(err as Error).message}`);
      return false;
    }
  }

  heartbeat(): void {
    if (this.stopped) return;
    this.ctx.bus.publish(Events.heartbeat, {
      nodeName: this.nodeName,
      cluster: this.ctx.cluster,
      generation: this.current?.generation ?? 0,
      sentAt: new Date(),
    });
  }

  /** Each timer keeps one slot: the first run's timeout, then the interval that follows it. */
  private every(ms: number, phase: number, fn: () => void): void {
    const slot = this.timers.length;
    this.timers.push(
      setTimeout(() => {
        if (this.stopped) return;
        fn();
        this.timers[slot] = setInterval(fn, ms);
      }, ms * phase),
    );
  }
}
