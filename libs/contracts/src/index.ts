// Every generated message, service and enum, each file loaded on first use in the build
// (generated/index.ts).
export * from './generated';
export { Timestamp } from './generated/google/protobuf/timestamp';
export * from './events';
export * from './grpc';
export * from './keys';
export * from './kv-cache-events';
export * from './redis-keys';
