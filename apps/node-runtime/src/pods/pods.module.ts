import { Module } from '@nestjs/common';
import { RuntimeModule } from '../runtime/runtime.module';
import { PodsController } from './pods.controller';

@Module({ imports: [RuntimeModule], controllers: [PodsController] })
export class PodsModule {}
