import { createLogger, NestJsonLogger, REDACTED_LOG_VALUE, redactionPaths, type LoggerOptions } from './logging';
import { SpanKind, withSpan } from './propagation';
import { startInMemoryTracing } from './tracing';

function capture(options: Partial<LoggerOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    service: 'scheduler',
    level: 'trace',
    ...options,
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { logger, lines };
}

describe('structured logging', () => {
  it('writes one JSON object per line with an ISO time, the level name, the service and the message', () => {
    const { logger, lines } = capture({ base: { cluster: 'dev' } });
    logger.info({ pool: 'h100' }, 'pool created');
    expect(lines[0]).toMatchObject({ level: 'info', service: 'scheduler', cluster: 'dev', pool: 'h100', msg: 'pool created' });
    expect(lines[0].time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(lines[0]).not.toHaveProperty('trace_id');
  });

  it('drops lines below the level', () => {
    const { logger, lines } = capture({ level: 'warn' });
    logger.info('hidden');
    logger.warn('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
  });

  it('adds the trace and span id of the active span', async () => {
    const { exporter, stop } = startInMemoryTracing('logging-test');
    try {
      const { logger, lines } = capture();
      await withSpan('place', SpanKind.INTERNAL, () => logger.info('placing'));
      const span = exporter.getFinishedSpans()[0].spanContext();
      expect(lines[0]).toMatchObject({ trace_id: span.traceId, span_id: span.spanId });
    } finally {
      await stop();
    }
  });

  it('redacts secrets at the top level and two levels down, keeping their siblings', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        password: 'p0',
        nats: { token: 't1', user: 'svc' },
        req: { headers: { authorization: 'Bearer x', 'x-api-key': 'k', accept: '*/*' } },
        config: { NATS_PASSWORD: 'p1', GPUFLEET_ADMIN_TOKEN: 'a1', GRPC_PORT: 50051 },
        seed: 'SUAB',
      },
      'connect',
    );
    const line = JSON.stringify(lines[0]);
    for (const secret of ['p0', 't1', 'Bearer x', '"k"', 'p1', 'a1', 'SUAB']) expect(line).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      password: REDACTED_LOG_VALUE,
      nats: { token: REDACTED_LOG_VALUE, user: 'svc' },
      req: { headers: { authorization: REDACTED_LOG_VALUE, accept: '*/*' } },
      config: { GRPC_PORT: 50051 },
    });
  });

  it('leaves unset secrets unset instead of claiming a value', () => {
    const { logger, lines } = capture();
    logger.info({ config: { NATS_PASSWORD: undefined, NATS_TOKEN: 't' } }, 'config');
    expect(lines[0].config).toEqual({ NATS_TOKEN: REDACTED_LOG_VALUE });
  });

  it('redacts extra keys a service names', () => {
    const { logger, lines } = capture({ redactKeys: ['sshPrivateKey'] });
    logger.info({ instance: { sshPrivateKey: 'BEGIN' } }, 'instance');
    expect(lines[0]).toMatchObject({ instance: { sshPrivateKey: REDACTED_LOG_VALUE } });
  });

  it('builds bracket paths for keys that are not identifiers', () => {
    expect(redactionPaths(['x-api-key', 'token'])).toEqual([
      '["x-api-key"]',
      '*["x-api-key"]',
      '*.*["x-api-key"]',
      'token',
      '*.token',
      '*.*.token',
    ]);
  });
});

describe('NestJsonLogger', () => {
  it('maps Nest levels and takes the last string argument as the context', () => {
    const { logger, lines } = capture();
    const nest = new NestJsonLogger(logger);
    nest.log('Mapped {/healthz, GET} route', 'RouterExplorer');
    nest.warn('slow');
    nest.debug('d', 'Ctx');
    nest.verbose('v', 'Ctx');
    nest.fatal('f');
    expect(lines.map((l) => [l.level, l.msg, l.context])).toEqual([
      ['info', 'Mapped {/healthz, GET} route', 'RouterExplorer'],
      ['warn', 'slow', undefined],
      ['debug', 'd', 'Ctx'],
      ['trace', 'v', 'Ctx'],
      ['fatal', 'f', undefined],
    ]);
  });

  it('keeps the stack Nest passes with an error message', () => {
    const { logger, lines } = capture();
    const stack = new Error('boom').stack!;
    new NestJsonLogger(logger).error('boom', stack, 'ExceptionsHandler');
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'boom', stack, context: 'ExceptionsHandler' });
  });

  it('serialises Error objects under err and object messages as fields', () => {
    const { logger, lines } = capture();
    const nest = new NestJsonLogger(logger);
    nest.error(new Error('connection refused'), 'NatsClient');
    nest.log({ message: 'leased', holder: 'scheduler-0' }, 'Lease');
    expect(lines[0]).toMatchObject({ msg: 'connection refused', context: 'NatsClient', err: { type: 'Error', message: 'connection refused' } });
    expect(lines[1]).toMatchObject({ msg: 'leased', holder: 'scheduler-0', context: 'Lease' });
  });

  it('skips work for disabled levels', () => {
    const { logger, lines } = capture({ level: 'info' });
    new NestJsonLogger(logger).verbose('noise');
    expect(lines).toEqual([]);
  });
});
