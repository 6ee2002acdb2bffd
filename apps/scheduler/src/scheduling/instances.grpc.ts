import { randomUUID } from 'crypto';
import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { GPUInstance, GPUInstanceSpec, GPUInstanceStatus, InstancePhase, InstanceServiceServer } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, paginate, unary } from '@gpufleet/grpc-kit';
import { RevisionConflictError } from '@gpufleet/messaging';
import { instanceResources, instanceWorkloadSpec, normalizeInstanceSpec, validateInstanceSpec, instancePool } from '@gpufleet/deployments-core';
import { WorkloadApiContext } from './workload-api-context';
import { requireSpecSize } from './request-names';
import { storeKey, workloadKey } from './workload-keys';

/**
 * InstanceService: records GPU instances in the store; the leader's InstanceController gives
 * each a workload (its devices) and reports the sshd endpoint the node runtime started.
 */
@Injectable()
export class InstancesGrpc {
  constructor(private readonly ctx: WorkloadApiContext) {}

  private get store() {
    return this.ctx.store.instances;
  }

  private async validated(raw: GPUInstanceSpec | undefined): Promise<GPUInstanceSpec> {
    if (!raw) throw invalidArgument('spec', 'a GPUInstanceSpec');
    requireSpecSize(GPUInstanceSpec.encode(raw).finish().length);
    const spec = normalizeInstanceSpec(raw);
    await this.ctx.submitter.defaultQueues.ensureLocalQueue(spec.namespace, spec.localQueue);
    const problems = validateInstanceSpec(spec, this.ctx);
    const resources = problems.length === 0 ? instanceResources(spec, this.ctx) : undefined;
    if (resources) problems.push(...this.ctx.workloadProblems(instanceWorkloadSpec(spec, resources, 'check', instancePool(spec, this.ctx)), 'resources').filter((p) => p.field !== 'name'));
    if (problems.length > 0) this.ctx.refuse(problems);
    return spec;
  }

  private find(namespace: string, name: string): GPUInstance {
    this.ctx.requireLabel('namespace', namespace);
    this.ctx.requireLabel('name', name);
    const found = this.store.entries.get(workloadKey(namespace, name))?.value;
    if (!found) throw notFound('instance', workloadKey(namespace, name), 'list them with `gpufleet get instances`');
    return found;
  }

  private modify(namespace: string, name: string, change: (current: GPUInstance) => GPUInstance): Promise<GPUInstance> {
    return this.ctx.modifyRecord(this.store.store, 'instance', namespace, name, change);
  }

  readonly implementation: InstanceServiceServer = {
    createInstance: unary(async (req) => {
      this.ctx.requireReady();
      const spec = await this.validated(req.spec);
      const status = GPUInstanceStatus.fromPartial({ phase: spec.stop ? InstancePhase.INSTANCE_PHASE_STOPPED : InstancePhase.INSTANCE_PHASE_PENDING, message: spec.stop ? 'created stopped' : 'being created' });
      const instance: GPUInstance = { spec, status, generation: 1, createdAt: new Date(), deletionRequestedAt: undefined, uid: randomUUID() };
      try {
        await this.store.store.create(storeKey(workloadKey(spec.namespace, spec.name)), instance);
      } catch (err) {
        if (err instanceof RevisionConflictError) {
          throw new GrpcError(GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS', `instance "${workloadKey(spec.namespace, spec.name)}" already exists; delete it first or pick another name`);
        }
        throw err;
      }
      return { instance };
    }),

    getInstance: unary((req) => {
      this.ctx.requireReady();
      return { instance: this.find(req.namespace, req.name) };
    }),

    listInstances: unary((req) => {
      this.ctx.requireReady();
      if (req.namespace) this.ctx.requireLabel('namespace', req.namespace);
      const all = [...this.store.entries.values()]
        .map((e) => e.value)
        .filter((i) => !req.namespace || i.spec?.namespace === req.namespace);
      const page = paginate(all, (x) => `${x.spec?.namespace}/${x.spec?.name}`, req.pageSize, req.pageToken);
      return { instances: page.items, nextPageToken: page.nextPageToken };
    }),

    setInstanceStopped: unary(async (req) => {
      this.ctx.requireReady();
      const instance = await this.modify(req.namespace, req.name, (i) => (i.spec!.stop === req.stop ? i : { ...i, spec: { ...i.spec!, stop: req.stop }, generation: i.generation + 1 }));
      return { instance };
    }),

    deleteInstance: unary(async (req) => {
      this.ctx.requireReady();
      const instance = await this.modify(req.namespace, req.name, (i) => ({ ...i, deletionRequestedAt: new Date() }));
      return { instance };
    }),
  };
}
