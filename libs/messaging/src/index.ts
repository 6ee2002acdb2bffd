export * from './connection';
export * from './events';
export * from './kv-store';
export * from './nest/messaging.module';
export * from './lease';
export * from './kv-mirror';
export * from './reconcile-loop';
export * from './access-mirror';
