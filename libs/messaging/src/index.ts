export * from './connection';
export * from './permissions';
export * from './events';
export * from './kv-store';
export * from './nest/messaging.module';
export * from './lease';
export * from './kv-mirror';
export * from './reconcile-loop';
