import { Module } from '@nestjs/common';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { CapacityModule } from '../../capacity/capacity.module';
import { SchedulingModule } from '../../scheduling/scheduling.module';
import { KUBE_CONFIG, loadKubeConfig } from '../kube-config';
import { KubeRuntimeService } from './kube-runtime.service';
import { KubeletDevicesService } from './kubelet-devices.service';

/** RUNTIME=kubernetes: the placed pods become Pods and Services (AppModule imports this only then). */
@Module({
  imports: [CapacityModule, SchedulingModule],
  providers: [{ provide: KUBE_CONFIG, inject: [SCHEDULER_CONFIG], useFactory: (config: SchedulerConfig) => loadKubeConfig(config) }, KubeRuntimeService, KubeletDevicesService],
  exports: [KubeRuntimeService, KubeletDevicesService],
})
export class KubeRuntimeModule {}
