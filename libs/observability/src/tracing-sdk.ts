// The OpenTelemetry SDK half of tracing: required by startTracing (tracing.ts) only when spans go
// somewhere (an OTLP endpoint or an exporter), so a process without a collector never loads the
// SDK, the OTLP exporter or the http/grpc instrumentations. Import startTracing, not this file.
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { defaultResource, envDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { otlpTracesUrl, traceContextPropagator, UNTRACED_PATHS, type TracingOptions } from './tracing';

export { InMemorySpanExporter };

/**
 * Registers a NodeTracerProvider (async-hooks context) with the W3C trace-context and baggage
 * propagators, its span processors and, unless `instrumentations` is false, the http and grpc
 * instrumentations. Returns what undoes it: unregisters synchronously, then flushes.
 */
export function startSdkTracing(options: TracingOptions): () => Promise<void> {
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
  provider.register({ propagator: traceContextPropagator() });

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

  return () => {
    unregisterInstrumentations();
    trace.disable();
    propagation.disable();
    context.disable();
    return provider.shutdown();
  };
}
