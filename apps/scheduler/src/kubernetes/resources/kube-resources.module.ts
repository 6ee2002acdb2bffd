import { Module } from '@nestjs/common';
import { CapacityModule } from '../../capacity/capacity.module';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { KUBE_CONFIG, loadKubeConfig } from '../kube-config';
import { SchedulingModule } from '../../scheduling/scheduling.module';
import { InstanceTypeMirror } from './instance-type-mirror';
import { ModelDeploymentSync } from './model-deployment-sync';

/**
 * The gpufleet.io custom resources (KUBE_CUSTOM_RESOURCES=true): the leader mirrors the
 * capacity model's InstanceTypes, and ModelDeployment objects and gpufleet deployments are kept as one (docs/kubernetes.md#custom-resources).
 */
@Module({
  imports: [CapacityModule, SchedulingModule],
  providers: [
    { provide: KUBE_CONFIG, inject: [SCHEDULER_CONFIG], useFactory: (config: SchedulerConfig) => loadKubeConfig(config) },
    InstanceTypeMirror,
    ModelDeploymentSync,
  ],
  exports: [InstanceTypeMirror, ModelDeploymentSync],
})
export class KubeResourcesModule {}
