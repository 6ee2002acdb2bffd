import { Module } from '@nestjs/common';
import { NodeCachesService } from './node-caches.service';

/** The node role: the caches of NODE_NAMES and their peer servers. */
@Module({ providers: [NodeCachesService], exports: [NodeCachesService] })
export class NodeModule {}
