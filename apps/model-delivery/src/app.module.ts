import { DynamicModule, Module } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { ObservabilityModule, createLogger } from '@gpufleet/observability';
import { hostname } from 'os';
import { DeliveryAccess } from './access.service';
import { ArtifactsModule } from './artifacts/artifacts.module';
import { DELIVERY_CONFIG, DeliveryConfig } from './config';
import { deliveryGrpcServer } from './grpc.server';
import { NodeModule } from './node/node.module';

@Module({})
export class AppModule {
  static forRoot(config: DeliveryConfig): DynamicModule {
    const control = config.ROLE === 'control' || config.ROLE === 'all';
    const node = config.ROLE === 'node' || config.ROLE === 'all';
    return {
      module: AppModule,
      global: true,
      imports: [
        MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, `model-delivery@${hostname()}`), cluster: config.GPUFLEET_CLUSTER }),
        ObservabilityModule.forRootAsync({
          service: 'model-delivery',
          logger: createLogger({ service: 'model-delivery', level: config.LOG_LEVEL }),
          inject: [NATS_CONNECTION, DeliveryAccess],
          readiness: (nc: NatsConnection, access: DeliveryAccess) => [
            natsReadiness(nc),
            {
              name: 'access',
              check: () => {
                if (!access.directory.ready) throw new Error('the access buckets are not loaded yet');
              },
            },
          ],
        }),
        ...(control ? [ArtifactsModule] : []),
        ...(node ? [NodeModule] : []),
      ],
      providers: [{ provide: DELIVERY_CONFIG, useValue: config }, DeliveryAccess, deliveryGrpcServer],
      exports: [DELIVERY_CONFIG, DeliveryAccess],
    };
  }
}
