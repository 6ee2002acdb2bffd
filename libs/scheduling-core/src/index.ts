export * from './placer';
export * from './placement';
export * from './ledger';
export * from './validation';
export * from './queues';
export * from './admission';
export * from './recovery';
export * from './liveness';
