// Starts the node runtime in-process for integration tests: the real module (NATS, HTTP, gRPC,
// the reconcile loop), configured from an env map exactly as main.ts would be from the
// environment. Processes it starts are real children; close() detaches from them like a SIGTERM.
import { readFileSync } from 'fs';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { NatsConnection } from 'nats';
import { Accelerator, AcceleratorVendor, Buckets, NodeInventory, NodeLedger, NodeRuntimeReport, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import { loadConfig } from '@gpufleet/config';
import { KvStore } from '@gpufleet/messaging';
import { createLogger, NestJsonLogger } from '@gpufleet/observability';
import { freePort, waitFor } from '@gpufleet/testing';
import { AppModule } from '../app.module';
import { nodeNamesOf, nodeRuntimeConfigSchema, stateDirOf, type NodeRuntimeConfig } from '../config';

export interface NodeRuntimeUnderTest {
  readonly app: INestApplication;
  readonly config: NodeRuntimeConfig;
  /** http://127.0.0.1:<HTTP_PORT> */
  readonly url: string;
  /** As on SIGTERM: supervision ends, the pods keep running for the next runtime. */
  close(): Promise<void>;
}

/**
 * `env` needs NODE_NAME, NATS_URL and STATE_DIR; HTTP_PORT and GRPC_PORT default to free ports,
 * LOG_LEVEL to `error` (NODE_RUNTIME_TEST_LOG_LEVEL=info shows the runtime's log while debugging).
 * Resolves once /readyz answers 200: watches synced and earlier processes adopted, which needs
 * the node's inventory in the nodes bucket, so write it first.
 */
export async function startNodeRuntime(env: Record<string, string>, options: { waitReady?: boolean } = {}): Promise<NodeRuntimeUnderTest> {
  const config = loadConfig(nodeRuntimeConfigSchema, {
    LOG_LEVEL: process.env.NODE_RUNTIME_TEST_LOG_LEVEL ?? 'error',
    HTTP_PORT: String(await freePort()),
    GRPC_PORT: String(await freePort()),
    ...env,
  });
  const app = await NestFactory.create(AppModule.forRoot(config), { logger: new NestJsonLogger(createLogger({ service: 'node-runtime', level: config.LOG_LEVEL })) });
  await app.listen(config.HTTP_PORT, '127.0.0.1');
  const url = `http://127.0.0.1:${config.HTTP_PORT}`;
  if (options.waitReady !== false) await waitFor(`node runtime ${config.NODE_NAME} /readyz`, async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200 || undefined, {
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  return { app, config, url, close: () => app.close() };
}

/** The buckets a node runtime reads and writes, as a test (standing in for the scheduler and the agents) opens them. */
export interface RuntimeBuckets {
  nodes: KvStore<NodeInventory>;
  ledger: KvStore<NodeLedger>;
  workloads: KvStore<Workload>;
  pods: KvStore<PodRuntimeStatus>;
  runtimes: KvStore<NodeRuntimeReport>;
}

export async function openRuntimeBuckets(nc: NatsConnection, cluster: string): Promise<RuntimeBuckets> {
  const js = nc.jetstream();
  return {
    nodes: await KvStore.open(js, Buckets.nodes(cluster), NodeInventory),
    ledger: await KvStore.open(js, Buckets.ledger(cluster), NodeLedger),
    workloads: await KvStore.open(js, Buckets.workloads(cluster), Workload),
    pods: await KvStore.open(js, Buckets.pods(cluster), PodRuntimeStatus),
    runtimes: await KvStore.open(js, Buckets.runtimes(cluster), NodeRuntimeReport),
  };
}

/** SIGKILL to every process group the runtime's state files (one per node) still list: test cleanup, nothing left behind. */
export function killRecordedProcesses(config: Pick<NodeRuntimeConfig, 'STATE_DIR' | 'NODE_NAME'> & { SIMULATED_NODES?: readonly string[] }): void {
  const entries: Array<{ pid: number }> = [];
  for (const node of nodeNamesOf(config)) {
    try {
      entries.push(...(JSON.parse(readFileSync(`${stateDirOf(config, node)}/processes.json`, 'utf8')) as { entries: Array<{ pid: number }> }).entries);
    } catch {
      // no state file: nothing was started there
    }
  }
  for (const { pid } of entries) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** A simulated node's inventory (the `simulated` provider: engines are engine-sim) with NVIDIA GPUs `indexes` (`nvidia-<i>`, 80 GB). */
export function simulatedInventory(node: string, cluster: string, indexes: readonly number[]): NodeInventory {
  return {
    ...NodeInventory.fromJSON({}),
    nodeName: node,
    cluster,
    accelerators: indexes.map((index) => ({ ...Accelerator.fromJSON({}), id: `nvidia-${index}`, vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, index, uuid: `GPU-${index}`, memoryMib: 81_559 })),
    providers: [{ provider: 'simulated', ok: true, error: '', lastSuccess: undefined, lastAttempt: undefined }],
  };
}
