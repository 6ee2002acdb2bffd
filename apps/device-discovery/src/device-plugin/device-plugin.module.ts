import { Module } from '@nestjs/common';
import { AgentModule } from '../agent/agent.module';
import { DevicePluginService } from './device-plugin.service';

@Module({ imports: [AgentModule], providers: [DevicePluginService], exports: [DevicePluginService] })
export class DevicePluginModule {}
