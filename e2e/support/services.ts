import { mkdtempSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import { CapacityServiceClient, InstanceType } from '@gpufleet/contracts';
import { callUnary, channelCredentials, clientOptions } from '@gpufleet/grpc-kit';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { ManagedProcess, ProcessGroup, StopWaiting, freePort, logTail, waitFor } from '@gpufleet/testing';

export const REPO_ROOT = resolve(__dirname, '../..');
export const DEV_FLEET = join(REPO_ROOT, 'examples/fleets/dev.yaml');

/**
 * Real service processes for end-to-end tests, run from the build as `gpufleet up` and the images
 * run them (built first when stale); logs go to a temp dir printed on failure.
 */
export class ServiceStack {
  readonly group = new ProcessGroup();
  readonly logs = mkdtempSync(join(tmpdir(), 'gpufleet-e2e-'));

  constructor(readonly natsUrl: string, readonly cluster = 'dev') {}

  private async start(name: string, app: string, env: Record<string, string>): Promise<ManagedProcess> {
    return this.group.start({
      name,
      command: process.execPath,
      args: await freshServiceArgs(app, REPO_ROOT),
      cwd: REPO_ROOT,
      env: { ...process.env, GPUFLEET_CLUSTER: this.cluster, NATS_URL: this.natsUrl, LOG_LEVEL: 'info', ...env },
      logFile: join(this.logs, `${name.replace('/', '-')}.log`),
    });
  }

  async scheduler(env: Record<string, string> = {}): Promise<{ proc: ManagedProcess; address: string; http: string }> {
    const grpc = await freePort();
    const http = await freePort();
    const proc = await this.start('scheduler', 'scheduler', { GRPC_PORT: String(grpc), HTTP_PORT: String(http), ...env });
    await waitReady(proc, `http://127.0.0.1:${http}`);
    return { proc, address: `127.0.0.1:${grpc}`, http: `http://127.0.0.1:${http}` };
  }

  async agent(node: string, env: Record<string, string> = {}): Promise<{ proc: ManagedProcess; http: string }> {
    const http = await freePort();
    const proc = await this.start(`agent/${node}`, 'device-discovery', {
      NODE_NAME: node,
      GPUFLEET_PROVIDERS: 'simulated',
      GPUFLEET_FLEET_FILE: DEV_FLEET,
      HTTP_PORT: String(http),
      GRPC_PORT: String(await freePort()),
      ...env,
    });
    await waitReady(proc, `http://127.0.0.1:${http}`);
    return { proc, http: `http://127.0.0.1:${http}` };
  }

  /** An inference-router process on free ports; `ops` serves /readyz and /metrics. */
  async router(redisUrl: string, env: Record<string, string> = {}): Promise<{ proc: ManagedProcess; base: string; ops: string; grpc: string }> {
    const [http, ops, grpc] = [await freePort(), await freePort(), await freePort()];
    const proc = await this.start('router', 'inference-router', { REDIS_URL: redisUrl, HTTP_PORT: String(http), OPS_PORT: String(ops), GRPC_PORT: String(grpc), ...env });
    await waitReady(proc, `http://127.0.0.1:${ops}`);
    return { proc, base: `http://127.0.0.1:${http}`, ops: `http://127.0.0.1:${ops}`, grpc: `127.0.0.1:${grpc}` };
  }

  /** An engine-sim process serving `model` without delays. */
  async engineSim(model: string): Promise<{ proc: ManagedProcess; endpoint: string }> {
    const port = await freePort();
    const proc = await this.group.start({
      name: `engine-sim/${model}`,
      command: process.execPath,
      args: [...(await freshServiceArgs('engine-sim', REPO_ROOT)), '--model', model, '--port', String(port), '--host', '127.0.0.1', '--prefill-us-per-token', '0', '--itl-ms', '0'],
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn', NATS_URL: '' },
      logFile: join(this.logs, `engine-sim-${model.replace(/\W/g, '-')}.log`),
    });
    const endpoint = `http://127.0.0.1:${port}`;
    await waitReady(proc, endpoint);
    return { proc, endpoint };
  }

  stop(): Promise<void> {
    return this.group.stopAll(10_000);
  }
}

export async function waitReady(proc: ManagedProcess, base: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${proc.spec.name} /readyz (log: ${proc.spec.logFile})`,
    async () => {
      if (proc.child.exitCode !== null) {
        throw new StopWaiting(`${proc.spec.name} exited with ${proc.child.exitCode}: ${logTail(proc.spec.logFile).join(' | ')}; see ${proc.spec.logFile}`);
      }
      const res = await fetch(`${base}/readyz`).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

export function capacityClient(address: string): CapacityServiceClient {
  return new CapacityServiceClient(address, channelCredentials(), clientOptions());
}

export async function instanceTypes(client: CapacityServiceClient): Promise<InstanceType[]> {
  return (await callUnary(client, client.listInstanceTypes, { pool: '', pageSize: 0, pageToken: '' })).instanceTypes;
}

/** Whole-accelerator capacity of every 1x InstanceType, by accelerator product. */
export async function wholeCapacityByProduct(client: CapacityServiceClient): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of await instanceTypes(client)) {
    if (t.unit?.accelerators === 1) out[t.acceleratorProduct] = (out[t.acceleratorProduct] ?? 0) + (t.capacity?.whole?.capacity ?? 0);
  }
  return out;
}
