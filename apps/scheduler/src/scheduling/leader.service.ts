import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { hostname } from 'os';
import { Buckets, Lease } from '@gpufleet/contracts';
import { KvStore, LeaderLease, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { DeploymentController } from '../controllers/deployment.controller';
import { InstanceController } from '../controllers/instance.controller';
import { Leadership } from '../leadership/leadership';
import { AdmissionService } from './admission.service';
import { DefaultQueues } from './default-queues.service';

/**
 * Scheduler replicas elect one leader through the "scheduler" key of the leases bucket. This
 * service holds the lease, sets the one Leadership signal from it, and starts and stops the
 * leader-only work in order: capacity events, then admission (restored before anything is
 * admitted), then the deployment and instance controllers. Standbys keep their views current
 * and serve reads, ready to take over.
 */
@Injectable()
export class LeaderService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private lease?: LeaderLease;
  readonly holder = `scheduler@${hostname()}/${process.pid}`;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly leadership: Leadership,
    private readonly admission: AdmissionService,
    private readonly capacity: CapacityStateService,
    private readonly deployments: DeploymentController,
    private readonly instances: InstanceController,
    private readonly defaultQueues: DefaultQueues,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'leader' });
  }

  async onApplicationBootstrap(): Promise<void> {
    const store = await KvStore.open(this.nc.jetstream(), Buckets.leases(this.config.GPUFLEET_CLUSTER), Lease);
    this.lease = new LeaderLease(store, 'scheduler', {
      holder: this.holder,
      renewEveryMs: this.config.LEADER_RENEW_S * 1000,
      expireAfterMs: this.config.LEADER_EXPIRE_S * 1000,
      onAcquired: async (term) => {
        this.logger.info({ term }, `${this.holder} is the leader (term ${term})`);
        this.leadership.acquired(term);
        this.capacity.resyncAsLeader();
        await this.admission.lead(term);
        this.deployments.lead();
        this.instances.lead();
        this.defaultQueues.lead();
      },
      onLost: (why) => {
        this.logger.warn(`no longer the leader: ${why}`);
        this.stepDown();
      },
      onError: (err) => this.logger.warn(`lease: ${(err as Error).message}`),
    });
    this.lease.start();
  }

  private stepDown(): void {
    this.leadership.lost();
    void this.deployments.stepDown();
    void this.instances.stepDown();
    this.defaultQueues.stepDown();
    this.admission.stepDown();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stepDown();
    // Released on a clean stop, so a standby takes over at once rather than after expiry.
    await this.lease?.stop(true);
  }
}
