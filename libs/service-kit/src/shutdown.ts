// Process-level start and stop for every gpufleet process: the NestJS services (through
// bootstrapService) and engine-sim's raw-http main. No NestJS import here, so that engine-sim can
// load it (`@gpufleet/service-kit/shutdown`) without loading the framework.
import type { Logger } from '@gpufleet/observability';

/** Flushes the spans still buffered; `stopTracing` from the app's instrument.ts. */
export type FlushTracing = () => Promise<void>;

export const SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

export interface ShutdownOptions {
  /** Names the process in the last line: `<service> stopped`. */
  readonly service: string;
  readonly logger: Logger;
  /** Stops taking work and drains (readiness 503 first); tracing is flushed after it. */
  readonly stop: (signal: NodeJS.Signals) => Promise<void>;
  readonly stopTracing?: FlushTracing;
}

/**
 * On the first SIGTERM or SIGINT: `stop`, then flush tracing (last, so the drain's spans go
 * out), then exit 0; exit 1 when `stop` fails. Further signals while stopping are ignored, so
 * a supervisor's SIGTERM after a terminal's SIGINT does not cut the drain short.
 * Returns a function that removes the handlers.
 */
export function exitOnShutdownSignal(options: ShutdownOptions): () => void {
  const { logger, service } = options;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.info({ signal }, `${signal}: already stopping`);
      return;
    }
    stopping = true;
    void (async () => {
      let code = 0;
      try {
        await options.stop(signal);
      } catch (err) {
        code = 1;
        logger.error({ err, signal }, `${service} did not stop cleanly: ${(err as Error).message}`);
      }
      await options.stopTracing?.().catch(() => undefined);
      if (code === 0) logger.info({ signal }, `${service} stopped`);
      process.exit(code);
    })();
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
  return () => {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onSignal);
  };
}

/** A start that failed: the reason as the last log line (`gpufleet up` quotes it), flush tracing, exit 1. */
export async function exitAfterFailedStart(service: string, logger: Logger, err: unknown, stopTracing?: FlushTracing): Promise<never> {
  logger.fatal({ err }, `${service} failed to start: ${err instanceof Error ? err.message : String(err)}`);
  await stopTracing?.().catch(() => undefined);
  return process.exit(1);
}
