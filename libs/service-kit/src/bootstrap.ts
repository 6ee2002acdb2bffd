import type { DynamicModule, INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { redactConfig, type LogLevel } from '@gpufleet/config';
import { createLogger, NestJsonLogger, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle } from './grpc-lifecycle';
import { listenHost } from './listen';
import { exitAfterFailedStart, exitOnShutdownSignal, type FlushTracing } from './shutdown';

/** The variables the bootstrap reads. */
export interface ServiceListenConfig {
  readonly LOG_LEVEL: LogLevel;
  readonly HTTP_PORT: number;
  readonly GRPC_PORT: number;
  /** Port of /healthz, /readyz, /metrics when HTTP_PORT serves something else (the router's API). */
  readonly OPS_PORT?: number;
  /** Address the ops and gRPC servers listen on; default DEFAULT_LISTEN_HOST. */
  readonly HOST?: string;
}

export interface ServiceOptions<C extends ServiceListenConfig = ServiceListenConfig> {
  /** `service` on every log line, and the ready line's first word. */
  readonly service: string;
  /** Validated by instrument.ts; logged (secrets redacted) in the ready line. */
  readonly config: C;
  /** `AppModule.forRoot(config)`: MessagingModule, ObservabilityModule, the GrpcLifecycle provider. */
  readonly module: DynamicModule;
  /** From instrument.ts: flushed last on shutdown and after a failed start (main form only). */
  readonly stopTracing?: FlushTracing;
  /** More listeners for the ready line, read once the app is up, e.g. the router's `{ api }`. */
  readonly ports?: (app: INestApplication) => Record<string, number>;
  /** NestJS's own logs and the bootstrap's lines; default `createLogger({ service, level: LOG_LEVEL })`. */
  readonly logger?: Logger;
}

export interface RunningService {
  readonly app: INestApplication;
  /** /healthz, /readyz, /metrics (OPS_PORT, else HTTP_PORT; the bound port when it was 0). */
  readonly opsPort: number;
  /** The GrpcLifecycle's bound port; undefined for an app without one. */
  readonly grpcPort: number | undefined;
  /** Every listener by name, as the ready line shows them. */
  readonly ports: Readonly<Record<string, number>>;
  /** Graceful stop, as on SIGTERM: readiness 503, drain, gRPC and HTTP closed, NATS drained. */
  close(): Promise<void>;
}

function grpcPortOf(app: INestApplication): number | undefined {
  try {
    return app.get(GrpcLifecycle, { strict: false }).server.port;
  } catch {
    return undefined;
  }
}

/**
 * The function form, for in-process integration tests and for `bootstrapService`: builds the
 * app with JSON logs, runs every module's start-up (gRPC listens once all are initialised) and
 * opens the ops server on OPS_PORT (else HTTP_PORT) at HOST (else DEFAULT_LISTEN_HOST). Resolves
 * once every port is bound; throws on failure after closing what had started. No signal
 * handlers, no process exit.
 */
export async function startService<C extends ServiceListenConfig>(opts: ServiceOptions<C>): Promise<RunningService> {
  const { config } = opts;
  const logger = opts.logger ?? createLogger({ service: opts.service, level: config.LOG_LEVEL });
  // abortOnError false: a failing provider (NATS unreachable) throws here instead of exiting.
  const app = await NestFactory.create(opts.module, { logger: new NestJsonLogger(logger), abortOnError: false });
  try {
    await app.listen(config.OPS_PORT ?? config.HTTP_PORT, listenHost(config));
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const opsPort = (app.getHttpServer().address() as AddressInfo).port;
  const grpcPort = grpcPortOf(app);
  const ports: Record<string, number> = { ...opts.ports?.(app), [config.OPS_PORT === undefined ? 'http' : 'ops']: opsPort };
  if (grpcPort !== undefined) ports.grpc = grpcPort;
  return { app, opsPort, grpcPort, ports, close: () => app.close() };
}

/**
 * main.ts of every NestJS service (after `import './instrument'`): `startService`, then the
 * ready line `<service> ready: http :8080, grpc :50051` with the redacted configuration; on
 * SIGTERM/SIGINT readiness turns 503, the app drains and closes, tracing is flushed last and
 * the process exits 0. A start-up failure logs `<service> failed to start: <reason>` and exits 1.
 */
export async function bootstrapService<C extends ServiceListenConfig>(opts: ServiceOptions<C>): Promise<void> {
  const logger = opts.logger ?? createLogger({ service: opts.service, level: opts.config.LOG_LEVEL });
  let running: RunningService;
  try {
    running = await startService({ ...opts, logger });
  } catch (err) {
    return exitAfterFailedStart(opts.service, logger, err, opts.stopTracing);
  }
  exitOnShutdownSignal({ service: opts.service, logger, stopTracing: opts.stopTracing, stop: () => running.close() });
  const listeners = Object.entries(running.ports).map(([name, port]) => `${name} :${port}`);
  logger.info({ ports: running.ports, config: redactConfig(opts.config) }, `${opts.service} ready: ${listeners.join(', ')}`);
}
