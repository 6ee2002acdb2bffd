import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { AccessDirectory } from '@gpufleet/access-core';
import { AccessMirror, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';

/**
 * Users, tokens and bindings on this replica: the directory every gRPC call is checked against
 * (it exists from construction, so the gRPC server can be built before the buckets are read),
 * and the mirrors AccessService writes through.
 */
@Injectable()
export class AccessStore implements OnModuleInit, OnApplicationShutdown {
  readonly directory: AccessDirectory;
  private mirror?: AccessMirror;
  private readonly logger: Logger;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.directory = new AccessDirectory(config.GPUFLEET_ADMIN_TOKEN);
    this.logger = logger.child({ context: 'access' });
  }

  /** The mirrors, once loaded (AccessService methods run only after module init). */
  get buckets(): AccessMirror {
    if (!this.mirror) throw new Error('access buckets not opened yet');
    return this.mirror;
  }

  async onModuleInit(): Promise<void> {
    this.mirror = await AccessMirror.open(this.nc.jetstream(), this.config.GPUFLEET_CLUSTER, this.directory, this.logger);
    const d = this.directory;
    this.logger.info(
      `access directory loaded: ${d.allUsers().length} users, ${d.allTokens().length} tokens, ${d.allBindings().length} role bindings` +
        (d.enforced ? '' : ' (not enforced: GPUFLEET_ADMIN_TOKEN is unset, every API is open)'),
    );
  }

  onApplicationShutdown(): void {
    this.mirror?.stop();
  }
}
