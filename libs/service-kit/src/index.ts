export * from './bootstrap';
export * from './grpc-lifecycle';
