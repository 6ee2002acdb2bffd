import { DynamicModule, Module } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { createLogger, createMetricsRegistry, LOGGER, ObservabilityModule, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { NODE_RUNTIME_CONFIG, NodeRuntimeConfig, nodeNamesOf } from './config';
import { PodsModule } from './pods/pods.module';
import { NodeState } from './runtime/node-state.service';
import { PodRuntimeService } from './runtime/pod-runtime.service';
import { RuntimeModule } from './runtime/runtime.module';
import { NodeRuntimeMetrics } from './runtime/runtime-metrics';
import { RUNTIME_METRICS } from './runtime/runtime.constants';

/** The NATS connection's name: `node-runtime@<node>`, or `node-runtime@<first>+<N-1>` for a simulated fleet. */
function processName(config: NodeRuntimeConfig): string {
  const nodes = nodeNamesOf(config);
  return `node-runtime@${nodes[0]}${nodes.length > 1 ? `+${nodes.length - 1}` : ''}`;
}

@Module({})
export class AppModule {
  static forRoot(config: NodeRuntimeConfig): DynamicModule {
    const registry = createMetricsRegistry({ service: 'node-runtime', labels: { node: config.NODE_NAME } });
    // The pods gauge reads the runtime when scraped; the runtime exists once the module is built.
    let runtime: PodRuntimeService | undefined;
    const metrics = new NodeRuntimeMetrics(registry, () => runtime?.statuses() ?? []);
    return {
      module: AppModule,
      global: true,
      imports: [
        MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, processName(config)), cluster: config.GPUFLEET_CLUSTER }),
        ObservabilityModule.forRootAsync({
          service: 'node-runtime',
          registry,
          logger: createLogger({ service: 'node-runtime', level: config.LOG_LEVEL }),
          imports: [RuntimeModule],
          inject: [NATS_CONNECTION, NodeState, PodRuntimeService],
          readiness: (nc: NatsConnection, state: NodeState, pods: PodRuntimeService) => {
            runtime = pods;
            return [
              natsReadiness(nc),
              { name: 'state', check: () => { if (!state.ready) throw new Error('inventory, ledger and workloads not loaded yet'); } },
              { name: 'pods', check: () => { if (!pods.ready) throw new Error(pods.notReadyReason()); } },
            ];
          },
        }),
        RuntimeModule,
        PodsModule,
      ],
      providers: [
        { provide: NODE_RUNTIME_CONFIG, useValue: config },
        { provide: RUNTIME_METRICS, useValue: metrics },
        // Health and reflection only: the runtime's API is its pods-bucket records and HTTP.
        {
          provide: GrpcLifecycle,
          inject: [LOGGER],
          useFactory: (logger: Logger) => new GrpcLifecycle(grpcServerOptions(config, { services: [], protoFiles: ['gpufleet/v1/runtime.proto'] }), logger),
        },
      ],
      exports: [NODE_RUNTIME_CONFIG, RUNTIME_METRICS],
    };
  }
}
