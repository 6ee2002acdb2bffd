import { Module } from '@nestjs/common';
import { ArtifactsGrpc } from './artifacts.grpc';
import { ArtifactsStore } from './artifacts.store';
import { ResolutionService } from './resolution.service';
import { ArtifactResolver } from './resolver';

/** The control role: the artifacts API and the leader's resolution loop. */
@Module({
  providers: [ArtifactsStore, ArtifactsGrpc, ResolutionService, ArtifactResolver],
  exports: [ArtifactsGrpc, ArtifactsStore],
})
export class ArtifactsModule {}
