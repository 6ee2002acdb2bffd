import { Inject, Injectable } from '@nestjs/common';
import type { KubeConfig } from '@kubernetes/client-node';
import { GPUInstanceSpec, type GPUInstance } from '@gpufleet/contracts';
import { normalizeInstanceSpec } from '@gpufleet/deployments-core';
import { createInstanceRequestOf, CRD_NAMES, deleteInstanceRequestOf, gpuInstanceResourceOf, setInstanceStoppedRequestOf, type GPUInstanceResource } from '@gpufleet/kube-runtime-core';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { Leadership } from '../../leadership/leadership';
import { InstancesGrpc } from '../../scheduling/instances.grpc';
import { SchedulingStore } from '../../scheduling/scheduling-store.service';
import { KUBE_CONFIG } from '../kube-config';
import { invoke, RecordSync } from './record-sync';

/**
 * GPUInstance objects and gpufleet instances, through InstanceService's handlers. An instance's
 * spec is fixed once created except `stop` (SetInstanceStopped): an edit of anything else is
 * refused in `Accepted`, the instance keeps running as created.
 */
@Injectable()
export class GpuInstanceSync extends RecordSync<GPUInstance> {
  constructor(
    @Inject(KUBE_CONFIG) kc: KubeConfig,
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
    store: SchedulingStore,
    instances: InstancesGrpc,
    leadership: Leadership,
    @Inject(LOGGER) logger: Logger,
  ) {
    const api = instances.implementation;
    super(kc, config, store, leadership, logger, {
      kind: 'GPUInstance',
      plural: CRD_NAMES.GPUInstance.plural,
      records: () => store.instances,
      create: async (resource) => {
        const request = createInstanceRequestOf(resource as unknown as GPUInstanceResource);
        return request.ok ? (await invoke(api.createInstance, request.value)).instance! : request.message;
      },
      update: async (resource, current) => {
        const r = resource as unknown as GPUInstanceResource;
        const request = createInstanceRequestOf(r);
        if (!request.ok) return request.message;
        const wanted = request.value.spec!.stop;
        const fixed = (spec: GPUInstanceSpec) => JSON.stringify(GPUInstanceSpec.toJSON({ ...spec, stop: false }));
        if (fixed(normalizeInstanceSpec(request.value.spec!)) !== fixed(current.spec!)) {
          return 'FAILED_PRECONDITION: a GPUInstance\'s spec cannot change after creation, except spec.stop; delete it and apply it again';
        }
        return wanted === current.spec!.stop ? current : (await invoke(api.setInstanceStopped, setInstanceStoppedRequestOf(r))).instance!;
      },
      remove: (resource) => invoke(api.deleteInstance, deleteInstanceRequestOf(resource)),
      resourceOf: (record, observedGeneration) => gpuInstanceResourceOf(record, { observedGeneration }) as never,
    });
  }
}
