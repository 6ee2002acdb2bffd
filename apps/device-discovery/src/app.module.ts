import { DynamicModule, Module } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { LOGGER, ObservabilityModule, createLogger, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { AgentModule } from './agent/agent.module';
import { AgentService } from './agent/agent.service';
import { AGENT_CONFIG, AgentConfig } from './config';

@Module({})
export class AppModule {
  static forRoot(config: AgentConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, `device-discovery@${config.NODE_NAME}`), cluster: config.GPUFLEET_CLUSTER }),
        ObservabilityModule.forRootAsync({
          service: 'device-discovery',
          logger: createLogger({ service: 'device-discovery', level: config.LOG_LEVEL }),
          imports: [AgentModule],
          inject: [NATS_CONNECTION, AgentService],
          readiness: (nc: NatsConnection, agent: AgentService) => [
            natsReadiness(nc),
            { name: 'inventory', check: () => { if (!agent.inventory) throw new Error('first detection pass not finished'); } },
          ],
        }),
        AgentModule,
      ],
      providers: [
        { provide: AGENT_CONFIG, useValue: config },
        // Health and reflection only for now; the device-plugin API comes with the Kubernetes runtime.
        {
          provide: GrpcLifecycle,
          inject: [LOGGER],
          useFactory: (logger: Logger) => new GrpcLifecycle(grpcServerOptions(config, { services: [], protoFiles: ['gpufleet/v1/devices.proto'] }), logger),
        },
      ],
      exports: [AGENT_CONFIG],
    };
  }
}
