import { Module } from '@nestjs/common';
import { AccessGrpc } from './access.grpc';
import { AccessStore } from './access-store.service';

@Module({ providers: [AccessStore, AccessGrpc], exports: [AccessStore, AccessGrpc] })
export class AccessModule {}
