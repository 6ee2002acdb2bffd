import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Workload, WorkloadSpec } from '@gpufleet/contracts';
import { GrpcError } from '@gpufleet/grpc-kit';
import { RevisionConflictError } from '@gpufleet/messaging';
import { describeProblems, emptyStatus, missingLocalQueueExpectation, poolShapeFromCapacity, routeLocalQueue, validateWorkloadSpec, type ValidationProblem } from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { DefaultQueues } from './default-queues.service';
import { SchedulingStore } from './scheduling-store.service';
import { keyOfSpec, storeKey, workloadKey } from './workload-keys';

/**
 * Validates workloads against the live queues and pools and records them as Pending: one path
 * for SchedulingService.SubmitWorkload and for the workloads the deployment and instance
 * controllers create for their replicas.
 */
@Injectable()
export class WorkloadSubmitter {
  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    readonly defaultQueues: DefaultQueues,
  ) {}

  /** Every problem with the spec (empty when it could be admitted some day). */
  problems(spec: WorkloadSpec): ValidationProblem[] {
    const model = this.capacity.model;
    return validateWorkloadSpec(spec, {
      resolveLocalQueue: (namespace, localQueue, pool) => {
        const lq = this.store.localQueues.get(workloadKey(namespace, localQueue))?.value;
        if (!lq) return { ok: false, expected: missingLocalQueueExpectation(namespace), got: JSON.stringify(localQueue) };
        const route = routeLocalQueue(lq, pool, this.store.clusterQueueLookup);
        if (!route.ok) return route;
        const cq = route.clusterQueue;
        const shape = poolShapeFromCapacity(model, cq.pool);
        if (!shape) return { ok: false, expected: `a LocalQueue whose ClusterQueue's pool has nodes (pool "${cq.pool}" has none)`, got: localQueue };
        return { ok: true, clusterQueue: cq.name, pool: shape };
      },
    });
  }

  /** Validates and records the workload as Pending; the leader admits it. */
  async submit(spec: WorkloadSpec): Promise<Workload> {
    await this.defaultQueues.ensureLocalQueue(spec.namespace, spec.localQueue);
    const problems = this.problems(spec);
    if (problems.length > 0) {
      throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT', describeProblems(problems), problems[0].field);
    }
    const key = keyOfSpec(spec);
    const workload: Workload = { spec, status: { ...emptyStatus(), submittedAt: new Date() } };
    try {
      await this.store.workloads.store.create(storeKey(key), workload);
    } catch (err) {
      if (err instanceof RevisionConflictError) {
        throw new GrpcError(GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS', `workload "${key}" already exists; delete it first or pick another name`);
      }
      throw err;
    }
    return workload;
  }
}
