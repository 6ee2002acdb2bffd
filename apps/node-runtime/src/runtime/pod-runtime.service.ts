import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { NodeRuntimeReport, parsePodStoreKey, type PodRef, type PodRuntimeStatus } from '@gpufleet/contracts';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { NODE_RUNTIME_CONFIG, NodeRuntimeConfig } from '../config';
import { detectCgroups } from '@gpufleet/process-runtime';
import { NodePods } from './node-pods';
import { decideSandbox } from './sandbox-mode';
import { NodeState } from './node-state.service';
import { NodeRuntimeMetrics } from './runtime-metrics';
import { RUNTIME_METRICS } from './runtime.constants';

/** Records read at once when the runtime starts: bounded, so a big fleet's start is not a burst of thousands of reads. */
const RECORD_READS_IN_FLIGHT = 64;

/**
 * The node runtime: one NodePods (its reconcile loop, process table and records) per node this
 * process runs pods for, NODE_NAME alone or every node of SIMULATED_NODES. A change of one
 * node's inventory or ledger wakes that node's loop; a workload change wakes them all (each
 * pass is cheap when nothing of the node changed).
 */
@Injectable()
export class PodRuntimeService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger: Logger;
  private readonly nodes = new Map<string, NodePods>();
  private offChange: (() => void) | undefined;
  private retryReport: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Whether pods run in sandboxes (SANDBOX and what the host can do) and why, known once bootstrapped. */
  sandbox = { enabled: false, detail: 'not decided yet' };

  constructor(
    @Inject(NODE_RUNTIME_CONFIG) private readonly config: NodeRuntimeConfig,
    private readonly state: NodeState,
    @Inject(RUNTIME_METRICS) private readonly metrics: NodeRuntimeMetrics,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
  ) {
    this.logger = logger.child({ context: 'pods' });
  }

  /** True once every node has adopted what an earlier runtime left and is reconciling. */
  get ready(): boolean {
    return this.nodes.size === this.state.nodes.length && [...this.nodes.values()].every((n) => n.ready);
  }

  /** Why the runtime is not ready yet, for /readyz. */
  notReadyReason(): string {
    if (this.nodes.size < this.state.nodes.length) return 'earlier pods records not read yet';
    const pending = [...this.nodes.values()].filter((n) => !n.ready);
    const waiting = pending.filter((n) => n.waiting);
    const names = (list: NodePods[]) => list.slice(0, 3).map((n) => n.node).join(', ') + (list.length > 3 ? ', …' : '');
    if (waiting.length > 0) {
      return `${waiting.length} of ${this.nodes.size} nodes wait for their inventory in the nodes bucket (${names(waiting)}); pods of an earlier runtime are adopted once it is there`;
    }
    return `${pending.length} of ${this.nodes.size} nodes have not adopted the pods of an earlier runtime yet (${names(pending)})`;
  }

  async onApplicationBootstrap(): Promise<void> {
    // Once per runtime, before any pod starts: every node of the process shares the host.
    const sandbox = decideSandbox(this.config.SANDBOX);
    // Limits need the sandbox too: an unconfined pod runs as the runtime's user, who could
    // move itself out of its cgroup.
    const cgroups = sandbox.sandboxed ? detectCgroups() : undefined;
    const limits = !sandbox.sandboxed ? '' : cgroups ? `; cgroup ${cgroups.version} limits from each pod's request` : '; WITHOUT cgroup limits: no cgroup v2 or v1 memory/cpu/pids hierarchy under /sys/fs/cgroup';
    const sharing = sandbox.sandboxed ? '' : this.config.SANDBOX_ALLOW_SHARING
      ? '; SANDBOX_ALLOW_SHARING=true: pods of several namespaces may share the node'
      : '; so the scheduler places one namespace’s pods at a time here (SANDBOX_ALLOW_SHARING=true lets namespaces share it)';
    this.sandbox = { enabled: sandbox.sandboxed, detail: `${sandbox.message}${limits}${sharing}` };
    this.logger[sandbox.sandboxed && !cgroups ? 'warn' : sandbox.level](this.sandbox.detail);
    // Said before any pod starts, so the scheduler knows which nodes can keep tenants apart.
    await this.report(this.state.nodes);
    const previous = await this.previousRecords();
    await this.state.start();
    for (const node of this.state.nodes) {
      this.nodes.set(
        node,
        new NodePods({
          config: this.config,
          view: this.state.view(node),
          pods: this.state.pods,
          previous: previous.get(node) ?? new Map(),
          metrics: this.metrics,
          logger: this.logger,
          registry: this.registry,
          sandboxed: sandbox.sandboxed,
          cgroups: cgroups !== undefined,
        }),
      );
    }
    this.offChange = this.state.onChange((node) => {
      if (node === undefined) for (const pods of this.nodes.values()) pods.request();
      else this.nodes.get(node)?.request();
    });
    for (const pods of this.nodes.values()) pods.start();
    if (this.nodes.size > 1) this.logger.info(`running pods for ${this.nodes.size} nodes: ${[...this.nodes.keys()].slice(0, 5).join(', ')}${this.nodes.size > 5 ? ', …' : ''}`);
  }

  /**
   * Writes each node's NodeRuntimeReport. A node whose write failed is tried again every 5 s
   * (in the background, until shutdown): the scheduler treats a node without a report as able
   * to isolate, as before reports existed, so a missing one must not stay missing.
   */
  private async report(nodes: readonly string[]): Promise<void> {
    const failed: string[] = [];
    const write = (node: string) =>
      this.state.runtimes
        .put(node, NodeRuntimeReport.fromPartial({ node, runtime: 'process', sandboxed: this.sandbox.enabled, sandboxDetail: this.sandbox.detail, sharingAllowed: this.config.SANDBOX_ALLOW_SHARING, reportedAt: new Date() }))
        .catch((e: Error) => {
          failed.push(node);
          this.logger.warn(`could not write the runtime report of ${node} (tried again in 5 s): ${e.message}`);
        });
    // 64 writes in flight at most: a runtime standing in for a thousand simulated nodes.
    for (let i = 0; i < nodes.length; i += 64) await Promise.all(nodes.slice(i, i + 64).map(write));
    if (failed.length > 0 && !this.stopped) {
      this.retryReport = setTimeout(() => void this.report(failed), 5_000);
      this.retryReport.unref();
    }
  }

  /** On SIGTERM: every node detaches from its pods (they keep running) for the next runtime to adopt. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryReport);
    this.offChange?.();
    this.state.stop();
    const running = await Promise.all([...this.nodes.values()].map((n) => n.detach()));
    const total = running.reduce((a, b) => a + b, 0);
    this.logger.info(`detached from ${total} processes; they keep running for the next runtime to adopt`);
  }

  /** Every pod of these nodes as it is now: the records of the pods bucket, live. */
  statuses(node?: string): PodRuntimeStatus[] {
    const nodes = node === undefined ? [...this.nodes.values()] : [this.nodes.get(node)].filter((n): n is NodePods => n !== undefined);
    return nodes.flatMap((n) => n.statuses());
  }

  /** True when this process runs pods for `node`. */
  has(node: string): boolean {
    return this.nodes.has(node);
  }

  /**
   * The node that runs the pod `ref`: `node` when given, otherwise the one node that has it (a
   * pod moving between two nodes of this process is on both for a while: the one running it wins).
   */
  nodeOf(ref: Omit<PodRef, 'node'>, node?: string): NodePods | undefined {
    if (node !== undefined) {
      const pods = this.nodes.get(node);
      return pods?.logFile(ref) ? pods : undefined;
    }
    const having = [...this.nodes.values()].filter((n) => n.logFile(ref) !== undefined);
    return having.find((n) => n.isRunning(ref)) ?? having[0];
  }

  /** The node runtime's pod records in the bucket when it started, by node and key. */
  private async previousRecords(): Promise<Map<string, Map<string, PodRuntimeStatus>>> {
    const mine = new Set(this.state.nodes);
    const keys = (await this.state.pods.keys()).filter((key) => mine.has(parsePodStoreKey(key)?.node ?? ''));
    const byNode = new Map<string, Map<string, PodRuntimeStatus>>();
    for (let i = 0; i < keys.length; i += RECORD_READS_IN_FLIGHT) {
      const batch = keys.slice(i, i + RECORD_READS_IN_FLIGHT);
      const records = await Promise.all(batch.map((key) => this.state.pods.get(key).catch(() => undefined)));
      batch.forEach((key, j) => {
        const record = records[j];
        if (!record) return;
        const node = parsePodStoreKey(key)!.node;
        if (!byNode.has(node)) byNode.set(node, new Map());
        byNode.get(node)!.set(key, record.value);
      });
    }
    return byNode;
  }
}
