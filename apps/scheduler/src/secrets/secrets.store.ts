import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, Secret } from '@gpufleet/contracts';
import { SECRETS_BUCKET_HISTORY } from '@gpufleet/deployments-core';
import { KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';

/**
 * The secrets bucket, read on every call rather than mirrored: SecretService answers metadata
 * only, and holding every value in the scheduler's memory would gain nothing.
 */
@Injectable()
export class SecretsStore implements OnModuleInit {
  private opened: KvStore<Secret> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    this.opened = await KvStore.open(this.nc.jetstream(), Buckets.secrets(this.config.GPUFLEET_CLUSTER), Secret, { history: SECRETS_BUCKET_HISTORY });
  }

  get store(): KvStore<Secret> {
    if (!this.opened) throw new Error('the secrets bucket is not open yet');
    return this.opened;
  }
}
