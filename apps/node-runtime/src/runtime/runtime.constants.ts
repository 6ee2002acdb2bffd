/** The NodeRuntimeMetrics instance, registered on the service's /metrics registry. */
export const RUNTIME_METRICS = Symbol('RUNTIME_METRICS');
