import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger, ObservabilityModule } from '../index';

const logs: Record<string, unknown>[] = [];

@Controller('pools')
class PoolsController {
  @Get(':name')
  pool(@Param('name') name: string): { name: string } {
    return { name };
  }
}

@Module({
  imports: [
    ObservabilityModule.forRoot({
      service: 'traced-service',
      logger: createLogger({
        service: 'traced-service',
        destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
      }),
    }),
  ],
  controllers: [PoolsController],
})
class TracedAppModule {}

function fetchStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    }).on('error', reject);
  });
}

/** Serves one routed request and one probe through a real HTTP listener; returns the log lines. */
export async function runTracedApp(): Promise<Record<string, unknown>[]> {
  const app = await NestFactory.create(TracedAppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  await fetchStatus(`http://127.0.0.1:${port}/pools/h100`);
  await fetchStatus(`http://127.0.0.1:${port}/healthz`);
  await app.close();
  return logs;
}
