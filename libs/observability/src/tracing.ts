// Tracing for a service process: `startTracing` from instrument.ts, before NestJS, http and
// @grpc/grpc-js are loaded (CONVENTIONS #1). The OpenTelemetry SDK, the OTLP exporter and the
// http/grpc instrumentations are required only when spans go somewhere (an OTLP endpoint or an
// exporter: tracing-sdk.ts); without them this module loads @opentelemetry/api, the async-hooks
// context manager and core's W3C propagators, and nothing records spans (docs/operations.md,
// "Memory per component"). The propagators come from their own files of @opentelemetry/core
// (pinned): its index also loads @opentelemetry/semantic-conventions, 380 KiB of constants.
// tracing.spec.ts checks what loads in each mode.
import { context, propagation, type Attributes, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CBaggagePropagator } from '@opentelemetry/core/build/src/baggage/propagation/W3CBaggagePropagator';
import { CompositePropagator } from '@opentelemetry/core/build/src/propagation/composite';
import { W3CTraceContextPropagator } from '@opentelemetry/core/build/src/trace/W3CTraceContextPropagator';
import type { InMemorySpanExporter, SpanExporter } from '@opentelemetry/sdk-trace-node';

export type { InMemorySpanExporter, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';

/** Paths whose incoming requests are not traced: probes and scrapes would drown real traffic. */
export const UNTRACED_PATHS: readonly string[] = ['/healthz', '/readyz', '/metrics'];

export interface TracingOptions {
  /** `service.name` on every span (use `OTEL_SERVICE_NAME` when set). */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /**
   * OTLP/HTTP collector base URL, e.g. `http://otel-collector:4318` (`/v1/traces` is appended
   * unless already there). Without it, and without `exporter`, no span is recorded and the SDK is
   * not loaded: a trace context that arrives (an event's `traceparent`) is still the active
   * context of its handler, so what the handler logs and publishes carries it on.
   */
  readonly otlpEndpoint?: string;
  /** An extra exporter, flushed span by span (SimpleSpanProcessor): tests pass an `InMemorySpanExporter`. */
  readonly exporter?: SpanExporter;
  /**
   * Register the http and grpc instrumentations (default true) when spans go somewhere. Probes
   * are not traced: HTTP `UNTRACED_PATHS` and the gRPC health `Check` and reflection methods.
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

/** W3C trace context and baggage, with or without the SDK. */
export function traceContextPropagator(): TextMapPropagator {
  return new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] });
}

/** Without the SDK: the context manager and propagators only, so trace context passes through. */
function startContextPropagation(): () => Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(traceContextPropagator());
  return async () => {
    propagation.disable();
    context.disable();
  };
}

/**
 * Starts tracing for this process (see the top of this file for what loads when). Calling it
 * again first stops the previous one.
 */
export function startTracing(options: TracingOptions): StopTracing {
  if (active) void active();

  const exporting = Boolean(options.otlpEndpoint) || options.exporter !== undefined;
  const unregister = exporting
    ? (require('./tracing-sdk') as typeof import('./tracing-sdk')).startSdkTracing(options)
    : startContextPropagation();

  let stopped: Promise<void> | undefined;
  const stop: StopTracing = () => {
    // Unregister synchronously, so a startTracing right after (without awaiting) is not undone;
    // spans already ended are still flushed.
    if (!stopped) {
      if (active === stop) active = undefined;
      stopped = unregister();
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
  const { InMemorySpanExporter } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  const exporter = new InMemorySpanExporter();
  const stop = startTracing({ instrumentations: false, ...options, serviceName, exporter });
  return { exporter, stop };
}
