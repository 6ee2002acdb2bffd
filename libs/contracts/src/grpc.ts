import { CapacityServiceService } from './generated/gpufleet/v1/capacity';

/** Fully-qualified gRPC service names, as registered with health and reflection. */
export const ServiceNames = {
  capacity: 'gpufleet.v1.CapacityService',
} as const;

export const ServiceDefinitions = {
  capacity: CapacityServiceService,
} as const;

/** Directory holding the .proto sources (used for gRPC reflection at run time). */
export const PROTO_ROOT = require('path').resolve(__dirname, '../../../proto');
