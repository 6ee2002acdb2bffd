// Tracing must start before NestJS, http and @grpc/grpc-js are loaded: see startTracing. The
// OpenTelemetry SDK loads only when tracing exports (tracing.ts); nothing here pulls it in.
export {
  otlpTracesUrl,
  startInMemoryTracing,
  startTracing,
  UNTRACED_PATHS,
  type InMemorySpanExporter,
  type ReadableSpan,
  type SpanExporter,
  type StopTracing,
  type TracingOptions,
} from './tracing';
export {
  activeTraceIds,
  extractTraceContext,
  injectTraceHeaders,
  SpanKind,
  withSpan,
  type Attributes,
  type Context,
  type HeaderGetter,
  type HeaderSetter,
  type Span,
} from './propagation';
export {
  createLogger,
  NestJsonLogger,
  REDACTED_LOG_VALUE,
  redactionPaths,
  SECRET_LOG_KEYS,
  type DestinationStream,
  type Logger,
  type LoggerOptions,
  type LogLevel,
} from './logging';
export {
  Counter,
  createCounter,
  createGauge,
  createHistogram,
  createMetricsRegistry,
  Gauge,
  Histogram,
  METRIC_PREFIX,
  metricName,
  Registry,
  type MetricsRegistryOptions,
} from './metrics';
export {
  CounterSeries,
  createSeriesCounter,
  createSeriesHistogram,
  HistogramSeries,
  SeriesCounter,
  SeriesHistogram,
  type SeriesMetricOptions,
} from './series-metrics';
export {
  DEFAULT_READINESS_TIMEOUT_MS,
  evaluateReadiness,
  readinessBody,
  type ReadinessBody,
  type ReadinessCheck,
  type ReadinessReport,
  type ReadinessResult,
} from './health';
export { ObservabilityModule } from './nest/observability.module';
export { ObservabilityController } from './nest/observability.controller';
export { HttpObservabilityMiddleware } from './nest/http-observability.middleware';
export { Readiness } from './nest/readiness.service';
export { LOGGER, METRICS_REGISTRY, OBSERVABILITY_OPTIONS, PROBE_PATHS } from './nest/observability.constants';
export type { ObservabilityModuleAsyncOptions, ObservabilityModuleOptions } from './nest/observability.options';
