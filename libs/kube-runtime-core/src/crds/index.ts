export * from './resource';
export { checkShape, resourceField, type Shape } from './shape';
export * from './offline';
export * from './model-deployment';
export * from './gpu-instance';
export * from './instance-type';
export * from './printer-columns';
export * from './keyed-reconciler';
