export * from './clock';
export * from './hash';
export * from './prefix-cache';
export * from './latency';
export * from './generation';
export * from './embedding';
export * from './faults';
export * from './scheduler';
