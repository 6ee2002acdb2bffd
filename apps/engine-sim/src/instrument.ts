// Loaded by main.ts before anything else: flags and environment first (a bad value stops here
// with a message naming the flag and the variable, exit 78), then tracing, which must patch
// http before it is loaded (CONVENTIONS #1).
import { startTracing } from '@gpufleet/observability/tracing';
import { loadEngineSimConfigOrExit } from './cli';

export const { config, ignoredFlags } = loadEngineSimConfigOrExit(process.argv.slice(2));

// Server spans for every request cost more than half of the engine's throughput (11.4k -> 4.8k
// requests/s on a 2-vCPU VM), so the http instrumentation is on only when spans go somewhere (an
// OTLP collector is configured).
export const stopTracing = startTracing({
  serviceName: config.OTEL_SERVICE_NAME ?? 'gpufleet-engine-sim',
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  instrumentations: config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined,
  resourceAttributes: { 'gpufleet.cluster': config.GPUFLEET_CLUSTER, 'gpufleet.replica': config.REPLICA_NAME },
});
