import {
  Global,
  Inject,
  Module,
  RequestMethod,
  type DynamicModule,
  type MiddlewareConsumer,
  type ModuleMetadata,
  type NestModule,
  type Provider,
} from '@nestjs/common';
import { createLogger } from '../logging';
import { createMetricsRegistry } from '../metrics';
import { HttpObservabilityMiddleware } from './http-observability.middleware';
import { ALL_ROUTES, LOGGER, METRICS_REGISTRY, OBSERVABILITY_OPTIONS } from './observability.constants';
import { ObservabilityController } from './observability.controller';
import type { ObservabilityModuleAsyncOptions, ObservabilityModuleOptions } from './observability.options';
import { Readiness } from './readiness.service';

/**
 * `/healthz`, `/readyz`, `/metrics` and HTTP request logging/metrics for a service. Global:
 * `Readiness`, `LOGGER` and `METRICS_REGISTRY` can be injected anywhere in the app.
 */
@Global()
@Module({})
export class ObservabilityModule implements NestModule {
  constructor(@Inject(OBSERVABILITY_OPTIONS) private readonly options: ObservabilityModuleOptions) {}

  static forRoot(options: ObservabilityModuleOptions): DynamicModule {
    return ObservabilityModule.build(options, { provide: OBSERVABILITY_OPTIONS, useValue: options }, []);
  }

  /** Like `forRoot`, with the readiness checks made from injected providers (e.g. the NATS connection). */
  static forRootAsync(options: ObservabilityModuleAsyncOptions): DynamicModule {
    const { imports, inject, readiness, ...rest } = options;
    const optionsProvider: Provider = {
      provide: OBSERVABILITY_OPTIONS,
      inject: inject ?? [],
      useFactory: async (...deps: never[]): Promise<ObservabilityModuleOptions> => ({
        ...rest,
        readiness: await readiness(...deps),
      }),
    };
    return ObservabilityModule.build(rest, optionsProvider, imports ?? []);
  }

  private static build(
    options: Omit<ObservabilityModuleOptions, 'readiness'>,
    optionsProvider: Provider,
    imports: NonNullable<ModuleMetadata['imports']>,
  ): DynamicModule {
    const registry = options.registry ?? createMetricsRegistry({ service: options.service });
    const logger = options.logger ?? createLogger({ service: options.service });
    return {
      module: ObservabilityModule,
      global: true,
      imports,
      controllers: [ObservabilityController],
      providers: [
        optionsProvider,
        { provide: METRICS_REGISTRY, useValue: registry },
        { provide: LOGGER, useValue: logger },
        Readiness,
      ],
      exports: [METRICS_REGISTRY, LOGGER, Readiness],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    if (this.options.httpMiddleware === false) return;
    consumer.apply(HttpObservabilityMiddleware).forRoutes({ path: ALL_ROUTES, method: RequestMethod.ALL });
  }
}
