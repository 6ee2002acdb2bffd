import { Module } from '@nestjs/common';
import { CapacityModule } from '../capacity/capacity.module';
import { AdmissionService } from './admission.service';
import { DefaultQueues } from './default-queues.service';
import { LeaderService } from './leader.service';
import { QueuesGrpc } from './queues.grpc';
import { SchedulingGrpc } from './scheduling.grpc';
import { SchedulingStore } from './scheduling-store.service';
import { DeploymentsGrpc } from './deployments.grpc';
import { InstancesGrpc } from './instances.grpc';
import { DeploymentController } from '../controllers/deployment.controller';
import { InstanceController } from '../controllers/instance.controller';
import { OwnerControllerKit } from '../controllers/owner-controller';
import { WorkloadApiContext } from './workload-api-context';
import { WorkloadSubmitter } from './workload-submitter';

@Module({
  imports: [CapacityModule],
  providers: [SchedulingStore, AdmissionService, LeaderService, SchedulingGrpc, QueuesGrpc, WorkloadSubmitter, WorkloadApiContext, DeploymentsGrpc, InstancesGrpc, OwnerControllerKit, DeploymentController, InstanceController, DefaultQueues],
  exports: [SchedulingStore, AdmissionService, LeaderService, SchedulingGrpc, QueuesGrpc, DeploymentsGrpc, InstancesGrpc],
})
export class SchedulingModule {}
