// Loaded by main.ts before anything else: configuration first (a bad variable stops here with
// a message naming it, exit 78), then tracing, which must patch http and grpc before they are
// loaded (CONVENTIONS #1).
import { startTracing } from '@gpufleet/observability/tracing';
import { loadRouterConfigOrExit } from './config';

export const config = loadRouterConfigOrExit();

// A server span per proxied request costs a large share of the router's throughput (see
// docs/engine-sim.md#tracing for the same trade-off), so the http and grpc instrumentations are
// on only when spans go somewhere. Without them the router still passes `traceparent` on.
export const stopTracing = startTracing({
  serviceName: config.OTEL_SERVICE_NAME ?? 'gpufleet-inference-router',
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  instrumentations: config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined,
  resourceAttributes: { 'gpufleet.cluster': config.GPUFLEET_CLUSTER, 'gpufleet.router': config.ROUTER_NAME },
});
