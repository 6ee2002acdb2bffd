import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ClusterQueue, Cohort, QueueServiceServer, WorkloadPhase } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, paginate, unary, unavailable } from '@gpufleet/grpc-kit';
import { describeProblems, normalizeClusterQueue, validateClusterQueue, validateLocalQueue } from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { AdmissionService } from './admission.service';
import { SchedulingStore } from './scheduling-store.service';
import { requireLabel } from './request-names';
import { keyOfSpec, storeKey, workloadKey } from './workload-keys';

function rejectProblems(problems: ReturnType<typeof validateClusterQueue>): void {
  if (problems.length > 0) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT', describeProblems(problems), problems[0].field);
}

function precondition(message: string): GrpcError {
  return new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'FAILED_PRECONDITION', message);
}

/** QueueService: the admin API for ClusterQueues, LocalQueues and cohorts, kept in the store. */
@Injectable()
export class QueuesGrpc {
  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly admission: AdmissionService,
  ) {}

  /** Readiness, for every method (who may call which is in access/access-rules.ts). */
  private guard<Req, Res>(handler: (req: Req) => Promise<Res> | Res) {
    return unary<Req, Res>((req) => {
      if (!this.store.ready) throw unavailable('the scheduler is still loading its state from the store; retry shortly');
      return handler(req);
    });
  }

  private withUsage(cq: ClusterQueue): ClusterQueue {
    const live = this.admission.liveQueues;
    if (live?.getClusterQueue(cq.name)) return { ...cq, usage: live.usage(cq.name) };
    const workloads = [...this.store.workloads.entries.values()].map((e) => e.value).filter((w) => w.status?.clusterQueue === cq.name);
    const admitted = workloads.filter((w) => w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
    return {
      ...cq,
      usage: {
        admittedCredits: admitted.reduce((n, w) => n + (w.status?.credits ?? 0), 0),
        borrowedCredits: 0,
        admittedWorkloads: admitted.length,
        pendingWorkloads: workloads.filter((w) => w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_PENDING).length,
      },
    };
  }

  private activeWorkloads(match: (w: { clusterQueue: string; namespace: string; localQueue: string }) => boolean): string[] {
    return [...this.store.workloads.entries.entries()]
      .filter(([, e]) => e.value.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_FINISHED)
      .filter(([, e]) => match({ clusterQueue: e.value.status?.clusterQueue ?? '', namespace: e.value.spec?.namespace ?? '', localQueue: e.value.spec?.localQueue ?? '' }))
      .map(([key]) => key);
  }

  readonly implementation: QueueServiceServer = {
    putClusterQueue: this.guard(async (req) => {
      if (!req.clusterQueue) throw invalidArgument('clusterQueue', 'a ClusterQueue');
      // Validate what was sent, then fill in defaults (normalizing first would hide bad values).
      rejectProblems(validateClusterQueue(req.clusterQueue, { poolExists: (p) => this.capacity.model.getPool(p) !== undefined }));
      const cq = normalizeClusterQueue(req.clusterQueue);
      const existing = this.store.clusterQueues.entries.get(cq.name)?.value;
      if (existing && existing.pool !== cq.pool && this.activeWorkloads((w) => w.clusterQueue === cq.name).length > 0) {
        throw precondition(`ClusterQueue "${cq.name}" has workloads in pool "${existing.pool}"; it cannot move to pool "${cq.pool}" until they finish`);
      }
      const stored = { ...cq, usage: undefined };
      await this.store.clusterQueues.store.put(cq.name, stored);
      return { clusterQueue: this.withUsage(stored) };
    }),
    getClusterQueue: this.guard((req) => {
      requireLabel('name', req.name);
      const cq = this.store.clusterQueues.entries.get(req.name)?.value;
      if (!cq) throw notFound('ClusterQueue', req.name, 'list them with `gpufleet get queues`');
      return { clusterQueue: this.withUsage(cq) };
    }),
    listClusterQueues: this.guard((req) => {
      // Usage only for the page served: it walks the workloads.
      const page = paginate([...this.store.clusterQueues.entries.values()].map((e) => e.value), (cq) => cq.name, req.pageSize, req.pageToken);
      return { clusterQueues: page.items.map((cq) => this.withUsage(cq)), nextPageToken: page.nextPageToken };
    }),
    deleteClusterQueue: this.guard(async (req) => {
      requireLabel('name', req.name);
      if (!this.store.clusterQueues.entries.has(req.name)) throw notFound('ClusterQueue', req.name);
      const holding = this.activeWorkloads((w) => w.clusterQueue === req.name);
      if (holding.length > 0) throw precondition(`ClusterQueue "${req.name}" still has ${holding.length} workload(s) (e.g. ${holding[0]}); delete them first`);
      const users = [...this.store.localQueues.entries.values()].filter((e) => e.value.clusterQueue === req.name);
      if (users.length > 0) throw precondition(`LocalQueue ${users[0].value.namespace}/${users[0].value.name} points at ClusterQueue "${req.name}"; delete or repoint it first`);
      await this.store.clusterQueues.store.delete(req.name);
      return {};
    }),
    putLocalQueue: this.guard(async (req) => {
      if (!req.localQueue) throw invalidArgument('localQueue', 'a LocalQueue');
      const lq = { ...req.localQueue, managedBy: undefined }; // written through the API: the writer's own
      rejectProblems(validateLocalQueue(lq, (name) => this.store.clusterQueues.entries.has(name)));
      const key = workloadKey(lq.namespace, lq.name);
      const existing = this.store.localQueues.entries.get(key)?.value;
      if (existing && existing.clusterQueue !== lq.clusterQueue && this.activeWorkloads((w) => w.namespace === lq.namespace && w.localQueue === lq.name).length > 0) {
        throw precondition(`LocalQueue ${key} holds workloads; it cannot point at another ClusterQueue until they finish`);
      }
      await this.store.localQueues.store.put(storeKey(key), lq);
      return { localQueue: lq };
    }),
    listLocalQueues: this.guard((req) => {
      if (req.namespace) requireLabel('namespace', req.namespace);
      const all = [...this.store.localQueues.entries.values()].map((e) => e.value).filter((q) => !req.namespace || q.namespace === req.namespace);
      const page = paginate(all, keyOfSpec, req.pageSize, req.pageToken);
      return { localQueues: page.items, nextPageToken: page.nextPageToken };
    }),
    deleteLocalQueue: this.guard(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const key = workloadKey(req.namespace, req.name);
      if (!this.store.localQueues.entries.has(key)) throw notFound('LocalQueue', key);
      const holding = this.activeWorkloads((w) => w.namespace === req.namespace && w.localQueue === req.name);
      if (holding.length > 0) throw precondition(`LocalQueue ${key} still holds ${holding.length} workload(s) (e.g. ${holding[0]}); delete them first`);
      await this.store.localQueues.store.delete(storeKey(key));
      return {};
    }),
    listCohorts: this.guard((req) => {
      const cohorts = new Map<string, string[]>();
      for (const { value } of this.store.clusterQueues.entries.values()) {
        if (value.cohort) cohorts.set(value.cohort, [...(cohorts.get(value.cohort) ?? []), value.name]);
      }
      const list: Cohort[] = [...cohorts].map(([name, members]) => ({ name, members: members.sort() }));
      const page = paginate(list, (c) => c.name, req.pageSize, req.pageToken);
      return { cohorts: page.items, nextPageToken: page.nextPageToken };
    }),
  };
}
