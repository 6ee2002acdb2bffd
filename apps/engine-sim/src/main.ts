// './instrument' must stay the first import: it validates flags and environment and starts tracing.
import { config, ignoredFlags, stopTracing } from './instrument';
import { redactConfig } from '@gpufleet/config';
import { createLogger } from '@gpufleet/observability';
import { exitAfterFailedStart, exitOnShutdownSignal } from '@gpufleet/service-kit/shutdown';
import { CRASH_EXIT_CODE, EngineSimServer } from './server/engine-sim.server';

const logger = createLogger({ service: 'engine-sim', level: config.LOG_LEVEL, base: { replica: config.REPLICA_NAME } });

async function main(): Promise<void> {
  const server = new EngineSimServer({
    config,
    logger,
    onCrash: (answered) => {
      logger.fatal({ answered }, `simulated crash after ${answered} requests (CRASH_AFTER=${config.CRASH_AFTER}); exiting with ${CRASH_EXIT_CODE}`);
      process.exit(CRASH_EXIT_CODE);
    },
  });

  // Not a NestJS service (it stands in for `vllm serve`), but it stops like one: docs/development.md.
  exitOnShutdownSignal({
    service: 'engine-sim',
    logger,
    stopTracing,
    stop: async (signal) => {
      logger.info({ signal }, `${signal}: refusing new requests, finishing ${server.scheduler.running + server.scheduler.waiting} in flight`);
      const { unfinished } = await server.drain();
      if (unfinished > 0) logger.warn({ unfinished }, `drain timeout (DRAIN_TIMEOUT_S=${config.DRAIN_TIMEOUT_S}): ${unfinished} requests cut off`);
    },
  });

  try {
    const port = await server.listen();
    if (ignoredFlags.length > 0) logger.info({ ignored: ignoredFlags }, `ignored vLLM flags with no meaning here: ${ignoredFlags.join(' ')}`);
    logger.info(
      { config: redactConfig(config) },
      `engine-sim ready: http :${port}, model ${config.SERVED_MODEL_NAME?.[0] ?? config.MODEL}, replica ${config.REPLICA_NAME}, ` +
        `tensor-parallel-size ${config.TENSOR_PARALLEL_SIZE}, max-num-seqs ${config.MAX_NUM_SEQS}, kv-cache-blocks ${config.KV_CACHE_BLOCKS}`,
    );
  } catch (err) {
    await exitAfterFailedStart('engine-sim', logger, err, stopTracing);
  }
}

void main();
