export * from './credits';
export * from './default-queues';
export * from './errors';
export * from './queue-manager';
export * from './queue-objects';
