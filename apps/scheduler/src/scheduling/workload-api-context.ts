import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { PodResources, WorkloadSpec } from '@gpufleet/contracts';
import { GrpcError, notFound, unavailable } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { artifactModelState, type ArtifactModelState, type DeploymentValidationContext, type FamilyMember, type InstanceTypeResolution, type SizingContext } from '@gpufleet/deployments-core';
import { describeProblems, isManagedQueue, missingLocalQueueExpectation, routeLocalQueue, type ValidationProblem } from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SchedulingStore } from './scheduling-store.service';
import { WorkloadSubmitter } from './workload-submitter';
import { requireLabel } from './request-names';
import { storeKey, workloadKey } from './workload-keys';

/** What DeploymentService and InstanceService share: readiness, name checks, queue and InstanceType lookups. */
@Injectable()
export class WorkloadApiContext implements DeploymentValidationContext, SizingContext {
  constructor(
    readonly store: SchedulingStore,
    readonly capacity: CapacityStateService,
    readonly submitter: WorkloadSubmitter,
  ) {}

  requireReady(): void {
    if (!this.store.ready || !this.capacity.ready) throw unavailable('the scheduler is still loading its state from the store; retry shortly');
  }

  requireLabel(field: string, value: string): void {
    requireLabel(field, value);
  }

  /**
   * Where a deployment's or instance's LocalQueue admits pods of `pool`. Only a managed LocalQueue
   * routes by pool; for any other the caller compares its pool with the InstanceType's, so the
   * refusal names both.
   */
  resolveLocalQueue(namespace: string, localQueue: string, pool?: string): { ok: true; pool: string } | { ok: false; expected: string } {
    const lq = this.store.localQueues.get(workloadKey(namespace, localQueue))?.value;
    if (!lq) return { ok: false, expected: missingLocalQueueExpectation(namespace) };
    const route = routeLocalQueue(lq, isManagedQueue(lq) ? pool : undefined, this.store.clusterQueueLookup);
    return route.ok ? { ok: true, pool: route.clusterQueue.pool } : { ok: false, expected: `${route.expected} (${route.got})` };
  }

  resolveInstanceType(name: string): InstanceTypeResolution | undefined {
    const it = this.capacity.model.getInstanceType(name);
    if (!it?.unit) return undefined;
    const resources: PodResources = {
      accelerator: it.unit.accelerators > 0 ? { whole: it.unit.accelerators } : undefined,
      vcpu: it.unit.vcpu,
      memoryMib: it.unit.memoryMib,
    };
    return { pool: it.pool, resources, ...(it.unit.acceleratorMemoryMib ? { acceleratorMemoryMib: it.unit.acceleratorMemoryMib } : {}) };
  }

  /** The GPU InstanceTypes of a pool (`<pool>.<N>x`), for auto tensor parallel. */
  instanceTypesOfPool(pool: string): FamilyMember[] {
    return this.capacity.model
      .listInstanceTypes()
      .filter((it) => it.pool === pool && (it.unit?.accelerators ?? 0) > 0)
      .map((it) => ({ name: it.name, accelerators: it.unit!.accelerators, ...(it.unit!.acceleratorMemoryMib ? { acceleratorMemoryMib: it.unit!.acceleratorMemoryMib } : {}) }));
  }

  /** What the artifact's status says about its model (model delivery describes it after resolving). */
  artifactModel(namespace: string, name: string): ArtifactModelState {
    return artifactModelState(name, this.store.artifacts.get(`${namespace}.${name}`)?.value);
  }

  /** Keyed as model delivery writes the artifacts bucket: "<namespace>.<name>". */
  resolveArtifact(namespace: string, name: string): boolean {
    return this.store.artifacts.get(`${namespace}.${name}`) !== undefined;
  }

  /** INVALID_ARGUMENT naming the first field, with every problem in the message. */
  refuse(problems: readonly ValidationProblem[]): never {
    throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT', describeProblems(problems), problems[0].field);
  }

  /**
   * The admission checks a replica's workload would meet (pool fit, topology, queue), run now
   * so that a deployment that could never be placed is refused at once, with its fields named
   * as the caller wrote them.
   */
  workloadProblems(spec: WorkloadSpec, fieldPrefix: string): ValidationProblem[] {
    return this.submitter.problems(spec).map((p) => {
      const field = p.field.replace(/^podSets\[0\]\./, `${fieldPrefix}.`).replace(/^podSets\[0\]$/, fieldPrefix);
      return { ...p, field, message: p.message.replace(p.field, field) };
    });
  }

  /**
   * Read-modify-write of one deployment or instance record (KvStore.modify: compare-and-set,
   * retried on a concurrent write). Refused once deletion was requested; `change` returning its argument
   * unchanged writes nothing.
   */
  async modifyRecord<T extends { deletionRequestedAt?: Date | undefined }>(
    store: KvStore<T>,
    kind: 'deployment' | 'instance',
    namespace: string,
    name: string,
    change: (current: T) => T,
  ): Promise<T> {
    this.requireLabel('namespace', namespace);
    this.requireLabel('name', name);
    const id = workloadKey(namespace, name);
    const written = await store.modify(storeKey(id), (current) => {
      if (!current) throw notFound(kind, id, `list them with \`gpufleet get ${kind}s\``);
      if (current.value.deletionRequestedAt) throw new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'FAILED_PRECONDITION', `${kind} "${id}" is being deleted`);
      const next = change(current.value);
      return next === current.value ? undefined : next;
    });
    return written!.value;
  }
}
