import { CapacityServiceService } from './generated/gpufleet/v1/capacity';
import { QueueServiceService, SchedulingServiceService } from './generated/gpufleet/v1/scheduling';
import { DeploymentServiceService } from './generated/gpufleet/v1/deployments';
import { InstanceServiceService } from './generated/gpufleet/v1/instances';
import { KeyServiceService } from './generated/gpufleet/v1/router';

/** Fully-qualified gRPC service names, as registered with health and reflection. */
export const ServiceNames = {
  capacity: 'gpufleet.v1.CapacityService',
  scheduling: 'gpufleet.v1.SchedulingService',
  queues: 'gpufleet.v1.QueueService',
  deployments: 'gpufleet.v1.DeploymentService',
  instances: 'gpufleet.v1.InstanceService',
  keys: 'gpufleet.v1.KeyService',
} as const;

export const ServiceDefinitions = {
  capacity: CapacityServiceService,
  scheduling: SchedulingServiceService,
  queues: QueueServiceService,
  deployments: DeploymentServiceService,
  instances: InstanceServiceService,
  keys: KeyServiceService,
} as const;

/** Directory holding the .proto sources (used for gRPC reflection at run time). */
export const PROTO_ROOT = require('path').resolve(__dirname, '../../../proto');
