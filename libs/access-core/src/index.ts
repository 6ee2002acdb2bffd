export * from './credential';
export * from './access-token';
export * from './roles';
export * from './directory';
