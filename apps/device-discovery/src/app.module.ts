import { DynamicModule, Module } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { LOGGER, ObservabilityModule, createLogger, type Logger } from '@gpufleet/observability';
import { loadFleetFile } from '@gpufleet/device-inventory';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { PRESENTED_NODES } from './agent/agent.constants';
import { AgentModule } from './agent/agent.module';
import { AgentService } from './agent/agent.service';
import { DevicePluginModule } from './device-plugin/device-plugin.module';
import { NfdModule } from './nfd/nfd.module';
import { natsConnectionName, presentedNodes } from './agent/presented-nodes';
import { AGENT_CONFIG, AgentConfig } from './config';

@Module({})
export class AppModule {
  static forRoot(config: AgentConfig): DynamicModule {
    // Read before anything connects: the NATS connection is named after the nodes presented, and
    // a node list that does not fit the fleet file stops the start while Nest scans the modules.
    const presented = presentedNodes(config, loadFleetFile);
    const messaging = presented.then((nodes) =>
      MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, natsConnectionName(nodes.names)), cluster: config.GPUFLEET_CLUSTER }),
    );
    // Nest awaits it and reports a failure; this only keeps the rejection from counting as unhandled until then.
    messaging.catch(() => undefined);
    return {
      module: AppModule,
      global: true,
      imports: [
        messaging,
        ObservabilityModule.forRootAsync({
          service: 'device-discovery',
          logger: createLogger({ service: 'device-discovery', level: config.LOG_LEVEL }),
          imports: [AgentModule],
          inject: [NATS_CONNECTION, AgentService],
          readiness: (nc: NatsConnection, agent: AgentService) => [
            natsReadiness(nc),
            { name: 'inventory', check: () => agent.checkReady() },
          ],
        }),
        AgentModule,
        // Only when switched on: their code (gRPC over unix sockets, @kubernetes/client-node) is
        // loaded on first use (.swcrc module.lazy), so an agent without them stays small.
        ...(config.DEVICE_PLUGIN === 'on' ? [DevicePluginModule] : []),
        ...(config.NFD ? [NfdModule] : []),
      ],
      providers: [
        { provide: AGENT_CONFIG, useValue: config },
        { provide: PRESENTED_NODES, useFactory: () => presented },
        // Health and reflection only for now; the device-plugin API comes with the Kubernetes runtime.
        {
          provide: GrpcLifecycle,
          inject: [LOGGER],
          useFactory: (logger: Logger) => new GrpcLifecycle(grpcServerOptions(config, { services: [], protoFiles: ['gpufleet/v1/devices.proto'] }), logger),
        },
      ],
      exports: [AGENT_CONFIG, PRESENTED_NODES],
    };
  }
}
