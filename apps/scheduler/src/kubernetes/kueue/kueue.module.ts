import { Module } from '@nestjs/common';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { CapacityModule } from '../../capacity/capacity.module';
import { SchedulingModule } from '../../scheduling/scheduling.module';
import { loadKubeConfig } from '../kube-config';
import { KUEUE_KUBE_CONFIG, KueueService } from './kueue.service';

/** KUEUE=true: pools and queues mirrored into Kueue, and the gpufleet-placement AdmissionCheck answered (AppModule imports this only then). */
@Module({
  imports: [CapacityModule, SchedulingModule],
  providers: [{ provide: KUEUE_KUBE_CONFIG, inject: [SCHEDULER_CONFIG], useFactory: (config: SchedulerConfig) => loadKubeConfig(config) }, KueueService],
  exports: [KueueService],
})
export class KueueModule {}
