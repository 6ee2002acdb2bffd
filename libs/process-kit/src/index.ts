export * from './ports';
export * from './binaries';
export * from './supervisor';
export * from './workspace';
export * from './build';
export * from './node-flags';
export * from './service-command';
export * from './process-tree';
