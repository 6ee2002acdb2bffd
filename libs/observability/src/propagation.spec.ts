import { SpanStatusCode, trace } from '@opentelemetry/api';
import { activeTraceIds, extractTraceContext, injectTraceHeaders, SpanKind, withSpan } from './propagation';
import { startInMemoryTracing, type InMemorySpanExporter, type StopTracing } from './tracing';

describe('trace propagation over message headers', () => {
  let exporter: InMemorySpanExporter;
  let stop: StopTracing;

  beforeEach(() => {
    ({ exporter, stop } = startInMemoryTracing('propagation-test'));
  });

  afterEach(async () => {
    await stop();
  });

  it('makes the producer span the parent of the consumer span through a Map carrier', async () => {
    const headers = new Map<string, string>();
    await withSpan('gpufleet.dev.devices.inventory publish', SpanKind.PRODUCER, () => injectTraceHeaders(headers));
    expect(headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    await withSpan('gpufleet.dev.devices.inventory process', SpanKind.CONSUMER, () => undefined, extractTraceContext(headers));

    const [producer, consumer] = exporter.getFinishedSpans();
    expect(producer.kind).toBe(SpanKind.PRODUCER);
    expect(consumer.kind).toBe(SpanKind.CONSUMER);
    expect(consumer.spanContext().traceId).toBe(producer.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    expect(consumer.parentSpanContext?.isRemote).toBe(true);
  });

  it('starts a new trace when the message carries no trace headers (nats.js answers "" for a missing header)', async () => {
    const natsLikeHeaders = { get: (_key: string): string => '' };
    await withSpan('consume', SpanKind.CONSUMER, () => undefined, extractTraceContext(natsLikeHeaders));
    const [span] = exporter.getFinishedSpans();
    expect(span.parentSpanContext).toBeUndefined();
  });

  it('nests spans started inside withSpan under it', async () => {
    await withSpan('outer', SpanKind.INTERNAL, () => withSpan('inner', SpanKind.CLIENT, () => undefined));
    const [inner, outer] = exporter.getFinishedSpans();
    expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
  });

  it('returns the value of fn and records attributes', async () => {
    expect(await withSpan('work', SpanKind.INTERNAL, () => 42, undefined, { 'gpufleet.pool': 'h100' })).toBe(42);
    expect(exporter.getFinishedSpans()[0].attributes).toEqual({ 'gpufleet.pool': 'h100' });
  });

  it('records an exception, marks the span as failed and rethrows', async () => {
    await expect(
      withSpan('publish', SpanKind.PRODUCER, async () => {
        throw new Error('no responders');
      }),
    ).rejects.toThrow('no responders');
    const [span] = exporter.getFinishedSpans();
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'no responders' });
    expect(span.events[0].name).toBe('exception');
    expect(span.ended).toBe(true);
  });

  it('exposes the active trace and span ids for logs, and none outside a span', async () => {
    expect(activeTraceIds()).toBeUndefined();
    const ids = await withSpan('x', SpanKind.INTERNAL, (span) => {
      expect(trace.getActiveSpan()).toBe(span);
      return activeTraceIds();
    });
    const [span] = exporter.getFinishedSpans();
    expect(ids).toEqual({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
  });
});

describe('trace propagation without tracing started', () => {
  it('injects nothing and still runs the work', async () => {
    const headers = new Map<string, string>();
    expect(await withSpan('x', SpanKind.PRODUCER, () => (injectTraceHeaders(headers), 'done'))).toBe('done');
    expect(headers.size).toBe(0);
  });
});
