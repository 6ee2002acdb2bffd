import { ConfigOf, defineConfig, duration, servicePorts, sharedConfigFields } from '@gpufleet/config';

export const schedulerConfigSchema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50051, http: 8080 }),
  NOT_READY_TIMEOUT_S: duration({
    default: 45,
    min: 1,
    desc: 'Seconds without a heartbeat after which a node turns NotReady and its capacity leaves the views.',
  }),
});

export type SchedulerConfig = ConfigOf<typeof schedulerConfigSchema.fields>;

/** Injection token of the validated configuration. */
export const SCHEDULER_CONFIG = Symbol('SCHEDULER_CONFIG');
