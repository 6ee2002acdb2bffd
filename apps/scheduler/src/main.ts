// Configuration first (a bad variable stops here with a message naming it), then tracing,
// then NestJS: instrumentation must patch http/grpc before they are loaded (CONVENTIONS #1).
import { loadConfigOrExit } from '@gpufleet/config';
import { startTracing } from '@gpufleet/observability/tracing';
import { schedulerConfigSchema } from './config';

const config = loadConfigOrExit(schedulerConfigSchema);
const stopTracing = startTracing({
  serviceName: config.OTEL_SERVICE_NAME ?? 'gpufleet-scheduler',
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
(require('./bootstrap') as typeof import('./bootstrap')).bootstrap(config, stopTracing);
