import { KubeletDevices } from '@gpufleet/contracts';
import type { KvStore } from '@gpufleet/messaging';
import type { Logger } from '@gpufleet/observability';
import type { KubeletDevices as ReadDevices } from './pod-resources';

/** Containers listed in one record at most (a KV value stays well under NATS' 1 MiB payload); the rest are cut and `truncated` set. */
export const MAX_KUBELET_CONTAINERS = 2048;

export interface PodResourcesReporterOptions {
  readonly node: string;
  /** Seconds between reads of the pod-resources API. */
  readonly intervalS: number;
  /** One read of the kubelet (readKubeletDevices); it carries its own timeout. */
  readonly read: () => Promise<ReadDevices>;
  /** The kubelet-devices bucket; opened on the first pass (the scheduler creates it). */
  readonly open: () => Promise<KvStore<KubeletDevices>>;
  readonly logger: Logger;
}

/** The record of one read, in a stable order so equal reads give equal records. */
export function kubeletDevicesRecord(node: string, read: ReadDevices, observedAt: Date): KubeletDevices {
  const assigned = [...read.assigned]
    .sort((a, b) => `${a.namespace}/${a.pod}/${a.container}/${a.resource}`.localeCompare(`${b.namespace}/${b.pod}/${b.container}/${b.resource}`))
    .map((a) => ({ namespace: a.namespace, pod: a.pod, container: a.container, resource: a.resource, deviceIds: [...a.deviceIds].sort() }));
  const allocatable = Object.keys(read.allocatable)
    .sort()
    .map((resource) => ({ resource, deviceIds: [...read.allocatable[resource]].sort() }));
  return { node, allocatable, assigned: assigned.slice(0, MAX_KUBELET_CONTAINERS), truncated: assigned.length > MAX_KUBELET_CONTAINERS, observedAt };
}

function fingerprint(record: KubeletDevices): string {
  return JSON.stringify(KubeletDevices.toJSON({ ...record, observedAt: undefined }));
}

/**
 * Reads the kubelet's pod-resources API every `intervalS` and writes what it finds for the node
 * into the kubelet-devices bucket, when it changed; one read at a time (a slow kubelet makes the
 * next tick wait, not pile up). A failed read keeps the last record and is logged once per run
 * of failures.
 */
export class PodResourcesReporter {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private store?: KvStore<KubeletDevices>;
  private written = '';
  private failing = false;
  private stopped = false;

  constructor(private readonly options: PodResourcesReporterOptions) {}

  start(): void {
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.options.intervalS * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One pass now, or the one in progress (tests). */
  tick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    const { node, logger } = this.options;
    try {
      const record = kubeletDevicesRecord(node, await this.options.read(), new Date());
      const fp = fingerprint(record);
      if (fp === this.written) return;
      this.store ??= await this.options.open();
      await this.store.put(node, record);
      this.written = fp;
      if (this.failing) logger.info({ node }, `pod-resources of ${node} read and reported again`);
      this.failing = false;
      if (record.truncated) logger.warn({ node, containers: MAX_KUBELET_CONTAINERS }, `pod-resources of ${node}: more than ${MAX_KUBELET_CONTAINERS} containers hold gpufleet devices; the rest are not reported`);
    } catch (err) {
      if (!this.failing) logger.warn({ node, err }, `pod-resources of ${node} could not be read or reported, keeping the last report: ${(err as Error).message}`);
      this.failing = true;
    }
  }
}
