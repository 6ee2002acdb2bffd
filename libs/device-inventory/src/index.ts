export * from './provider';
export * from './host';
export * from './labels';
export * from './simulated';
export * from './inventory';
export * from './vendors';
export * from './catalog';
