export * from './clock';
export * from './passive-health';
