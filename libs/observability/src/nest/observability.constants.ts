/** Injection token of the service's prom-client `Registry`. */
export const METRICS_REGISTRY = Symbol('gpufleet:metrics-registry');
/** Injection token of the service's pino `Logger`. */
export const LOGGER = Symbol('gpufleet:logger');
/** Injection token of the `ObservabilityModuleOptions` as given to `forRoot`. */
export const OBSERVABILITY_OPTIONS = Symbol('gpufleet:observability-options');

/** Paths served by ObservabilityController; logged at debug only by the HTTP middleware. */
export const PROBE_PATHS: readonly string[] = ['/healthz', '/readyz', '/metrics'];

/** The route the HTTP middleware is mounted on (every path, Nest 11 / path-to-regexp 8 syntax). */
export const ALL_ROUTES = '{*path}';
