export * from './errors';
export * from './layout';
export * from './desired-pods';
export * from './pod-devices';
export * from './engine-mode';
export * from './pod-plan';
export * from './pod-diff';
export * from './pod-status';
