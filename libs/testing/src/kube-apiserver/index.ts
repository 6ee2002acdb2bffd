export { startKubeApiServer } from './server';
export type { KubeApiServer, KubeApiServerOptions, KubeConfigOptions, RequestRecord } from './server';
export { BUILTIN_KINDS, KindTable, groupVersion } from './kinds';
export type { PrinterColumn, ResourceKind } from './kinds';
export { KubeApiError } from './errors';
export type { Status, StatusCause, StatusReason } from './errors';
export { ObjectStore } from './store';
export { KubeResources } from './resources';
export type { KubeObject, ObjectMeta, OwnerReference, ManagedFieldsEntry } from './types';
