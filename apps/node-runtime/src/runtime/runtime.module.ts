import { Module } from '@nestjs/common';
import { NodeState } from './node-state.service';
import { PodRuntimeService } from './pod-runtime.service';

@Module({ providers: [NodeState, PodRuntimeService], exports: [NodeState, PodRuntimeService] })
export class RuntimeModule {}
