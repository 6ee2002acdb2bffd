import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';

export { SpanKind };
export type { Attributes, Context, Span };

/** Where trace headers are written: nats.js `MsgHdrs`, a `Map`, gRPC metadata wrappers. */
export interface HeaderSetter {
  set(key: string, value: string): unknown;
}

/** Where trace headers are read from. nats.js `MsgHdrs.get` answers `''` for a missing key. */
export interface HeaderGetter {
  get(key: string): string | null | undefined;
}

const setter: TextMapSetter<HeaderSetter> = {
  set: (carrier, key, value) => void carrier.set(key, value),
};

const getter: TextMapGetter<HeaderGetter> = {
  // The W3C propagators only ask for the keys they know; listing is not needed.
  keys: () => [],
  get: (carrier, key) => carrier.get(key) || undefined,
};

/**
 * Writes `traceparent` (and `tracestate`, `baggage` when present) of `ctx` (default: the
 * active context) into the carrier. A no-op until `startTracing` registered a propagator.
 */
export function injectTraceHeaders(carrier: HeaderSetter, ctx: Context = context.active()): void {
  propagation.inject(ctx, carrier, setter);
}

/**
 * The context carried by the headers (on top of `base`, default the active context);
 * pass it as the parent of the consumer's span. Without trace headers it is `base` unchanged.
 */
export function extractTraceContext(carrier: HeaderGetter, base: Context = context.active()): Context {
  return propagation.extract(base, carrier, getter);
}

// Looked up per call, not cached: a cached proxy tracer stays bound to the first provider,
// which breaks when tracing is restarted (tests) or started after this module loaded.
const TRACER_NAME = '@gpufleet/observability';

/**
 * Runs `fn` inside a new active span named `name` (a child of `parentContext`, default the
 * active context) and ends it when `fn` settles. An exception is recorded on the span, marks it
 * as an error and is rethrown. Producers use `SpanKind.PRODUCER` and inject inside `fn`;
 * consumers use `SpanKind.CONSUMER` with the context from `extractTraceContext`.
 */
export async function withSpan<T>(
  name: string,
  kind: SpanKind,
  fn: (span: Span) => Promise<T> | T,
  parentContext: Context = context.active(),
  attributes?: Attributes,
): Promise<T> {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { kind, attributes }, parentContext, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      const exception = error instanceof Error ? error : new Error(String(error));
      span.recordException(exception);
      span.setStatus({ code: SpanStatusCode.ERROR, message: exception.message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The trace and span id of the active span, for log lines and error bodies; undefined when none. */
export function activeTraceIds(ctx: Context = context.active()): { trace_id: string; span_id: string } | undefined {
  const spanContext = trace.getSpanContext(ctx);
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
