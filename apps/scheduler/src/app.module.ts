import { DynamicModule, Module } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { ObservabilityModule, createLogger } from '@gpufleet/observability';
import { hostname } from 'os';
import { CapacityModule } from './capacity/capacity.module';
import { SchedulingModule } from './scheduling/scheduling.module';
import { AccessModule } from './access/access.module';
import { AccessStore } from './access/access-store.service';
import { SecretsModule } from './secrets/secrets.module';
import { SchedulingStore } from './scheduling/scheduling-store.service';
import { CapacityStateService } from './capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config';
import { schedulerGrpcServer } from './grpc.server';
import { Leadership } from './leadership/leadership';
import { KubeRuntimeModule } from './kubernetes/runtime/kube-runtime.module';
import { KubeResourcesModule } from './kubernetes/resources/kube-resources.module';
import { KueueModule } from './kubernetes/kueue/kueue.module';

@Module({})
export class AppModule {
  static forRoot(config: SchedulerConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, `scheduler@${hostname()}`), cluster: config.GPUFLEET_CLUSTER }),
        ObservabilityModule.forRootAsync({
          service: 'scheduler',
          logger: createLogger({ service: 'scheduler', level: config.LOG_LEVEL }),
          imports: [CapacityModule, SchedulingModule, AccessModule],
          inject: [NATS_CONNECTION, CapacityStateService, SchedulingStore, AccessStore],
          readiness: (nc: NatsConnection, capacity: CapacityStateService, store: SchedulingStore, access: AccessStore) => [
            natsReadiness(nc),
            { name: 'capacity', check: () => { if (!capacity.ready) throw new Error('node records not loaded yet'); } },
            { name: 'store', check: () => { if (!store.ready) throw new Error('workloads, ledger and queues not loaded yet'); } },
            { name: 'access', check: () => { if (!access.directory.ready) throw new Error('users, tokens and role bindings not loaded yet'); } },
          ],
        }),
        CapacityModule,
        SchedulingModule,
        AccessModule,
        SecretsModule,
        ...(config.RUNTIME === 'kubernetes' ? [KubeRuntimeModule] : []),
        ...(config.KUBE_CUSTOM_RESOURCES ? [KubeResourcesModule] : []),
        ...(config.KUEUE ? [KueueModule] : []),
      ],
      providers: [{ provide: SCHEDULER_CONFIG, useValue: config }, Leadership, schedulerGrpcServer],
      exports: [SCHEDULER_CONFIG, Leadership],
    };
  }
}
