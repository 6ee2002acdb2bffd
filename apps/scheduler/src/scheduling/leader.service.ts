import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { hostname } from 'os';
import { Buckets, Lease } from '@gpufleet/contracts';
import { KvStore, LeaderLease, NATS_CONNECTION } from '@gpufleet/messaging';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { AdmissionService } from './admission.service';
import { DefaultQueues } from './default-queues.service';
import { OwnerControllers } from './owner-controllers.service';

/**
 * Scheduler replicas elect one leader through the "scheduler" key of the leases bucket. The
 * leader admits, writes the ledger and node status and publishes capacity events; standbys
 * keep their views current and serve reads, ready to take over.
 */
@Injectable()
export class LeaderService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('leader');
  private lease?: LeaderLease;
  readonly holder = `scheduler@${hostname()}/${process.pid}`;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly admission: AdmissionService,
    private readonly capacity: CapacityStateService,
    private readonly owners: OwnerControllers,
    private readonly defaultQueues: DefaultQueues,
  ) {}

  get isLeader(): boolean {
    return this.lease?.isLeader ?? false;
  }

  async onApplicationBootstrap(): Promise<void> {
    const store = await KvStore.open(this.nc.jetstream(), Buckets.leases(this.config.GPUFLEET_CLUSTER), Lease);
    this.capacity.isLeader = () => this.isLeader;
    this.lease = new LeaderLease(store, 'scheduler', {
      holder: this.holder,
      renewEveryMs: this.config.LEADER_RENEW_S * 1000,
      expireAfterMs: this.config.LEADER_EXPIRE_S * 1000,
      onAcquired: async (term) => {
        this.logger.log(`${this.holder} is the leader (term ${term})`);
        this.capacity.resyncAsLeader();
        await this.admission.lead(term);
        this.owners.lead();
        this.defaultQueues.lead();
      },
      onLost: (why) => {
        this.logger.warn(`no longer the leader: ${why}`);
        this.owners.stepDown();
        this.defaultQueues.stepDown();
        this.admission.stepDown();
      },
      onError: (err) => this.logger.warn(`lease: ${(err as Error).message}`),
    });
    this.lease.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.owners.stepDown();
    this.defaultQueues.stepDown();
    this.admission.stepDown();
    // Released on a clean stop, so a standby takes over at once rather than after expiry.
    await this.lease?.stop(true);
  }
}
