export * from './bootstrap';
export * from './grpc-lifecycle';
export * from './listen';
export * from './shutdown';
