import { context, propagation, trace, type Attributes } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { defaultResource, envDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

export { InMemorySpanExporter };
export type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';

/** Paths whose incoming requests are not traced: probes and scrapes would drown real traffic. */
export const UNTRACED_PATHS: readonly string[] = ['/healthz', '/readyz', '/metrics'];

export interface TracingOptions {
  /** `service.name` on every span (use `OTEL_SERVICE_NAME` when set). */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /**
   * OTLP/HTTP collector base URL, e.g. `http://otel-collector:4318` (`/v1/traces` is appended
   * unless already there). Without it, and without `exporter`, spans are created (so trace ids
   * reach logs and propagate downstream) but exported nowhere.
   */
  readonly otlpEndpoint?: string;
  /** An extra exporter, flushed span by span (SimpleSpanProcessor): tests pass an `InMemorySpanExporter`. */
  readonly exporter?: SpanExporter;
  /**
   * Register the http and grpc instrumentations (default true). Probes are not traced:
   * HTTP `UNTRACED_PATHS` and the gRPC health `Check` and reflection methods.
   */
  readonly instrumentations?: boolean;
  /** Added to the resource, e.g. `{ 'gpufleet.cluster': 'dev' }`. `OTEL_RESOURCE_ATTRIBUTES` is read too. */
  readonly resourceAttributes?: Attributes;
}

/** Flushes pending spans and unregisters everything `startTracing` registered. */
export type StopTracing = () => Promise<void>;

let active: StopTracing | undefined;

/** The OTLP/HTTP traces URL for a collector base URL. */
export function otlpTracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * Starts OpenTelemetry tracing for this process. Call it as the first statement of `main.ts`,
 * before NestJS, `http` users or `@grpc/grpc-js` are loaded (CONVENTIONS #1), so the
 * instrumentations can patch them. Registers a NodeTracerProvider (async-hooks context) with
 * the W3C trace-context and baggage propagators. Calling it again first stops the previous one.
 */
export function startTracing(options: TracingOptions): StopTracing {
  if (active) void active();

  const spanProcessors: SpanProcessor[] = [];
  if (options.otlpEndpoint) {
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: otlpTracesUrl(options.otlpEndpoint) })));
  }
  if (options.exporter) spanProcessors.push(new SimpleSpanProcessor(options.exporter));

  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(
      resourceFromAttributes({
        ...options.resourceAttributes,
        [ATTR_SERVICE_NAME]: options.serviceName,
        ...(options.serviceVersion ? { [ATTR_SERVICE_VERSION]: options.serviceVersion } : {}),
      }),
    );

  const provider = new NodeTracerProvider({ resource, spanProcessors });
  provider.register({
    propagator: new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
  });

  let unregisterInstrumentations = (): void => undefined;
  if (options.instrumentations !== false) {
    const instrumentations: Instrumentation[] = [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.includes((request.url ?? '').split('?')[0]),
      }),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'ServerReflectionInfo'] }),
    ];
    unregisterInstrumentations = registerInstrumentations({ tracerProvider: provider, instrumentations });
  }

  let stopped: Promise<void> | undefined;
  const stop: StopTracing = () => {
    if (!stopped) {
      // Unregister synchronously, so a startTracing right after (without awaiting) is not undone;
      // spans already ended are still flushed by the shutdown.
      if (active === stop) active = undefined;
      unregisterInstrumentations();
      trace.disable();
      propagation.disable();
      context.disable();
      stopped = provider.shutdown();
    }
    return stopped;
  };
  active = stop;
  return stop;
}

/** Tracing for tests: every finished span lands in `exporter`; no instrumentations by default. */
export function startInMemoryTracing(
  serviceName = 'test',
  options: Omit<TracingOptions, 'serviceName' | 'exporter'> = {},
): { exporter: InMemorySpanExporter; stop: StopTracing } {
  const exporter = new InMemorySpanExporter();
  const stop = startTracing({ instrumentations: false, ...options, serviceName, exporter });
  return { exporter, stop };
}
