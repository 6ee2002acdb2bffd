import { NestFactory } from '@nestjs/core';
import { createLogger, NestJsonLogger } from '@gpufleet/observability';
import { redactConfig } from '@gpufleet/config';
import { AppModule } from './app.module';
import { SchedulerConfig } from './config';

export async function bootstrap(config: SchedulerConfig, stopTracing: () => Promise<void>): Promise<void> {
  const logger = createLogger({ service: 'scheduler', level: config.LOG_LEVEL });
  try {
    const app = await NestFactory.create(AppModule.forRoot(config), { logger: new NestJsonLogger(logger), bufferLogs: false });
    app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
    await app.listen(config.HTTP_PORT, '0.0.0.0');
    logger.info({ config: redactConfig(config) }, `scheduler ready: http :${config.HTTP_PORT}, grpc :${config.GRPC_PORT}`);
    process.once('exit', () => void stopTracing());
  } catch (err) {
    logger.fatal({ err }, `scheduler failed to start: ${(err as Error).message}`);
    await stopTracing();
    process.exit(1);
  }
}
