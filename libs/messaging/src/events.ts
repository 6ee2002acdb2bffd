import { randomUUID } from 'crypto';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { EventDefinition, EVENTS_STREAM, EVENTS_STREAM_SUBJECTS, everyClusterSubjectOf, publishSubjectOf, scopeOfSubject, subjectOf } from '@gpufleet/contracts';
import { JetStreamManager, Msg, NatsConnection, RetentionPolicy, StorageType, Subscription, headers as natsHeaders } from 'nats';
import { extractTraceContext, injectTraceHeaders } from '@gpufleet/observability';
import { isPermissionDenied } from './kv-store';

export const HEADER_EVENT = 'gpufleet-event';
export const HEADER_ID = 'gpufleet-id';

const tracer = trace.getTracer('gpufleet-messaging');
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A received event: the decoded payload plus its envelope. */
export interface ReceivedEvent<T> {
  payload: T;
  id: string;
  type: string;
  subject: string;
}

/** Why an incoming message was rejected (malformed JSON, wrong type header, invalid payload). */
export class InvalidEventError extends Error {
  constructor(
    readonly subject: string,
    reason: string,
  ) {
    super(`INVALID_EVENT: message on ${subject} rejected: ${reason}`);
  }
}

/** Parses and validates one message against its event definition. */
export function decodeEvent<T>(def: EventDefinition<T>, msg: Pick<Msg, 'subject' | 'data' | 'headers'>): ReceivedEvent<T> {
  const type = msg.headers?.get(HEADER_EVENT) ?? '';
  if (!type) throw new InvalidEventError(msg.subject, `header ${HEADER_EVENT} is missing, expected "${def.type}"`);
  if (type !== def.type) {
    throw new InvalidEventError(msg.subject, `header ${HEADER_EVENT} is "${type}", expected "${def.type}"`);
  }
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(msg.data));
  } catch (err) {
    throw new InvalidEventError(msg.subject, `payload is not JSON (${(err as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new InvalidEventError(msg.subject, 'payload must be a JSON object');
  }
  const payload = def.codec.fromJSON(json);
  // A node-scoped event is trusted only for the node its subject names: that is what the
  // publisher's NATS identity was allowed to publish.
  if (def.scopeOf && scopeOfSubject(def, msg.subject) !== def.scopeOf(payload)) {
    throw new InvalidEventError(msg.subject, `its payload names node ${JSON.stringify(def.scopeOf(payload))}, the subject node ${JSON.stringify(scopeOfSubject(def, msg.subject))}`);
  }
  return { payload, id: msg.headers?.get(HEADER_ID) ?? '', type: def.type, subject: msg.subject };
}

export interface SubscribeOptions {
  /** Queue group for work-sharing consumers; omit when every replica needs every event. */
  queue?: string;
  /** Called for messages that fail validation; they are dropped, never passed on. */
  onInvalid?: (err: InvalidEventError) => void;
  /** Called when the handler throws. */
  onError?: (err: unknown, subject: string) => void;
}

/**
 * Typed publisher and subscriber for gpufleet events (CONVENTIONS #5, #6): payloads are the
 * proto messages as proto3 canonical JSON, with `gpufleet-event`, `gpufleet-id` and W3C
 * `traceparent` headers.
 */
export class EventBus {
  private readonly subscriptions: Subscription[] = [];

  constructor(
    private readonly nc: NatsConnection,
    readonly cluster: string,
  ) {}

  publish<T>(def: EventDefinition<T>, payload: T): string {
    const subject = publishSubjectOf(def, this.cluster, payload);
    const id = randomUUID();
    const span = tracer.startSpan(`publish ${subject}`, {
      kind: SpanKind.PRODUCER,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'messaging.message.id': id },
    });
    try {
      const hdrs = natsHeaders();
      hdrs.set(HEADER_EVENT, def.type);
      hdrs.set(HEADER_ID, id);
      injectTraceHeaders(hdrs, trace.setSpan(context.active(), span));
      this.nc.publish(subject, encoder.encode(JSON.stringify(def.codec.toJSON(payload))), { headers: hdrs });
      return id;
    } finally {
      span.end();
    }
  }

  /** Subscribes to one event kind of this cluster (or of every cluster with `cluster: '*'`). */
  subscribe<T>(
    def: EventDefinition<T>,
    handler: (event: ReceivedEvent<T>) => void | Promise<void>,
    options: SubscribeOptions & { cluster?: string } = {},
  ): Subscription {
    const subject = options.cluster === '*' ? everyClusterSubjectOf(def) : subjectOf(def, options.cluster ?? this.cluster);
    const sub = this.nc.subscribe(subject, {
      queue: options.queue,
      callback: (err, msg) => {
        if (err) {
          options.onError?.(err, subject);
          return;
        }
        let event: ReceivedEvent<T>;
        try {
          event = decodeEvent(def, msg);
        } catch (e) {
          if (e instanceof InvalidEventError) options.onInvalid?.(e);
          else options.onError?.(e, msg.subject);
          return;
        }
        const parent = msg.headers ? extractTraceContext(msg.headers) : context.active();
        const span = tracer.startSpan(
          `process ${msg.subject}`,
          { kind: SpanKind.CONSUMER, attributes: { 'messaging.system': 'nats', 'messaging.message.id': event.id } },
          parent,
        );
        context.with(trace.setSpan(parent, span), async () => {
          try {
            await handler(event);
          } catch (e) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
            options.onError?.(e, msg.subject);
          } finally {
            span.end();
          }
        });
      },
    });
    this.subscriptions.push(sub);
    return sub;
  }

  /** Waits until the server has seen everything published so far. */
  flush(): Promise<void> {
    return this.nc.flush();
  }
}

/**
 * Creates the GPUFLEET_EVENTS stream, when missing, so every event is retained for replay.
 * An existing stream is not changed: operators may tune its limits.
 */
export async function ensureEventsStream(jsm: JetStreamManager, maxAgeSeconds = 7 * 24 * 3600): Promise<void> {
  const config = {
    name: EVENTS_STREAM,
    subjects: EVENTS_STREAM_SUBJECTS,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: maxAgeSeconds * 1_000_000_000, // nanoseconds
    // Heartbeats are frequent and worthless after a while; keep the stream bounded.
    max_msgs_per_subject: 100_000,
  };
  try {
    // Exists: leave it as it is, so an operator's retention settings survive service restarts,
    // but for subjects it lacks (node-scoped device events came later).
    const info = await jsm.streams.info(EVENTS_STREAM);
    const missing = EVENTS_STREAM_SUBJECTS.filter((s) => !info.config.subjects?.includes(s));
    if (missing.length > 0) {
      await jsm.streams.update(EVENTS_STREAM, { ...info.config, subjects: [...(info.config.subjects ?? []), ...missing] }).catch((updateErr: unknown) => {
        if (!isPermissionDenied(updateErr)) throw updateErr;
      });
    }
  } catch (err) {
    if (!/stream not found/i.test((err as Error).message)) throw err;
    try {
      await jsm.streams.add(config);
    } catch (addErr) {
      // Another service created it between our info and add, or this identity may not create
      // streams: the control plane (scheduler) does (docs/security.md); events published before
      // then are delivered to subscribers, only not retained.
      if (isPermissionDenied(addErr)) return;
      if (!/already in use|exists/i.test((addErr as Error).message)) throw addErr;
    }
  }
}
