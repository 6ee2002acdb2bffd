// main.ts of the demo service: the main form of the shared bootstrap.
import { bootstrapService } from '../index';
import { demoLogger, demoModule, type DemoConfig } from './demo-service';

const config: DemoConfig = {
  LOG_LEVEL: 'info',
  HTTP_PORT: Number(process.env.HTTP_PORT),
  GRPC_PORT: Number(process.env.GRPC_PORT),
  HOST: '127.0.0.1',
  FAIL: process.env.DEMO_FAIL === '1',
};
const logger = demoLogger(config);

void bootstrapService({
  service: 'demo',
  config,
  logger,
  module: demoModule(config, logger),
  stopTracing: async () => {
    logger.info('tracing flushed');
  },
});
