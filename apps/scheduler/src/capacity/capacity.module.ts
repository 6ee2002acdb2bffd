import { Module } from '@nestjs/common';
import { CapacityGrpc } from './capacity.grpc';
import { CapacityStateService } from './capacity-state.service';

@Module({
  providers: [CapacityStateService, CapacityGrpc],
  exports: [CapacityStateService, CapacityGrpc],
})
export class CapacityModule {}
