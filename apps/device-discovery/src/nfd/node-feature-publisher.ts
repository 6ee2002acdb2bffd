import { nodeFeatureFor, toNfdLabels, type NodeFeatureObject, type NodeLabels } from '@gpufleet/device-inventory';
import type { Logger } from '@gpufleet/observability';

export interface Backoff {
  /** Wait after the first failed apply; doubled after each further failure. */
  initialMs: number;
  /** The longest wait between two tries. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000 };

export interface NodeFeaturePublisherOptions {
  nodeName: string;
  namespace: string;
  /** Server-side applies the object (the whole label set, forced); rejects on any failure. */
  apply: (object: NodeFeatureObject) => Promise<void>;
  logger: Logger;
  backoff?: Backoff;
}

/**
 * Keeps one node's NodeFeature in step with its labels, free of NestJS. update() never waits:
 * it records the wanted label set and a single background loop applies the latest one, so
 * passes that come while an apply is in flight (or while it backs off after a failure)
 * coalesce into one apply of the newest set. Failures retry with doubling, bounded waits.
 */
export class NodeFeaturePublisher {
  private wanted: NodeLabels | undefined;
  private wantedKey: string | undefined;
  private appliedKey: string | undefined;
  private running = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private droppedKey = '';
  private idle: Promise<void> = Promise.resolve();
  /** Applies that reached the API server; for tests and the log. */
  applies = 0;

  constructor(private readonly options: NodeFeaturePublisherOptions) {}

  /** The node's labels after a detection pass; a set equal to the last one wanted does nothing. */
  update(labels: NodeLabels): void {
    if (this.stopped) return;
    const { labels: nfd, dropped } = toNfdLabels(labels);
    const droppedKey = dropped.map((d) => d.key).join(',');
    if (droppedKey !== this.droppedKey) {
      this.droppedKey = droppedKey;
      if (dropped.length > 0) {
        this.options.logger.debug(
          { node: this.options.nodeName, dropped },
          `NodeFeature leaves out ${dropped.length} label(s) nfd-master would not set: ${droppedKey}`,
        );
      }
    }
    const key = JSON.stringify(nfd); // toNfdLabels sorts the keys
    if (key === this.wantedKey) return;
    this.wanted = nfd;
    this.wantedKey = key;
    if (!this.running) this.idle = this.drain();
  }

  /** The latest wanted set has been applied. */
  get inStep(): boolean {
    return this.wantedKey !== undefined && this.wantedKey === this.appliedKey;
  }

  /** Resolves when the loop has nothing left to apply (or was stopped). */
  settled(): Promise<void> {
    return this.idle;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
  }

  private async drain(): Promise<void> {
    this.running = true;
    const { nodeName, namespace, logger } = this.options;
    const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
    let failures = 0;
    try {
      while (!this.stopped && this.wantedKey !== this.appliedKey) {
        const key = this.wantedKey;
        const object = nodeFeatureFor(nodeName, namespace, this.wanted ?? {});
        try {
          await this.options.apply(object);
          this.applies++;
          this.appliedKey = key;
          const count = Object.keys(object.spec.labels).length;
          logger[failures > 0 ? 'info' : 'debug'](
            { node: nodeName, nodeFeature: `${namespace}/${object.metadata.name}`, labels: count },
            `NodeFeature ${namespace}/${object.metadata.name} applied (${count} labels)${failures > 0 ? ` after ${failures} failed tries` : ''}`,
          );
          failures = 0;
        } catch (err) {
          failures++;
          const wait = Math.min(backoff.initialMs * 2 ** (failures - 1), backoff.maxMs);
          // The first failure and then every tenth: a long outage does not flood the log.
          if (failures === 1 || failures % 10 === 0) {
            logger.warn(
              { node: nodeName, nodeFeature: `${namespace}/${object.metadata.name}`, failures, retryInMs: wait, err },
              `NodeFeature ${namespace}/${object.metadata.name} could not be applied (${failures} tries), retrying in ${wait} ms: ${(err as Error).message}`,
            );
          }
          await this.sleep(wait);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
      this.timer.unref();
    });
  }
}
