import { Controller, Get, Inject, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Registry } from 'prom-client';
import { readinessBody } from '../health';
import { METRICS_REGISTRY } from './observability.constants';
import { Readiness } from './readiness.service';

/**
 * `/healthz`, `/readyz` and `/metrics`. Replies go through the HTTP adapter, not exceptions,
 * so an app-wide exception filter (e.g. OpenAI-style error bodies) cannot reshape a probe.
 * With a global prefix, exclude these paths: `setGlobalPrefix('v1', { exclude: ['healthz', 'readyz', 'metrics'] })`.
 */
@Controller()
export class ObservabilityController {
  constructor(
    private readonly readiness: Readiness,
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** The process is alive and its event loop answers. */
  @Get('healthz')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** 200 when every readiness check passes, else 503 naming each failed check and why. */
  @Get('readyz')
  async readyz(@Res() response: unknown): Promise<void> {
    const report = await this.readiness.evaluate();
    const adapter = this.adapterHost.httpAdapter;
    adapter.setHeader(response, 'Cache-Control', 'no-store');
    adapter.reply(response, readinessBody(report), report.ready ? 200 : 503);
  }

  /** Prometheus text exposition format. */
  @Get('metrics')
  async metrics(@Res() response: unknown): Promise<void> {
    const text = await this.registry.metrics();
    const adapter = this.adapterHost.httpAdapter;
    adapter.setHeader(response, 'Content-Type', this.registry.contentType);
    adapter.setHeader(response, 'Cache-Control', 'no-store');
    adapter.reply(response, text, 200);
  }
}
