import { Module } from '@nestjs/common';
import { CapacityModule } from '../../capacity/capacity.module';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { KUBE_CONFIG, loadKubeConfig } from '../kube-config';
import { SchedulingModule } from '../../scheduling/scheduling.module';
import { InstanceTypeMirror } from './instance-type-mirror';
import { GpuInstanceSync } from './gpu-instance-sync';
import { ModelDeploymentSync } from './model-deployment-sync';

/**
 * The gpufleet.io custom resources (KUBE_CUSTOM_RESOURCES=true): the leader mirrors the
 * capacity model's InstanceTypes, and ModelDeployment and GPUInstance objects are kept as one with gpufleet's deployments and instances (docs/kubernetes.md#custom-resources).
 */
@Module({
  imports: [CapacityModule, SchedulingModule],
  providers: [
    { provide: KUBE_CONFIG, inject: [SCHEDULER_CONFIG], useFactory: (config: SchedulerConfig) => loadKubeConfig(config) },
    InstanceTypeMirror,
    ModelDeploymentSync,
    GpuInstanceSync,
  ],
  exports: [InstanceTypeMirror, ModelDeploymentSync, GpuInstanceSync],
})
export class KubeResourcesModule {}
