// Loaded by main.ts before anything else: configuration first (a bad variable stops here with
// a message naming it), then tracing, which must patch http and grpc before NestJS loads them
// (CONVENTIONS #1).
import { loadConfigOrExit } from '@gpufleet/config';
import { startTracing } from '@gpufleet/observability/tracing';
import { deliveryConfigSchema } from './config';

export const config = loadConfigOrExit(deliveryConfigSchema);
export const stopTracing = startTracing({
  serviceName: config.OTEL_SERVICE_NAME ?? 'gpufleet-model-delivery',
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
});
