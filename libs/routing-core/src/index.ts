// Framework-free routing logic of the inference router: prefix-aware and load-aware replica
// selection (load: this router's in-flight counts and the engines' /metrics), passive health,
// retries, API keys and the shared rate limiter's Redis scripts.
export * from './api-keys';
export * from './engine-load';
export { RoutingConfigError } from './errors';
export * from './health';
export * from './policies';
export * from './prefix-tree';
export * from './rate-limit';
export * from './replica';
export * from './retry';
