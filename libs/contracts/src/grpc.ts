import { CapacityServiceService } from './generated/gpufleet/v1/capacity';
import { QueueServiceService, SchedulingServiceService } from './generated/gpufleet/v1/scheduling';

/** Fully-qualified gRPC service names, as registered with health and reflection. */
export const ServiceNames = {
  capacity: 'gpufleet.v1.CapacityService',
  scheduling: 'gpufleet.v1.SchedulingService',
  queues: 'gpufleet.v1.QueueService',
} as const;

export const ServiceDefinitions = {
  capacity: CapacityServiceService,
  scheduling: SchedulingServiceService,
  queues: QueueServiceService,
} as const;

/** Directory holding the .proto sources (used for gRPC reflection at run time). */
export const PROTO_ROOT = require('path').resolve(__dirname, '../../../proto');
