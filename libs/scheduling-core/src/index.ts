export * from './placer';
