import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, KubeletDevices as KubeletDevicesRecord } from '@gpufleet/contracts';
import { KUBELET_SOCKET } from '@gpufleet/contracts/kubelet';
import { KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { DevicePluginState, parseMigMinors, type HealthObservation, type MigMinors } from '@gpufleet/device-plugin-core';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { PRESENTED_NODES } from '../agent/agent.constants';
import { AgentService } from '../agent/agent.service';
import type { PresentedNodes } from '../agent/presented-nodes';
import { AGENT_CONFIG, AgentConfig } from '../config';
import { DevicePlugins } from './device-plugins';
import { readKubeletDevices, type KubeletDevices } from './pod-resources';
import { PodResourcesReporter } from './pod-resources-reporter';

/** DEVICE_PLUGIN=on: the kubelet device plugins of the node this agent runs on, fed by its detection passes. */
@Injectable()
export class DevicePluginService implements OnModuleInit, OnApplicationShutdown {
  private plugins: DevicePlugins | undefined;
  private state: DevicePluginState | undefined;
  private reporter: PodResourcesReporter | undefined;

  constructor(
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(PRESENTED_NODES) private readonly presented: PresentedNodes,
    private readonly agent: AgentService,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.DEVICE_PLUGIN === 'on';
  }

  async onModuleInit(): Promise<void> {
    if (!this.enabled) return;
    const { config } = this;
    const node = this.presented.names[0];
    this.state = new DevicePluginState({
      settings: { modes: config.DEVICE_PLUGIN_MODES, sharedReplicas: config.DEVICE_PLUGIN_SHARED_REPLICAS, slicesPerCard: config.DEVICE_PLUGIN_SLICES },
      health: { unhealthyAfter: config.DEVICE_PLUGIN_UNHEALTHY_AFTER, healthyAfter: config.DEVICE_PLUGIN_HEALTHY_AFTER },
      allocate: { migMinors: this.readMigMinors() },
    });
    const inventory = this.agent.inventoryOf(node);
    if (inventory) this.state.update(inventory);
    this.plugins = new DevicePlugins({ dir: config.DEVICE_PLUGIN_DIR, state: this.state, logger: this.logger });
    await this.plugins.start();
    const names = this.state.resources().map((r) => r.name);
    this.logger.info({ node, resources: names, dir: config.DEVICE_PLUGIN_DIR }, `device plugins serving ${names.join(', ') || 'no resources'} in ${config.DEVICE_PLUGIN_DIR}`);
    // What the kubelet actually assigned is the truth of a Pod's devices: the scheduler corrects its ledger from it.
    this.reporter = new PodResourcesReporter({
      node,
      intervalS: config.POD_RESOURCES_INTERVAL_S,
      read: () => this.kubeletDevices(),
      open: () => KvStore.open(this.nc.jetstream(), Buckets.kubeletDevices(config.GPUFLEET_CLUSTER), KubeletDevicesRecord),
      logger: this.logger,
    });
    this.reporter.start();
    this.agent.onPass((name, inv) => {
      if (name !== node || !this.state || !this.plugins) return;
      const changed = this.state.update(inv);
      if (changed.size > 0) void this.plugins.sync(changed).catch((err: Error) => this.logger.error({ err }, `device plugins could not follow the inventory: ${err.message}`));
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reporter?.stop();
    await this.plugins?.stop();
  }

  /** One health observation of a card by UUID (an XID event, a probe); the kubelet hears of a flip at once. */
  observe(cardUuid: string, observation: HealthObservation): void {
    if (!this.state || !this.plugins) return;
    const changed = this.state.observe(cardUuid, observation);
    if (changed.size > 0) void this.plugins.sync(changed);
  }

  /** The kubelet's pod-resources view of gpufleet's devices (assigned and allocatable). */
  kubeletDevices(): Promise<KubeletDevices> {
    return readKubeletDevices(join(this.config.POD_RESOURCES_DIR, KUBELET_SOCKET), { timeoutMs: Math.min(5000, this.config.POD_RESOURCES_INTERVAL_S * 1000) });
  }

  status(): ReturnType<DevicePlugins['status']> {
    return this.plugins?.status() ?? [];
  }

  private readMigMinors(): MigMinors | undefined {
    const file = join(this.config.HOST_ROOT, 'proc/driver/nvidia-caps/mig-minors');
    try {
      return parseMigMinors(readFileSync(file, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn({ file, err }, `${file} unreadable, MIG capability nodes follow the driver's default layout: ${(err as Error).message}`);
      return undefined;
    }
  }
}
