// Starts the agent in-process for integration tests, as main.ts does (startService of
// AppModule.forRoot), configured from an env map exactly as instrument.ts would be from the
// environment.
import { loadConfig } from '@gpufleet/config';
import { startService, type RunningService } from '@gpufleet/service-kit';
import { freePort, waitFor } from '@gpufleet/testing';
import { AppModule } from '../app.module';
import { agentConfigSchema, type AgentConfig } from '../config';

export interface AgentUnderTest extends RunningService {
  readonly config: AgentConfig;
  /** GET /readyz: its status and body. */
  readiness(): Promise<{ status: number; body: string }>;
}

/**
 * `env` needs NATS_URL and GPUFLEET_CLUSTER; HTTP_PORT and GRPC_PORT default to free ports,
 * LOG_LEVEL to `error` (AGENT_TEST_LOG_LEVEL=debug shows the agent's log while debugging).
 * Resolves once the ports are bound; `untilReady` waits for /readyz 200 too.
 */
export async function startAgent(env: Record<string, string>, untilReady = true): Promise<AgentUnderTest> {
  const config = loadConfig(agentConfigSchema, {
    LOG_LEVEL: process.env.AGENT_TEST_LOG_LEVEL ?? 'error',
    HTTP_PORT: String(await freePort()),
    GRPC_PORT: String(await freePort()),
    ...env,
  });
  const running = await startService({ service: 'device-discovery', config, module: AppModule.forRoot(config) });
  const readiness = async () => {
    const res = await fetch(`http://127.0.0.1:${running.opsPort}/readyz`);
    return { status: res.status, body: await res.text() };
  };
  const agent = { ...running, config, readiness };
  if (untilReady) {
    await waitFor('agent /readyz', async () => ((await readiness().catch(() => undefined))?.status === 200 ? true : undefined), { timeoutMs: 20_000 }).catch(
      async (err: Error) => {
        await running.close();
        throw err;
      },
    );
  }
  return agent;
}
