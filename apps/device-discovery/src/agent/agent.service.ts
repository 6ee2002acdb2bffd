import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, NodeInventory } from '@gpufleet/contracts';
import { InventoryAssembler } from '@gpufleet/device-inventory';
import { EventBus, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { AGENT_CONFIG, AgentConfig } from '../config';
import { PRESENTED_NODES } from './agent.constants';
import { forEachConcurrently } from './concurrency';
import { NodeAgent, type NodeAgentContext } from './node-agent';
import type { PresentedNodes } from './presented-nodes';
import { buildProviders, type ProviderSet } from './providers';

export const AGENT_VERSION = '0.1.0';

/** Nodes that start (previous record read, first pass, record written) or republish at once when the agent presents many. */
export const NODES_IN_FLIGHT = 32;

/**
 * The agent: one NodeAgent per presented node (NODE_NAME, or the SIMULATED_NODES of the fleet
 * file), all over one NATS connection, one nodes bucket and one reconnect handler.
 */
@Injectable()
export class AgentService implements OnModuleInit, OnApplicationShutdown {
  private readonly agents: NodeAgent[] = [];
  private firstPassesDone = 0;
  private readonly passListeners: ((nodeName: string, inventory: NodeInventory) => void)[] = [];
  private stopped = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly bus: EventBus,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(PRESENTED_NODES) private readonly presented: PresentedNodes,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The readiness check: every presented node has finished its first detection pass. */
  checkReady(): void {
    const total = this.presented.names.length;
    const pending = total - this.firstPassesDone;
    if (pending === 0) return;
    throw new Error(total === 1 ? 'first detection pass not finished' : `first detection pass not finished on ${pending} of ${total} nodes`);
  }

  /** Every detection pass's inventory, from the next pass on. */
  onPass(listener: (nodeName: string, inventory: NodeInventory) => void): void {
    this.passListeners.push(listener);
  }

  /** The last inventory of a presented node; undefined before its first pass. */
  inventoryOf(nodeName: string): NodeInventory | undefined {
    return this.agents.find((a) => a.nodeName === nodeName)?.inventory;
  }

  async onModuleInit(): Promise<void> {
    const { config, presented } = this;
    const names = presented.names;
    const many = names.length > 1;
    const providerSets: ProviderSet[] = [];
    for (const name of names) providerSets.push(await buildProviders(config, presented, name));
    const records = await KvStore.open(this.nc.jetstream(), Buckets.nodes(config.GPUFLEET_CLUSTER), NodeInventory);
    const ctx: NodeAgentContext = {
      cluster: config.GPUFLEET_CLUSTER,
      records,
      bus: this.bus,
      logger: this.logger,
      oneOfMany: many,
      onPass: (node, inventory) => {
        for (const listener of this.passListeners) listener(node, inventory);
      },
    };
    const labels = Object.fromEntries(config.NODE_LABELS.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const intervals = { detectMs: config.DETECT_INTERVAL_S * 1000, heartbeatMs: config.HEARTBEAT_INTERVAL_S * 1000 };

    const startNode = async (name: string, index: number): Promise<void> => {
      const { providers, simulated } = providerSets[index];
      // Generations keep increasing across agent restarts, so readers can order inventories.
      const previous = await records.get(name).catch(() => undefined);
      if (this.stopped) return;
      const assembler = new InventoryAssembler({
        nodeName: name,
        cluster: config.GPUFLEET_CLUSTER,
        agentVersion: AGENT_VERSION,
        topology: simulated?.topology,
        nodeLabels: { ...simulated?.nodeLabels, ...labels },
        generation: previous?.value.generation ?? 0,
      });
      const agent = new NodeAgent(name, providers, assembler, ctx);
      this.agents.push(agent);
      const providerNames = providers.map((p) => p.name);
      this.logger[many ? 'debug' : 'info']({ node: name, providers: providerNames }, `providers: ${providerNames.join(', ') || 'none'}`);
      await agent.start(intervals, many ? (index + 1) / names.length : 1);
      this.firstPassesDone++;
    };

    if (many) {
      this.logger.info({ nodes: names.length, fleetFile: presented.fleetFile }, `presenting ${names.length} simulated nodes of ${presented.fleetFile}`);
      // In the background: the ports open at once and /readyz says how many nodes are pending.
      void this.startMany(names, startNode);
    } else {
      await startNode(names[0], 0);
    }
    void this.republishOnReconnect();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    for (const agent of this.agents) agent.stop();
  }

  private async startMany(names: readonly string[], startNode: (name: string, index: number) => Promise<void>): Promise<void> {
    const began = Date.now();
    await forEachConcurrently(names, NODES_IN_FLIGHT, async (name, index) => {
      try {
        await startNode(name, index);
      } catch (err) {
        this.logger.error({ node: name, err }, `node ${name} could not start, so the agent stays not ready: ${(err as Error).message}`);
      }
    });
    if (this.stopped) return;
    const accelerators = this.agents.reduce((sum, a) => sum + (a.inventory?.accelerators.length ?? 0), 0);
    const stale = this.agents.filter((a) => a.recordStale).length;
    const seconds = ((Date.now() - began) / 1000).toFixed(1);
    this.logger.info({ nodes: this.agents.length, accelerators, seconds }, `${this.agents.length} nodes presented in ${seconds} s, ${accelerators} accelerators`);
    if (stale > 0) this.logger.warn({ nodes: stale }, `${stale} of ${this.agents.length} node records could not be written; they are written again when NATS reconnects`);
  }

  /** After NATS comes back, every node beats and writes its record at once: the store may have lost it. */
  private async republishOnReconnect(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (this.stopped) return;
      if (s.type !== 'reconnect') continue;
      const agents = [...this.agents];
      let failed = 0;
      await forEachConcurrently(agents, NODES_IN_FLIGHT, async (agent) => {
        agent.heartbeat();
        if (!(await agent.publishInventory('reconnected'))) failed++;
      });
      if (agents.length > 1) {
        this.logger[failed > 0 ? 'warn' : 'info'](
          { nodes: agents.length, failed },
          `NATS reconnected: ${agents.length - failed} of ${agents.length} node records written again`,
        );
      }
    }
  }
}
