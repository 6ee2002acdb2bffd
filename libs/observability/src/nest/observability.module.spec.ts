import type { AddressInfo } from 'node:net';
import { Controller, Get, Injectable, Module, Param, type INestApplication, type OnModuleInit } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createLogger } from '../logging';
import { createMetricsRegistry } from '../metrics';
import { ObservabilityModule } from './observability.module';
import { Readiness } from './readiness.service';

const DEPENDENCY = Symbol('dependency');

/** A stand-in for a NATS connection whose state the test flips. */
class Dependency {
  connected = true;
}

@Controller('pools')
class PoolsController {
  @Get(':name')
  get(@Param('name') name: string): { name: string } {
    return { name };
  }
}

@Injectable()
class SelfRegisteringCheck implements OnModuleInit {
  constructor(private readonly readiness: Readiness) {}

  onModuleInit(): void {
    this.readiness.register({ name: 'lease', check: () => undefined });
  }
}

@Module({ providers: [{ provide: DEPENDENCY, useValue: new Dependency() }], exports: [DEPENDENCY] })
class DependencyModule {}

async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

describe('ObservabilityModule over real HTTP', () => {
  const dependency = new Dependency();
  const logLines: Record<string, unknown>[] = [];
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ObservabilityModule.forRoot({
          service: 'scheduler',
          registry: createMetricsRegistry({ service: 'scheduler' }),
          logger: createLogger({
            service: 'scheduler',
            level: 'debug',
            destination: { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
          }),
          readiness: [
            {
              name: 'nats',
              check: () => {
                if (!dependency.connected) throw new Error('disconnected');
              },
            },
          ],
        }),
      ],
      controllers: [PoolsController],
      providers: [SelfRegisteringCheck],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    base = await listen(app);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('answers /healthz with 200 {status:"ok"}', async () => {
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 200 when every check passes, including checks registered by providers', async () => {
    dependency.connected = true;
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready', checks: { nats: 'ok', lease: 'ok' } });
  });

  it('answers /readyz with 503 naming the failed check and why', async () => {
    dependency.connected = false;
    try {
      const response = await fetch(`${base}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        status: 'not ready',
        checks: { nats: 'disconnected', lease: 'ok' },
        failed: ['nats: disconnected'],
      });
    } finally {
      dependency.connected = true;
    }
  });

  it('serves /metrics in the Prometheus text format with default and HTTP request metrics', async () => {
    await fetch(`${base}/pools/h100`);
    await fetch(`${base}/no/such/route`);
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    // Express may reorder the parameters; Prometheus reads either order.
    expect(response.headers.get('content-type')).toMatch(/^text\/plain;.*version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toContain('gpufleet_http_requests_total{method="GET",route="/pools/:name",status_code="200",service="scheduler"} 1');
    expect(text).toContain('gpufleet_http_requests_total{method="GET",route="unmatched",status_code="404",service="scheduler"} 1');
    expect(text).toContain(
      'gpufleet_http_request_duration_seconds_count{service="scheduler",method="GET",route="/pools/:name",status_code="200"} 1',
    );
  });

  it('logs each request as JSON, probes at debug', async () => {
    await fetch(`${base}/pools/a100?token=secret`);
    const line = logLines.find((l) => l.msg === 'GET /pools/a100 200');
    expect(line).toMatchObject({ level: 'info', service: 'scheduler', http: { method: 'GET', path: '/pools/a100', route: '/pools/:name', status_code: 200 } });
    expect(JSON.stringify(logLines)).not.toContain('token=secret');
    expect(logLines.find((l) => l.msg === 'GET /healthz 200')).toMatchObject({ level: 'debug' });
  });

  it('turns not ready once shutdown begins', async () => {
    app.get(Readiness).markShuttingDown('draining');
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(((await response.json()) as { failed: string[] }).failed).toEqual(['shutdown: draining']);
  });
});

describe('ObservabilityModule.forRootAsync', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('builds readiness checks from injected providers', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ObservabilityModule.forRootAsync({
          service: 'device-discovery',
          imports: [DependencyModule],
          inject: [DEPENDENCY],
          readiness: (dep: Dependency) => [
            {
              name: 'nats',
              check: () => {
                if (!dep.connected) throw new Error('disconnected');
              },
            },
          ],
          registry: createMetricsRegistry({ service: 'device-discovery', defaultMetrics: false }),
          logger: createLogger({ service: 'device-discovery', level: 'silent' }),
          httpMiddleware: false,
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const base = await listen(app);
    const dep = moduleRef.get<Dependency>(DEPENDENCY);

    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    dep.connected = false;
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ failed: ['nats: disconnected'] });
    // Without the middleware no request metrics are registered.
    expect(await (await fetch(`${base}/metrics`)).text()).not.toContain('gpufleet_http_requests_total');
  });

  it('refuses two checks with the same name', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ObservabilityModule.forRoot({ service: 's', readiness: [{ name: 'nats', check: () => undefined }], logger: createLogger({ service: 's', level: 'silent' }) })],
    }).compile();
    expect(() => moduleRef.get(Readiness).register({ name: 'nats', check: () => undefined })).toThrow(
      'readiness check "nats" is already registered',
    );
    await moduleRef.close();
  });
});
