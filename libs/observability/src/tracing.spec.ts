import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { activeTraceIds, extractTraceContext, injectTraceHeaders, withSpan } from './propagation';
import { otlpTracesUrl, startInMemoryTracing, startTracing } from './tracing';

describe('startTracing', () => {
  it('derives the OTLP/HTTP traces URL from the collector base URL', () => {
    expect(otlpTracesUrl('http://otel-collector:4318')).toBe('http://otel-collector:4318/v1/traces');
    expect(otlpTracesUrl('http://otel-collector:4318/')).toBe('http://otel-collector:4318/v1/traces');
    expect(otlpTracesUrl('https://c.example/v1/traces')).toBe('https://c.example/v1/traces');
  });

  it('puts the service name and extra resource attributes on every span', async () => {
    const { exporter, stop } = startInMemoryTracing('scheduler', {
      serviceVersion: '0.1.0',
      resourceAttributes: { 'gpufleet.cluster': 'dev' },
    });
    trace.getTracer('t').startSpan('s').end();
    const [span] = exporter.getFinishedSpans();
    expect(span.resource.attributes).toMatchObject({
      'service.name': 'scheduler',
      'service.version': '0.1.0',
      'gpufleet.cluster': 'dev',
    });
    await stop();
  });

  it('unregisters on stop, so spans are no longer recorded and tracing can start again', async () => {
    const first = startInMemoryTracing('a');
    await first.stop();
    expect(trace.getTracer('t').startSpan('after-stop').isRecording()).toBe(false);

    const second = startInMemoryTracing('b');
    trace.getTracer('t').startSpan('again').end();
    expect(second.exporter.getFinishedSpans().map((s) => s.name)).toEqual(['again']);
    await second.stop();
  });

  it('stops the previous tracing when started twice', async () => {
    const first = new InMemorySpanExporter();
    startTracing({ serviceName: 'a', exporter: first, instrumentations: false });
    const second = startInMemoryTracing('b');
    trace.getTracer('t').startSpan('x').end();
    expect(first.getFinishedSpans()).toEqual([]);
    expect(second.exporter.getFinishedSpans()).toHaveLength(1);
    await second.stop();
  });

  it('records nothing without an endpoint or exporter, but passes an incoming trace context on', async () => {
    const stop = startTracing({ serviceName: 'quiet' });
    const traceparent = '00-f396cdb212fb67d35c2f657ab3e9c3fa-226ce89c08cf97ef-01';
    const outgoing = new Map<string, string>();
    const seen = await withSpan(
      'process gpufleet.dev.devices.inventory',
      SpanKind.CONSUMER,
      (span) => {
        injectTraceHeaders(outgoing);
        return { recording: span.isRecording(), ids: activeTraceIds() };
      },
      extractTraceContext(new Map([['traceparent', traceparent]])),
    );
    expect(seen).toEqual({ recording: false, ids: { trace_id: 'f396cdb212fb67d35c2f657ab3e9c3fa', span_id: '226ce89c08cf97ef' } });
    expect(outgoing.get('traceparent')).toBe(traceparent);

    // Work that started no trace carries none.
    const rootless = new Map<string, string>();
    await withSpan('publish', SpanKind.PRODUCER, () => injectTraceHeaders(rootless));
    expect(rootless.size).toBe(0);
    await stop();
    await stop(); // idempotent
  });
});

describe('what tracing loads', () => {
  const repoRoot = resolve(__dirname, '../../..');
  const loaded = async (mode: string): Promise<string[]> => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-r', '@swc-node/register', 'libs/observability/src/__fixtures__/loaded-packages.ts', mode],
      { cwd: repoRoot, timeout: 60_000 },
    );
    return JSON.parse(stdout) as string[];
  };
  const sdk = (packages: string[]) => packages.filter((p) => !['@opentelemetry/api', '@opentelemetry/context-async-hooks', '@opentelemetry/core'].includes(p));

  it('loads no OpenTelemetry SDK, exporter or instrumentation without an endpoint', async () => {
    const packages = await loaded('off');
    expect(packages).toContain('@opentelemetry/api');
    expect(sdk(packages)).toEqual([]);
  }, 70_000);

  it('loads the SDK, the OTLP exporter and the instrumentations with an endpoint', async () => {
    expect(sdk(await loaded('otlp'))).toEqual(
      expect.arrayContaining(['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/instrumentation-http']),
    );
  }, 70_000);
});

interface ChildSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  service: string;
  node?: string;
}

describe('tracing in a real service process', () => {
  const repoRoot = resolve(__dirname, '../../..');
  let result: { spans: ChildSpan[]; logs: Record<string, unknown>[] };

  beforeAll(async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-r', 'reflect-metadata', '-r', '@swc-node/register', 'libs/observability/src/__fixtures__/traced-service.ts'],
      { cwd: repoRoot, timeout: 60_000, env: { ...process.env, OTEL_RESOURCE_ATTRIBUTES: 'k8s.node.name=gpu-1' } },
    );
    result = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as typeof result;
  }, 70_000);

  it('traces incoming HTTP requests with the matched route, continuing the caller’s trace', () => {
    const server = result.spans.find((s) => s.kind === SpanKind.SERVER);
    const client = result.spans.find((s) => s.kind === SpanKind.CLIENT && s.traceId === server?.traceId);
    expect(server).toMatchObject({ name: 'GET /pools/:name', service: 'traced-service', node: 'gpu-1' });
    expect(server?.attributes['http.route']).toBe('/pools/:name');
    expect(server?.parentSpanId).toBe(client?.spanId);
  });

  it('does not trace probes', () => {
    const servers = result.spans.filter((s) => s.kind === SpanKind.SERVER);
    expect(servers).toHaveLength(1);
  });

  it('writes the trace id of the request into its log line', () => {
    const server = result.spans.find((s) => s.kind === SpanKind.SERVER);
    const line = result.logs.find((l) => l.msg === 'GET /pools/h100 200');
    expect(line).toMatchObject({ trace_id: server?.traceId, span_id: server?.spanId });
  });
});
