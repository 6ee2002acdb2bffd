import { Inject, Injectable } from '@nestjs/common';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ModelDeployment } from '@gpufleet/contracts';
import {
  CRD_NAMES,
  createDeploymentRequestOf,
  deleteDeploymentRequestOf,
  modelDeploymentResourceOf,
  updateDeploymentRequestOf,
  type ModelDeploymentResource,
} from '@gpufleet/kube-runtime-core';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { Leadership } from '../../leadership/leadership';
import { DeploymentsGrpc } from '../../scheduling/deployments.grpc';
import { SchedulingStore } from '../../scheduling/scheduling-store.service';
import { KUBE_CONFIG } from '../kube-config';
import { invoke, RecordSync } from './record-sync';

export { CREATED_BY_ANNOTATION, DEPLOYMENT_FINALIZER, RECORD_UID_ANNOTATION } from './record-sync';

/** ModelDeployment objects and gpufleet deployments, through DeploymentService's handlers. */
@Injectable()
export class ModelDeploymentSync extends RecordSync<ModelDeployment> {
  constructor(
    @Inject(KUBE_CONFIG) kc: KubeConfig,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
    store: SchedulingStore,
    deployments: DeploymentsGrpc,
    leadership: Leadership,
    @Inject(LOGGER) logger: Logger,
  ) {
    const api = deployments.implementation;
    super(kc, config, store, leadership, logger, {
      kind: 'ModelDeployment',
      plural: CRD_NAMES.ModelDeployment.plural,
      records: () => store.deployments,
      create: async (resource) => {
        const request = createDeploymentRequestOf(resource as unknown as ModelDeploymentResource);
        return request.ok ? (await invoke(api.createDeployment, request.value)).deployment! : request.message;
      },
      update: async (resource) => {
        const request = updateDeploymentRequestOf(resource as unknown as ModelDeploymentResource);
        return request.ok ? (await invoke(api.updateDeployment, request.value)).deployment! : request.message;
      },
      remove: (resource) => invoke(api.deleteDeployment, deleteDeploymentRequestOf(resource)),
      resourceOf: (record, observedGeneration) => modelDeploymentResourceOf(record, { observedGeneration }) as never,
    });
  }
}
