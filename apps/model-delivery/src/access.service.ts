import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { AccessDirectory } from '@gpufleet/access-core';
import { AccessMirror, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { DELIVERY_CONFIG, DeliveryConfig } from './config';

/**
 * Who may call ModelDeliveryService: the scheduler's users, tokens and role bindings, mirrored
 * read-only from the access buckets (the scheduler's AccessService writes them), with
 * GPUFLEET_ADMIN_TOKEN as the bootstrap admin. Without that token the stack is open (`up --no-auth`).
 */
@Injectable()
export class DeliveryAccess implements OnModuleInit, OnModuleDestroy {
  readonly directory: AccessDirectory;
  private mirror?: AccessMirror;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.directory = new AccessDirectory(config.GPUFLEET_ADMIN_TOKEN);
  }

  async onModuleInit(): Promise<void> {
    this.mirror = await AccessMirror.open(this.nc.jetstream(), this.config.GPUFLEET_CLUSTER, this.directory, this.logger);
  }

  onModuleDestroy(): void {
    this.mirror?.stop();
  }
}
