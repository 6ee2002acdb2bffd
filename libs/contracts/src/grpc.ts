import {
  AccessServiceService,
  CapacityServiceService,
  DeploymentServiceService,
  InstanceServiceService,
  KeyServiceService,
  ModelDeliveryServiceService,
  QueueServiceService,
  SchedulingServiceService,
  SecretServiceService,
} from './generated';

/** Fully-qualified gRPC service names, as registered with health and reflection. */
export const ServiceNames = {
  capacity: 'gpufleet.v1.CapacityService',
  scheduling: 'gpufleet.v1.SchedulingService',
  queues: 'gpufleet.v1.QueueService',
  deployments: 'gpufleet.v1.DeploymentService',
  instances: 'gpufleet.v1.InstanceService',
  keys: 'gpufleet.v1.KeyService',
  access: 'gpufleet.v1.AccessService',
  secrets: 'gpufleet.v1.SecretService',
  modelDelivery: 'gpufleet.v1.ModelDeliveryService',
} as const;

/** Properties read through getters, so nothing is looked up before it is used. */
function lazyProperties<T extends object>(thunks: { [K in keyof T]: () => T[K] }): Readonly<T> {
  const out = {} as T;
  for (const key of Object.keys(thunks) as (keyof T)[]) Object.defineProperty(out, key, { enumerable: true, get: thunks[key] });
  return out;
}

/** Each definition is looked up when first used: a generated file loads on first use in the build (generated/index.ts). */
export const ServiceDefinitions = lazyProperties({
  capacity: () => CapacityServiceService,
  scheduling: () => SchedulingServiceService,
  queues: () => QueueServiceService,
  deployments: () => DeploymentServiceService,
  instances: () => InstanceServiceService,
  keys: () => KeyServiceService,
  access: () => AccessServiceService,
  secrets: () => SecretServiceService,
  modelDelivery: () => ModelDeliveryServiceService,
});

/** Directory holding the .proto sources (used for gRPC reflection at run time). */
export const PROTO_ROOT = require('path').resolve(__dirname, '../../../proto');
