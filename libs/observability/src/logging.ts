import type { LoggerService } from '@nestjs/common';
import pino, { type DestinationStream, type Level, type LevelWithSilent, type Logger } from 'pino';
import { activeTraceIds } from './propagation';

export type { DestinationStream, Logger };
export type LogLevel = LevelWithSilent;

/** Keys whose values never reach a log line, at any of the first three levels of nesting. */
export const SECRET_LOG_KEYS: readonly string[] = [
  'password',
  'passwd',
  'pass',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'idToken',
  'authorization',
  'Authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'secret',
  'clientSecret',
  'client_secret',
  'apiKey',
  'api_key',
  'x-api-key',
  'privateKey',
  'private_key',
  'seed',
  'nkeySeed',
  'creds',
  'NATS_PASSWORD',
  'NATS_TOKEN',
  'GPUFLEET_ADMIN_TOKEN',
  'REDIS_PASSWORD',
];

export const REDACTED_LOG_VALUE = '[REDACTED]';

function accessor(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** pino redaction paths for `keys` at depth 0, 1 and 2 (`password`, `*.password`, `*.*.password`). */
export function redactionPaths(keys: readonly string[] = SECRET_LOG_KEYS): string[] {
  return keys.flatMap((key) => {
    const tail = accessor(key);
    return [tail.startsWith('.') ? tail.slice(1) : tail, `*${tail}`, `*.*${tail}`];
  });
}

export interface LoggerOptions {
  /** `service` on every line. */
  readonly service: string;
  /** Default `info`. */
  readonly level?: LogLevel;
  /** Extra fields on every line, e.g. `{ cluster: 'dev', node: 'gpu-1' }`. */
  readonly base?: Readonly<Record<string, string | number | boolean>>;
  /** More keys to redact, on top of `SECRET_LOG_KEYS`. */
  readonly redactKeys?: readonly string[];
  /** Default stdout. Tests pass `{ write(line) { … } }`. */
  readonly destination?: DestinationStream;
}

/**
 * A pino logger writing one JSON object per line: `time` (ISO-8601), `level` (name), `service`,
 * `msg`, `trace_id`/`span_id` of the active span when there is one, and the caller's fields,
 * with secrets (`SECRET_LOG_KEYS`) replaced by `[REDACTED]`. Errors go under `err`.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service, pid: process.pid, ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => activeTraceIds() ?? {},
      redact: {
        paths: redactionPaths([...SECRET_LOG_KEYS, ...(options.redactKeys ?? [])]),
        // An unset secret stays unset: "[REDACTED]" would claim a value is configured.
        censor: (value: unknown) => (value === undefined ? undefined : REDACTED_LOG_VALUE),
      },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

// Nest's own convention: the last string argument is the context (the class that logs);
// for `error`, a string that looks like a stack trace before it is the stack.
const STACK = /\n\s+at .+/;

/**
 * Routes NestJS's own logs (and `new Logger(Context)` calls in services) into a pino logger, so
 * everything a service prints is JSON: `NestFactory.create(AppModule, { logger: new NestJsonLogger(logger) })`.
 */
export class NestJsonLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...optionalParams: unknown[]): void {
    this.write('info', message, optionalParams);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.write('error', message, optionalParams);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.write('warn', message, optionalParams);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.write('debug', message, optionalParams);
  }

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.write('trace', message, optionalParams);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.write('fatal', message, optionalParams);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.logger.isLevelEnabled(level)) return;
    const rest = [...params];
    const fields: Record<string, unknown> = {};
    if (rest.length > 0 && typeof rest[rest.length - 1] === 'string') {
      const last = rest[rest.length - 1] as string;
      if (!(level === 'error' && STACK.test(last))) fields.context = rest.pop();
    }
    if (level === 'error' && typeof rest[0] === 'string' && STACK.test(rest[0])) fields.stack = rest.shift();
    if (rest.length > 0) fields.params = rest;

    if (message instanceof Error) {
      this.logger[level]({ ...fields, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      const { message: text, ...others } = message as Record<string, unknown>;
      this.logger[level]({ ...fields, ...others }, typeof text === 'string' ? text : '');
    } else {
      this.logger[level](fields, String(message));
    }
  }
}
