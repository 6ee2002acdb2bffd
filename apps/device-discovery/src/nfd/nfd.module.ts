import { Module } from '@nestjs/common';
import { AgentModule } from '../agent/agent.module';
import { NfdService } from './nfd.service';

@Module({ imports: [AgentModule], providers: [NfdService], exports: [NfdService] })
export class NfdModule {}
