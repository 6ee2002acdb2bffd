export * from './engine-load';
export * from './parse-engine-metrics';
