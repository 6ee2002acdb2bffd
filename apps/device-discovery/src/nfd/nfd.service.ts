import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { PRESENTED_NODES } from '../agent/agent.constants';
import { AgentService } from '../agent/agent.service';
import type { PresentedNodes } from '../agent/presented-nodes';
import { AGENT_CONFIG, AgentConfig } from '../config';
import { loadKubeConfig, NfdKubeClient } from './kube-client';
import { NodeFeaturePublisher } from './node-feature-publisher';

/**
 * NFD=true: one NodeFeature per presented node (nfd.k8s-sigs.io/v1alpha1, "gpufleet-<node>" in
 * POD_NAMESPACE), its spec.labels the node's labels, server-side applied after every pass whose
 * labels changed. Off (the NATS-only install), it does nothing and talks to no Kubernetes API.
 */
@Injectable()
export class NfdService implements OnModuleInit, OnApplicationShutdown {
  private readonly publishers = new Map<string, NodeFeaturePublisher>();

  constructor(
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(PRESENTED_NODES) private readonly presented: PresentedNodes,
    private readonly agent: AgentService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.NFD;
  }

  /** A presented node's publisher; undefined with NFD off. */
  publisherOf(nodeName: string): NodeFeaturePublisher | undefined {
    return this.publishers.get(nodeName);
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    const namespace = this.config.POD_NAMESPACE;
    const client = new NfdKubeClient(loadKubeConfig(this.config.KUBECONFIG));
    for (const node of this.presented.names) {
      this.publishers.set(node, new NodeFeaturePublisher({ nodeName: node, namespace, logger: this.logger, apply: (o) => client.applyNodeFeature(o) }));
    }
    this.logger.info({ namespace, nodes: this.presented.names.length }, `NFD: publishing NodeFeature gpufleet-<node> objects in namespace ${namespace}`);
    this.agent.onPass((name, inventory) => this.publishers.get(name)?.update(inventory.labels));
    // Nodes whose first pass finished before this module started (the lone node always has).
    for (const [name, publisher] of this.publishers) {
      const inventory = this.agent.inventoryOf(name);
      if (inventory) publisher.update(inventory.labels);
    }
    void this.checkNodes(client);
  }

  onApplicationShutdown(): void {
    for (const p of this.publishers.values()) p.stop();
  }

  /** Once: a NodeFeature for a node Kubernetes does not know labels nothing (NODE_NAME should be spec.nodeName). */
  private async checkNodes(client: NfdKubeClient): Promise<void> {
    const names = this.presented.names;
    // Many simulated nodes: the first few tell enough.
    for (const name of names.slice(0, 8)) {
      try {
        if (!(await client.nodeExists(name))) {
          this.logger.warn(
            { node: name },
            `NFD: Kubernetes has no Node "${name}", so nfd-master labels nothing from NodeFeature gpufleet-${name}; NODE_NAME should be the Pod's spec.nodeName`,
          );
        }
      } catch (err) {
        this.logger.debug({ node: name, err }, `NFD: could not read Node ${name}: ${(err as Error).message}`);
      }
    }
  }
}
