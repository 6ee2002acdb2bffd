export * from './connection';
export * from './events';
export * from './kv-store';
export * from './trace-headers';
export * from './nest/messaging.module';
