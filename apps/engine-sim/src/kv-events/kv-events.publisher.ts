/**
 * Publishes the engine's KV cache events (BlockStored, BlockRemoved, AllBlocksCleared) on NATS,
 * as vLLM publishes them on ZeroMQ: events of one event-loop turn go out together as one batch,
 * one JSON object (one line) per message, with a sequence number so a consumer can see gaps.
 *
 * Subject, header and payload are declared in @gpufleet/contracts (`RawSubjects.kvCacheEvents`,
 * `kvCacheEventsSubject`, `KvEventBatch`): per replica, `gpufleet.<cluster>.kv.events.<replica>`
 * unless configured.
 */
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type NatsConnection } from 'nats';
import { RawSubjects, type KvCacheEvent, type KvEventBatch } from '@gpufleet/contracts';
import { connectNats, HEADER_EVENT, HEADER_ID, type NatsSettings } from '@gpufleet/messaging';
import { injectTraceHeaders, type Logger } from '@gpufleet/observability';

export interface KvEventsPublisherOptions {
  readonly subject: string;
  readonly replica: string;
  readonly model: string;
  readonly blockSize: number;
  readonly logger: Logger;
  readonly onPublished?: (events: readonly KvCacheEvent[]) => void;
  readonly onDropped?: () => void;
}

const encoder = new TextEncoder();

export class KvEventsPublisher {
  private nc?: NatsConnection;
  private pending: KvCacheEvent[] = [];
  private flushScheduled = false;
  private seq = 0;
  private closed = false;

  constructor(private readonly options: KvEventsPublisherOptions) {}

  /** Connects in the background (retrying forever); `connected` turns true on the first connection. */
  start(settings: NatsSettings): void {
    connectNats(settings)
      .then((nc) => {
        if (this.closed) {
          void nc.close();
          return;
        }
        this.nc = nc;
        this.options.logger.info({ subject: this.options.subject }, `KV events: connected to NATS, publishing on ${this.options.subject}`);
        // A restarted replica has an empty cache: tell consumers to forget what it held.
        this.publish([{ type: 'AllBlocksCleared' }]);
        void this.watchStatus(nc);
      })
      .catch((err: unknown) => this.options.logger.error({ err }, `KV events: NATS connection failed: ${(err as Error).message}`));
  }

  get connected(): boolean {
    return this.nc !== undefined && !this.nc.isClosed();
  }

  /** Queues one event; the batch goes out at the end of this event-loop turn. */
  push(event: KvCacheEvent): void {
    if (this.closed) return;
    this.pending.push(event);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    this.publish(events);
  }

  /** Publishes what is queued plus AllBlocksCleared (the replica's cache goes away), then drains. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.publish([{ type: 'AllBlocksCleared' }]);
    this.closed = true;
    const nc = this.nc;
    this.nc = undefined;
    if (nc && !nc.isClosed()) await nc.drain().catch(() => undefined);
  }

  private publish(events: KvCacheEvent[]): void {
    const nc = this.nc;
    if (!nc || nc.isClosed()) {
      this.options.onDropped?.();
      return;
    }
    const batch: KvEventBatch = {
      ts: Date.now() / 1000,
      seq: this.seq++,
      replica: this.options.replica,
      model: this.options.model,
      block_size: this.options.blockSize,
      events,
    };
    const hdrs = natsHeaders();
    hdrs.set(HEADER_EVENT, RawSubjects.kvCacheEvents.type);
    hdrs.set(HEADER_ID, randomUUID());
    injectTraceHeaders(hdrs);
    nc.publish(this.options.subject, encoder.encode(JSON.stringify(batch)), { headers: hdrs });
    this.options.onPublished?.(events);
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') this.options.logger.warn(`KV events: NATS disconnected; events are buffered until it reconnects`);
      else if (status.type === 'reconnect') this.options.logger.info('KV events: NATS reconnected');
    }
  }
}
