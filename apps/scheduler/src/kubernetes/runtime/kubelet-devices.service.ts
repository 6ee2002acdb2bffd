import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import type { V1Pod } from '@kubernetes/client-node';
import { Buckets, KubeletDevices } from '@gpufleet/contracts';
import { KubeAnnotations, kubePodKey, ledgerCorrectionsOf, withheldAccelerators, type LedgerCorrection } from '@gpufleet/kube-runtime-core';
import { KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { createCounter, LOGGER, METRICS_REGISTRY, type Counter, type Logger, type Registry } from '@gpufleet/observability';
import { CapacityStateService } from '../../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../../config';
import { AdmissionService } from '../../scheduling/admission.service';
import { SchedulingStore } from '../../scheduling/scheduling-store.service';

/** Problems already logged (pod and message), so each is logged once; forgotten past this many. */
const MAX_LOGGED_PROBLEMS = 1024;

/**
 * What the nodes' kubelets report of gpufleet's devices (the kubelet-devices bucket, written by
 * each node's agent from the pod-resources API), on every replica: accelerators a kubelet cannot
 * allocate are withheld from the capacity views and placement (CapacityStateService's device
 * gate). On the leader, `check` (one step of the kube-runtime pass) corrects the devices ledger
 * where the kubelet gave a Pod other devices than the ledger says.
 */
@Injectable()
export class KubeletDevicesService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly corrections: Counter<'node' | 'resource'>;
  private reports?: KvMirror<KubeletDevices>;
  private readonly withheld = new Map<string, ReadonlySet<string>>();
  /** What was last logged as withheld per node, so a change is logged once. */
  private readonly announced = new Map<string, string>();
  private readonly logged = new Set<string>();
  private readonly listeners = new Set<() => void>();

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly capacity: CapacityStateService,
    private readonly store: SchedulingStore,
    private readonly admission: AdmissionService,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'kubelet-devices' });
    this.corrections = createCounter(registry, {
      name: 'kubelet_ledger_corrections_total',
      help: 'Pods whose devices ledger entry was corrected to the devices their kubelet assigned',
      labelNames: ['node', 'resource'],
    });
  }

  async onModuleInit(): Promise<void> {
    const reports = new KvMirror(await KvStore.open(this.nc.jetstream(), Buckets.kubeletDevices(this.config.GPUFLEET_CLUSTER), KubeletDevices), { logger: this.logger });
    this.reports = reports;
    this.capacity.setDeviceGate((node) => this.withheldOf(node));
    reports.listen((node, change) => {
      if (change.kind === 'put' && change.value.node !== node) {
        this.logger.warn({ node, revision: change.revision }, `INVALID_KUBELET_DEVICES: ${node} revision ${change.revision} names node "${change.value.node}": ignored`);
      }
      this.withheld.delete(node);
      this.capacity.refreshDevices(node);
      for (const l of this.listeners) l();
    });
    // An inventory change can change which accelerators a report withholds.
    this.capacity.onNodeChanged((node) => this.withheld.delete(node.name));
    await reports.start();
    for (const node of reports.entries.keys()) this.capacity.refreshDevices(node);
  }

  onApplicationShutdown(): void {
    this.capacity.setDeviceGate(undefined);
    this.reports?.stop();
  }

  /** Called after every change of a node's report. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The node's report; undefined when none, or one naming another node, was written. */
  reportOf(node: string): KubeletDevices | undefined {
    const report = this.reports?.get(node)?.value;
    return report?.node === node ? report : undefined;
  }

  /** Accelerators of the node its kubelet cannot allocate (withheldAccelerators), cached until the report or the inventory changes. */
  withheldOf(node: string): ReadonlySet<string> {
    const cached = this.withheld.get(node);
    if (cached) return cached;
    const inventory = this.capacity.inventoryOf(node);
    const withheld = inventory ? withheldAccelerators(inventory, this.reportOf(node)) : new Set<string>();
    this.withheld.set(node, withheld);
    const said = [...withheld].join(', ');
    if (said !== (this.announced.get(node) ?? '')) {
      this.announced.set(node, said);
      if (said) this.logger.warn({ node, withheld: [...withheld] }, `node ${node}: its kubelet cannot allocate ${said}; they are not placed on`);
      else this.logger.info({ node }, `node ${node}: its kubelet can allocate every accelerator again`);
    }
    return withheld;
  }

  /**
   * The leader's check, given the Pods the kube runtime observes: every node's ledger against
   * what its kubelet assigned, corrected where they differ. What cannot be corrected is logged
   * once and left as it is.
   */
  async check(pods: readonly V1Pod[]): Promise<void> {
    const reports = this.reports;
    if (!reports) return;
    const byPodId = new Map<string, string>();
    for (const pod of pods) {
      const id = pod.metadata?.annotations?.[KubeAnnotations.pod];
      if (id && !pod.metadata?.deletionTimestamp) byPodId.set(id, kubePodKey(pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''));
    }
    const found: LedgerCorrection[] = [];
    for (const node of reports.entries.keys()) {
      const report = this.reportOf(node);
      const ledger = this.store.ledger.get(node)?.value;
      const inventory = this.capacity.inventoryOf(node);
      if (!report || !ledger || !inventory) continue;
      const result = ledgerCorrectionsOf({ ledger, inventory, report, kubePodOf: (id) => byPodId.get(id) });
      for (const p of result.problems) this.logOnce(`${p.kubePod}\u0000${p.message}`, { node, workload: p.workload, pod: p.kubePod }, `ledger of ${node} not corrected for Pod ${p.kubePod} (${p.workload}): ${p.message}`);
      found.push(...result.corrections);
    }
    if (found.length === 0) return;
    const refused = await this.admission.correctDevices(found.map((c) => ({ workload: c.workload, after: c.after })));
    if (refused !== undefined) {
      const pods = found.map((c) => c.kubePod).sort().join(', ');
      this.logOnce(`${pods}\u0000${refused}`, { pods }, `ledger not corrected to the kubelet's devices of ${pods}: ${refused}`);
      return;
    }
    for (const c of found) {
      this.corrections.inc({ node: c.after.node, resource: c.resource });
      this.logger.warn(
        { node: c.after.node, workload: c.workload, pod: c.kubePod, resource: c.resource, ledger: devicesOf(c.before), kubelet: devicesOf(c.after) },
        `ledger corrected: the kubelet gave Pod ${c.kubePod} (${c.workload}) ${devicesOf(c.after)} on ${c.after.node}, the ledger had ${devicesOf(c.before)}`,
      );
    }
  }

  private logOnce(key: string, fields: Record<string, unknown>, message: string): void {
    if (this.logged.has(key)) return;
    if (this.logged.size >= MAX_LOGGED_PROBLEMS) this.logged.clear();
    this.logged.add(key);
    this.logger.warn(fields, message);
  }
}

function devicesOf(p: LedgerCorrection['after']): string {
  return p.partition ? `${p.partition.acceleratorId} MIG ${p.partition.profile}@${p.partition.start}` : p.acceleratorIds.join(',');
}
