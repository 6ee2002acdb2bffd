export * from './errors';
export * from './resources';
export * from './health';
export * from './preferred';
export * from './allocate';
export * from './mig-minors';
export * from './plugin-state';
