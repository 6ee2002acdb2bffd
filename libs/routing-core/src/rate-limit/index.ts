export * from './rate-limit';
export * from './scripts';
