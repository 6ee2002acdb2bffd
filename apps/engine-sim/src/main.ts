// './instrument' must stay the first import: it validates flags and environment and starts tracing.
import { config, ignoredFlags, stopTracing } from './instrument';
import { redactConfig } from '@gpufleet/config';
import { createLogger } from '@gpufleet/observability';
import { exitAfterFailedStart, exitOnShutdownSignal } from '@gpufleet/service-kit/shutdown';
import { CRASH_EXIT_CODE, EngineSimServer } from './server/engine-sim.server';
import { GroupLeader, GroupWorker, parseAddress, type GroupIdentity } from './group/group';

/** A lost rank or a group that never formed: the engine cannot serve, as a real one could not. */
const GROUP_EXIT_CODE = 1;

const logger = createLogger({ service: 'engine-sim', level: config.LOG_LEVEL, base: { replica: config.REPLICA_NAME } });

function groupFatal(reason: string): never {
  logger.fatal(`engine group: ${reason}; exiting with ${GROUP_EXIT_CODE}`);
  process.exit(GROUP_EXIT_CODE);
}

const identity: GroupIdentity = { nnodes: config.NNODES, rank: config.NODE_RANK, model: config.MODEL };
const rendezvous = config.NNODES > 1 && config.DIST_INIT_ADDR ? parseAddress(config.DIST_INIT_ADDR) : undefined;

/** Ranks 1…n−1 serve no API: they hold their shard and follow the leader. */
function runWorker(leader: { host: string; port: number }): void {
  const worker = new GroupWorker({
    identity,
    leader,
    timeoutMs: config.DIST_TIMEOUT_S * 1000,
    onJoined: (joined) => logger.info(`engine-sim worker ready: rank ${identity.rank} of ${identity.nnodes} joined the leader at ${config.DIST_INIT_ADDR} (${joined} joined)`),
    onFatal: groupFatal,
  });
  exitOnShutdownSignal({ service: 'engine-sim', logger, stopTracing, stop: async () => worker.close() });
  worker.start();
  logger.info(`engine-sim worker rank ${identity.rank} of ${identity.nnodes}: connecting to the leader at ${config.DIST_INIT_ADDR}`);
}

async function main(): Promise<void> {
  if (rendezvous && identity.rank > 0) return runWorker(rendezvous);
  const group = rendezvous
    ? new GroupLeader({
        identity,
        // The leader's own listening address: the rendezvous is reached where the API is.
        host: config.HOST,
        port: rendezvous.port,
        timeoutMs: config.DIST_TIMEOUT_S * 1000,
        onFatal: groupFatal,
        onJoined: (rank, joined) => logger.info(`engine group: rank ${rank} joined (${joined} of ${identity.nnodes})${joined === identity.nnodes ? '; serving' : ''}`),
      })
    : undefined;
  const server = new EngineSimServer({
    config,
    logger,
    ...(group ? { group } : {}),
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
      group?.close();
      const { unfinished } = await server.drain();
      if (unfinished > 0) logger.warn({ unfinished }, `drain timeout (DRAIN_TIMEOUT_S=${config.DRAIN_TIMEOUT_S}): ${unfinished} requests cut off`);
    },
  });

  try {
    if (group) await group.listen();
    const port = await server.listen();
    if (ignoredFlags.length > 0) logger.info({ ignored: ignoredFlags }, `ignored vLLM flags with no meaning here: ${ignoredFlags.join(' ')}`);
    logger.info(
      { config: redactConfig(config) },
      `engine-sim ready: http :${port}, model ${config.SERVED_MODEL_NAME?.[0] ?? config.MODEL}, replica ${config.REPLICA_NAME}, ` +
        `tensor-parallel-size ${config.TENSOR_PARALLEL_SIZE}, ${group ? `leader of ${identity.nnodes} ranks at ${config.DIST_INIT_ADDR}, ` : ''}max-num-seqs ${config.MAX_NUM_SEQS}, kv-cache-blocks ${config.KV_CACHE_BLOCKS}`,
    );
  } catch (err) {
    await exitAfterFailedStart('engine-sim', logger, err, stopTracing);
  }
}

void main();
