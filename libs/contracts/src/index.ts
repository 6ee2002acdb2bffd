export * from './generated/gpufleet/v1/types';
export * from './generated/gpufleet/v1/devices';
export * from './generated/gpufleet/v1/capacity';
export * from './generated/gpufleet/v1/scheduling';
export { Timestamp } from './generated/google/protobuf/timestamp';
export * from './events';
export * from './grpc';
