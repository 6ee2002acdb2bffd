import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Counter, Histogram, Registry } from 'prom-client';
import { createCounter, createHistogram } from '../metrics';
import { ALL_ROUTES, LOGGER, METRICS_REGISTRY, PROBE_PATHS } from './observability.constants';

/** What the middleware reads from a request; Express adds `route` and `originalUrl`. */
type RoutedRequest = IncomingMessage & { route?: { path?: unknown }; originalUrl?: string };

/** semantic-conventions' ATTR_HTTP_ROUTE, spelled here: that package's index is 380 KiB of constants. */
const ATTR_HTTP_ROUTE = 'http.route';

/** Seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Per HTTP request: one JSON log line (probes at debug), `gpufleet_http_requests_total` and
 * `gpufleet_http_request_duration_seconds` by method, route and status, and the route on the
 * request's span (the http instrumentation only knows the method). The route label is the
 * matched route pattern, or `unmatched`, so scanners cannot blow up label cardinality.
 */
@Injectable()
export class HttpObservabilityMiddleware implements NestMiddleware<RoutedRequest, ServerResponse> {
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly duration: Histogram<'method' | 'route' | 'status_code'>;

  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    const labelNames = ['method', 'route', 'status_code'] as const;
    this.requests = createCounter(registry, { name: 'http_requests_total', help: 'HTTP requests served.', labelNames });
    this.duration = createHistogram(registry, {
      name: 'http_request_duration_seconds',
      help: 'Time to serve an HTTP request.',
      labelNames,
      buckets: DURATION_BUCKETS,
    });
  }

  use(request: RoutedRequest, response: ServerResponse, next: (error?: unknown) => void): void {
    const started = process.hrtime.bigint();
    const span = trace.getActiveSpan();
    const spanContext = span?.spanContext();
    const path = (request.originalUrl ?? request.url ?? '/').split('?')[0];

    response.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const method = request.method ?? 'GET';
      const routePath = request.route?.path;
      // Express leaves `req.route` at this middleware's own catch-all when no handler matched.
      const route = typeof routePath === 'string' && routePath !== `/${ALL_ROUTES}` ? routePath : 'unmatched';
      const labels = { method, route, status_code: String(response.statusCode) };
      this.requests.inc(labels);
      this.duration.observe(labels, seconds);
      if (span && route !== 'unmatched') {
        span.setAttribute(ATTR_HTTP_ROUTE, route);
        span.updateName(`${method} ${route}`);
      }

      const level = PROBE_PATHS.includes(path)
        ? 'debug'
        : response.statusCode >= 500
          ? 'error'
          : response.statusCode >= 400
            ? 'warn'
            : 'info';
      this.logger[level](
        {
          ...(spanContext ? { trace_id: spanContext.traceId, span_id: spanContext.spanId } : {}),
          http: { method, path, route, status_code: response.statusCode, duration_ms: Math.round(seconds * 1e4) / 10 },
        },
        `${method} ${path} ${response.statusCode}`,
      );
    });
    next();
  }
}
