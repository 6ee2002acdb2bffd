// Integration harness: real nats-server and redis-server (ephemeral), real engine-sim processes
// and routers started in-process through createRouter, as main.ts does. Deployments are written
// straight into the deployments bucket, which is the contract the scheduler fulfils.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import {
  ApiKeyRecord,
  Buckets,
  type CreateKeyRequest,
  type CreateKeyResponse,
  KeyServiceClient,
  ModelDeployment,
  type ReplicaStatus,
  storeKey,
  workloadKey,
} from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, ProcessGroup, startNats, startRedis, waitFor, type ManagedProcess, type RunningServer } from '@gpufleet/testing';
import { createRouter, type RunningRouter } from '../bootstrap';
import { loadRouterConfig } from '../config';

const REPO_ROOT = resolve(__dirname, '../../../..');

export interface EngineSim {
  readonly name: string;
  readonly port: number;
  readonly endpoint: string;
  readonly proc: ManagedProcess;
  log(): string;
}

export interface TestRouter extends RunningRouter {
  readonly base: string;
  readonly grpc: InstanceType<typeof KeyServiceClient>;
}

export interface DeploymentOptions {
  readonly namespace?: string;
  /** Replica states by endpoint (default Ready). */
  readonly states?: Readonly<Record<string, string>>;
  /** Role of every replica (default server); `pd` makes the first `prefillReplicas` endpoints prefill and the rest decode. */
  readonly roles?: 'server' | 'pd';
  /** With `roles: 'pd'`: how many leading endpoints are prefill replicas (default 1). */
  readonly prefillReplicas?: number;
  readonly model?: string;
}

let clusterCount = 0;

export class RouterHarness {
  readonly engines = new ProcessGroup();
  readonly logs = mkdtempSync(join(tmpdir(), 'gpufleet-router-it-'));
  readonly routers: TestRouter[] = [];
  private engineCount = 0;

  private constructor(
    readonly cluster: string,
    readonly nats: RunningServer,
    readonly redis: RunningServer,
    readonly nc: NatsConnection,
    readonly deployments: KvStore<ModelDeployment>,
    readonly apiKeys: KvStore<ApiKeyRecord>,
  ) {}

  static async start(): Promise<RouterHarness> {
    const [nats, redis] = await Promise.all([startNats(), startRedis()]);
    const nc = await connect({ servers: nats.url });
    const js = nc.jetstream();
    const cluster = `rt${process.pid}x${++clusterCount}`;
    const [deployments, apiKeys] = await Promise.all([
      KvStore.open(js, Buckets.deployments(cluster), ModelDeployment),
      KvStore.open(js, Buckets.apiKeys(cluster), ApiKeyRecord),
    ]);
    return new RouterHarness(cluster, nats, redis, nc, deployments, apiKeys);
  }

  /**
   * Starts one engine-sim (zero latency unless `args` say otherwise) and waits for /readyz, or
   * only /healthz for one that is still loading (`--slow-start-s`).
   */
  async engine(args: string[] = [], model = 'test/model', ready: 'readyz' | 'healthz' = 'readyz'): Promise<EngineSim> {
    const port = await freePort();
    const name = `sim-${++this.engineCount}`;
    const logFile = join(this.logs, `${name}.log`);
    const proc = this.engines.start({
      name,
      command: process.execPath,
      args: [
        ...(await freshServiceArgs('engine-sim', REPO_ROOT)),
        '--model', model, '--port', String(port), '--host', '127.0.0.1', '--replica-name', name,
        '--prefill-us-per-token', '0', '--itl-ms', '0', ...args,
      ],
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn', NATS_URL: '' },
      logFile,
    });
    const log = (): string => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    };
    const endpoint = `http://127.0.0.1:${port}`;
    await waitFor(
      `${name} /${ready} (log: ${logFile})`,
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`${name} exited with ${proc.child.exitCode}: ${log().slice(-2000)}`);
        const res = await fetch(`${endpoint}/${ready}`).catch(() => undefined);
        return res?.status === 200 || undefined;
      },
      { timeoutMs: 45_000, intervalMs: 100 },
    );
    return { name, port, endpoint, proc, log };
  }

  /** Writes a deployment whose status lists `endpoints` as replicas (Ready unless `states` says otherwise). */
  async putDeployment(name: string, servedModelName: string, endpoints: readonly string[], options: DeploymentOptions = {}): Promise<void> {
    const namespace = options.namespace ?? 'default';
    const pd = options.roles === 'pd';
    const prefills = pd ? (options.prefillReplicas ?? 1) : 0;
    const replicas: ReplicaStatus[] = endpoints.map((endpoint, i) => ({
      role: pd ? (i < prefills ? 'prefill' : 'decode') : 'server',
      ordinal: i < prefills ? i : i - prefills,
      workload: `${name}-${i}`,
      state: options.states?.[endpoint] ?? 'Ready',
      node: 'node-0',
      endpoint,
      acceleratorIds: [],
      restarts: 0,
      message: '',
      updated: true,
      logsUrl: '',
    }));
    const deployment = ModelDeployment.fromPartial({
      spec: {
        name,
        namespace,
        model: options.model ?? servedModelName,
        servedModelName,
        roles: pd
          ? [
              { role: 'prefill', replicas: prefills, size: 1 },
              { role: 'decode', replicas: endpoints.length - prefills, size: 1 },
            ]
          : [{ role: 'server', replicas: endpoints.length, size: 1 }],
      },
      status: {
        readyReplicas: replicas.filter((r) => r.state === 'Ready').length,
        desiredReplicas: endpoints.length,
        replicas,
        endpoints: replicas.filter((r) => r.state === 'Ready').map((r) => r.endpoint),
      },
      generation: 1,
    });
    await this.deployments.put(storeKey(workloadKey(namespace, name)), deployment);
  }

  deleteDeployment(name: string, namespace = 'default'): Promise<void> {
    return this.deployments.delete(storeKey(workloadKey(namespace, name)));
  }

  /** Starts a router on free ports with `env` over the test defaults. */
  async router(env: Record<string, string> = {}): Promise<TestRouter> {
    const [http, ops, grpc] = [await freePort(), await freePort(), await freePort()];
    const config = loadRouterConfig({
      GPUFLEET_CLUSTER: this.cluster,
      NATS_URL: this.nats.url,
      REDIS_URL: this.redis.url,
      HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      OPS_PORT: String(ops),
      GRPC_PORT: String(grpc),
      LOG_LEVEL: process.env.ROUTER_TEST_LOG_LEVEL ?? 'silent',
      ROUTER_NAME: `router-${this.routers.length + 1}`,
      USAGE_FLUSH_S: '0.1',
      DRAIN_TIMEOUT_S: '2',
      ...env,
    });
    const running = await createRouter(config);
    const client = new KeyServiceClient(`127.0.0.1:${running.grpcPort}`, credentials.createInsecure());
    const router: TestRouter = {
      ...running,
      base: `http://127.0.0.1:${running.apiPort}`,
      grpc: client,
      close: async () => {
        client.close();
        await running.close();
      },
    };
    this.routers.push(router);
    return router;
  }

  /** Waits until `router` routes `model` to `count` ready replicas. */
  async untilReplicas(router: TestRouter, model: string, count: number): Promise<void> {
    await waitFor(`${model} with ${count} ready replicas`, () => ((router.runtime.directory.pool(model)?.readyCount ?? 0) === count ? true : undefined), {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
  }

  async createKey(router: TestRouter, request: Partial<CreateKeyRequest>, adminToken?: string): Promise<CreateKeyResponse> {
    const metadata = new Metadata();
    if (adminToken) metadata.set('authorization', `Bearer ${adminToken}`);
    const full: CreateKeyRequest = { name: 'test', allModels: false, models: [], expiresAt: undefined, expiresInSeconds: 0, limits: undefined, labels: {}, ...request };
    return callUnary(router.grpc, router.grpc.createKey, full, { metadata });
  }

  async stop(): Promise<void> {
    for (const router of this.routers.splice(0)) await router.close().catch(() => undefined);
    await this.engines.stopAll(5_000);
    await this.nc.close();
    await Promise.all([this.nats.dispose(), this.redis.dispose()]);
  }
}

/** POSTs JSON; returns status, headers and the body as text and (when it parses) JSON. */
export async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

export const chat = (model: string, content: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model,
  messages: [{ role: 'user', content }],
  max_tokens: 4,
  ...extra,
});
