export * from './credits';
export * from './errors';
export * from './queue-manager';
export * from './queue-objects';
