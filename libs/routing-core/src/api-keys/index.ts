export * from './api-key';
export * from './authorize';
