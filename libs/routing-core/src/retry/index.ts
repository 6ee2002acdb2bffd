export * from './retry-plan';
