/**
 * What every gRPC method of the scheduler needs of its caller (docs/security.md#roles): reads of
 * a namespace need `view`, writes `edit`, cluster-scoped objects `admin`; capacity (nodes, pools,
 * InstanceTypes) and ClusterQueues are readable by anyone with a role, as they are what
 * deployments and instances ask for. An empty namespace on a list or watch is every namespace.
 * AccessRules is a mapped type: a new RPC without a rule here does not compile.
 */
import { needs } from '@gpufleet/access-core';
import type { AccessServiceServer, CapacityServiceServer, DeploymentServiceServer, InstanceServiceServer, QueueServiceServer, SchedulingServiceServer, SecretServiceServer } from '@gpufleet/contracts';
import type { AccessRules } from '@gpufleet/grpc-kit';

export const CAPACITY_RULES: AccessRules<CapacityServiceServer> = {
  listNodes: () => needs.anyRole,
  getNode: () => needs.anyRole,
  listPools: () => needs.anyRole,
  listInstanceTypes: () => needs.anyRole,
  getInstanceType: () => needs.anyRole,
  watchInstanceTypes: () => needs.anyRole,
};

export const SCHEDULING_RULES: AccessRules<SchedulingServiceServer> = {
  submitWorkload: (r) => needs.edit(r.spec?.namespace ?? ''),
  getWorkload: (r) => needs.view(r.namespace),
  listWorkloads: (r) => needs.view(r.namespace),
  watchWorkloads: (r) => needs.view(r.namespace),
  deleteWorkload: (r) => needs.edit(r.namespace),
  explainPending: (r) => needs.view(r.namespace),
};

export const QUEUE_RULES: AccessRules<QueueServiceServer> = {
  putClusterQueue: () => needs.admin,
  getClusterQueue: () => needs.anyRole,
  listClusterQueues: () => needs.anyRole,
  deleteClusterQueue: () => needs.admin,
  putLocalQueue: (r) => needs.edit(r.localQueue?.namespace ?? ''),
  listLocalQueues: (r) => needs.view(r.namespace),
  deleteLocalQueue: (r) => needs.edit(r.namespace),
  listCohorts: () => needs.anyRole,
};

export const DEPLOYMENT_RULES: AccessRules<DeploymentServiceServer> = {
  createDeployment: (r) => needs.edit(r.spec?.namespace ?? ''),
  getDeployment: (r) => needs.view(r.namespace),
  listDeployments: (r) => needs.view(r.namespace),
  updateDeployment: (r) => needs.edit(r.spec?.namespace ?? ''),
  scaleDeployment: (r) => needs.edit(r.namespace),
  deleteDeployment: (r) => needs.edit(r.namespace),
  watchDeployments: (r) => needs.view(r.namespace),
};

export const INSTANCE_RULES: AccessRules<InstanceServiceServer> = {
  createInstance: (r) => needs.edit(r.spec?.namespace ?? ''),
  getInstance: (r) => needs.view(r.namespace),
  listInstances: (r) => needs.view(r.namespace),
  setInstanceStopped: (r) => needs.edit(r.namespace),
  deleteInstance: (r) => needs.edit(r.namespace),
};

/** Secrets are namespaced: metadata (key names, size) for view, values written by edit; no method returns a value. */
export const SECRET_RULES: AccessRules<SecretServiceServer> = {
  putSecret: (r) => needs.edit(r.namespace),
  getSecret: (r) => needs.view(r.namespace),
  listSecrets: (r) => needs.view(r.namespace),
  deleteSecret: (r) => needs.edit(r.namespace),
};

export const ACCESS_RULES: AccessRules<AccessServiceServer> = {
  whoAmI: () => needs.authenticated,
  createUser: () => needs.admin,
  getUser: () => needs.admin,
  listUsers: () => needs.admin,
  deleteUser: () => needs.admin,
  createToken: () => needs.admin,
  listTokens: () => needs.admin,
  revokeToken: () => needs.admin,
  createRoleBinding: () => needs.admin,
  listRoleBindings: () => needs.admin,
  deleteRoleBinding: () => needs.admin,
};
