import { ConfigOf, defineConfig, duration, int, servicePorts, sharedConfigFields } from '@gpufleet/config';

export const schedulerConfigSchema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50051, http: 8080 }),
  NOT_READY_TIMEOUT_S: duration({
    default: 45,
    min: 1,
    desc: 'Seconds without a heartbeat after which a node turns NotReady and its capacity leaves the views.',
  }),
  REPLICA_RESCHEDULE_AFTER_S: duration({
    default: 300,
    min: 1,
    desc: 'Seconds a deployment replica or GPU instance on a NotReady node waits before it is released and placed on another node.',
  }),
  WATCH_MAX_BUFFERED: int({
    default: 10_000,
    min: 1,
    desc: 'Messages a Watch* stream may have waiting for a client that reads too slowly (beyond its initial snapshot); past it the watch ends with RESOURCE_EXHAUSTED and the client re-watches.',
  }),
  LEADER_RENEW_S: duration({ default: 5, min: 0.1, desc: 'Seconds between renewals of the scheduler leader lease.' }),
  LEADER_EXPIRE_S: duration({
    default: 10,
    min: 0.3,
    desc: 'Seconds a lease may go unrenewed before a standby scheduler takes over (takeover within this plus LEADER_RENEW_S).',
  }),
}, [
  // A lease renewed no more often than it expires lapses between renewals: two leaders.
  (c) =>
    c.LEADER_RENEW_S < c.LEADER_EXPIRE_S
      ? []
      : [{ variable: 'LEADER_RENEW_S', message: `expected less than LEADER_EXPIRE_S (${c.LEADER_EXPIRE_S}), got ${c.LEADER_RENEW_S}: the lease would lapse between renewals` }],
]);

export type SchedulerConfig = ConfigOf<typeof schedulerConfigSchema.fields>;

/** Injection token of the validated configuration. */
export const SCHEDULER_CONFIG = Symbol('SCHEDULER_CONFIG');
