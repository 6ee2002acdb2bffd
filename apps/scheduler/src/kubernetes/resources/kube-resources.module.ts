import { Module } from '@nestjs/common';
import { CapacityModule } from '../../capacity/capacity.module';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { KUBE_CONFIG, loadKubeConfig } from '../kube-config';
import { InstanceTypeMirror } from './instance-type-mirror';

/**
 * The gpufleet.io custom resources (KUBE_CUSTOM_RESOURCES=true): the leader mirrors the
 * capacity model's InstanceTypes (docs/kubernetes.md#custom-resources).
 */
@Module({
  imports: [CapacityModule],
  providers: [
    { provide: KUBE_CONFIG, inject: [SCHEDULER_CONFIG], useFactory: (config: SchedulerConfig) => loadKubeConfig(config) },
    InstanceTypeMirror,
  ],
  exports: [InstanceTypeMirror],
})
export class KubeResourcesModule {}
