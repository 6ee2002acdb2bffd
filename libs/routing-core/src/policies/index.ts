export * from './cache-aware';
export * from './cache-aware-options';
export * from './create-policy';
export * from './least-request';
export * from './round-robin';
export * from './routing-policy';
export * from './session-affinity';
