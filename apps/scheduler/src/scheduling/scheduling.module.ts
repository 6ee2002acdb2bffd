import { Module } from '@nestjs/common';
import { CapacityModule } from '../capacity/capacity.module';
import { AdmissionService } from './admission.service';
import { LeaderService } from './leader.service';
import { QueuesGrpc } from './queues.grpc';
import { SchedulingGrpc } from './scheduling.grpc';
import { SchedulingStore } from './scheduling-store.service';

@Module({
  imports: [CapacityModule],
  providers: [SchedulingStore, AdmissionService, LeaderService, SchedulingGrpc, QueuesGrpc],
  exports: [SchedulingStore, LeaderService, SchedulingGrpc, QueuesGrpc],
})
export class SchedulingModule {}
