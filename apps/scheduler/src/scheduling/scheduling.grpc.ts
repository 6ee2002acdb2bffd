import { Inject, Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  OwnerLabels,
  parseWorkloadKey,
  PendingExplanation,
  SchedulingServiceServer,
  Workload,
  WorkloadPhase,
  WatchWorkloadsResponse,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { ownerOf } from '@gpufleet/deployments-core';
import { GrpcError, invalidArgument, notFound, paginate, serverStream, unary, unavailable, watchSender } from '@gpufleet/grpc-kit';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../config';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { AdmissionService } from './admission.service';
import { SchedulingStore } from './scheduling-store.service';
import { WorkloadSubmitter } from './workload-submitter';
import { requireLabel, requireSpecSize } from './request-names';
import { keyOfSpec, storeKey, workloadKey } from './workload-keys';

/**
 * SchedulingService: any replica validates and records submissions and deletions in the
 * store; the leader admits them. Reads come from this replica's mirror of the store, with the
 * leader's live pending explanation where this replica leads.
 */
/** Labels only the scheduler writes: they name a workload's owning deployment or instance. */
const OWNER_LABELS: readonly string[] = Object.values(OwnerLabels);

@Injectable()
export class SchedulingGrpc {
  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly admission: AdmissionService,
    private readonly submitter: WorkloadSubmitter,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  private ready(): void {
    if (!this.store.ready || !this.capacity.ready) throw unavailable('the scheduler is still loading its state from the store; retry shortly');
  }

  private find(namespace: string, name: string): Workload {
    requireLabel('namespace', namespace);
    requireLabel('name', name);
    const key = workloadKey(namespace, name);
    const live = this.admission.live?.getWorkload(key);
    const stored = this.store.workloads.entries.get(key)?.value;
    const workload = live ?? stored;
    if (!workload) throw notFound('workload', key, 'list them with `gpufleet get workloads`');
    return live && stored ? { ...stored, status: live.status } : workload;
  }

  private explain(w: Workload): PendingExplanation | undefined {
    if (w.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_PENDING && w.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED) return undefined;
    const live = this.admission.live;
    const key = w.spec ? keyOfSpec(w.spec) : '';
    return live?.getWorkload(key) ? live.explainPending(key) : w.status?.pending;
  }

  readonly implementation: SchedulingServiceServer = {
    submitWorkload: unary(async (req) => {
      this.ready();
      if (!req.spec) throw invalidArgument('spec', 'a WorkloadSpec');
      // Here, not in the submitter: a replica workload the controllers write from an accepted
      // deployment must not be refused for a few bytes of template.
      requireSpecSize(WorkloadSpec.encode(req.spec).finish().length);
      // Ownership is the scheduler's to write: a caller's owner label would make its workload a
      // deployment's replica (and hand it that model's traffic) or an instance's pod.
      for (const label of OWNER_LABELS) {
        if (req.spec.labels?.[label] !== undefined) {
          throw invalidArgument(`spec.labels["${label}"]`, 'no gpufleet.io owner label: the scheduler sets these on the workloads of deployments and instances (use DeploymentService or InstanceService)', req.spec.labels[label]);
        }
      }
      // What pods run is the deployment and instance controllers' to write, from specs their
      // services validated and bounded; a workload submitted here only holds its devices.
      if (req.spec.template) {
        throw invalidArgument('spec.template', 'no template: the pods of a submitted workload run nothing (create a deployment or an instance to run an engine or a command)', 'a PodTemplate');
      }
      return { workload: await this.submitter.submit(req.spec) };
    }),

    getWorkload: unary((req) => {
      this.ready();
      const workload = this.find(req.namespace, req.name);
      const pending = this.explain(workload);
      return { workload: pending ? { ...workload, status: { ...workload.status!, pending } } : workload };
    }),

    listWorkloads: unary((req) => {
      this.ready();
      if (req.namespace) requireLabel('namespace', req.namespace);
      const all = [...this.store.workloads.entries.values()].map((e) => e.value);
      const live = this.admission.live;
      const workloads = all
        .map((w) => {
          const l = live && w.spec ? live.getWorkload(keyOfSpec(w.spec)) : undefined;
          return l ? { ...w, status: l.status } : w;
        })
        .filter((w) => !req.namespace || w.spec?.namespace === req.namespace)
        .filter((w) => req.phase === WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED || w.status?.phase === req.phase)
        .filter((w) => !req.clusterQueue || w.status?.clusterQueue === req.clusterQueue)
        .sort((a, b) => (a.status?.submittedAt?.getTime() ?? 0) - (b.status?.submittedAt?.getTime() ?? 0));
      // Pages follow the same order: oldest first, ties by key (a unique, stable sort key).
      const page = paginate(workloads, (w) => `${String(w.status?.submittedAt?.getTime() ?? 0).padStart(16, '0')}/${w.spec ? keyOfSpec(w.spec) : ''}`, req.pageSize, req.pageToken);
      // Why each pending workload waits (the REASON column); bounded, since each explanation
      // walks its queue.
      let explained = 0;
      const withReasons = page.items.map((w) => {
        if (explained >= 500) return w;
        const pending = this.explain(w);
        if (!pending) return w;
        explained++;
        return { ...w, status: { ...w.status!, pending } };
      });
      return { workloads: withReasons, nextPageToken: page.nextPageToken };
    }),

    watchWorkloads: serverStream((req, call) => {
      this.ready();
      if (req.namespace) requireLabel('namespace', req.namespace);
      const matches = (w: Workload) => !req.namespace || w.spec?.namespace === req.namespace;
      // Keys that exist when the watch starts; a put of any other key is a new workload.
      const known = new Set(this.store.workloads.entries.keys());
      const sender = watchSender(call, { maxBuffered: this.config.WATCH_MAX_BUFFERED, what: 'workloads', onClose: () => stop() });
      const stop = this.store.workloads.listen((key, change) => {
        const added = change.kind === 'put' && !known.has(key);
        if (change.kind === 'put') known.add(key);
        else known.delete(key);
        const msg: WatchWorkloadsResponse =
          change.kind === 'put'
            ? { type: added ? 'ADDED' : 'MODIFIED', workload: change.value }
            : { type: 'DELETED', workload: Workload.fromPartial({ spec: parseWorkloadKey(key) ?? {} }) };
        if (msg.workload && matches(msg.workload)) sender.send(msg);
      });
      if (req.initial) {
        const snapshot = [...this.store.workloads.entries.values()].filter(({ value }) => matches(value));
        sender.allowSnapshot(snapshot.length);
        for (const { value } of snapshot) sender.send({ type: 'ADDED', workload: value });
      }
    }),

    deleteWorkload: unary(async (req) => {
      this.ready();
      const workload = this.find(req.namespace, req.name);
      const owner = workload.spec ? ownerOf(workload.spec) : undefined;
      if (owner) {
        const how = owner.kind === 'deployment' ? 'scale or delete the deployment' : 'stop or delete the instance';
        throw new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'FAILED_PRECONDITION', `workload ${req.namespace}/${req.name} belongs to ${owner.kind} "${owner.name}": ${how} instead`);
      }
      // The leader sees the deletion, releases devices and quota and publishes "finished".
      await this.store.workloads.store.delete(storeKey(workloadKey(req.namespace, req.name)));
      return { workload };
    }),

    explainPending: unary((req) => {
      this.ready();
      const workload = this.find(req.namespace, req.name);
      return { workload, explanation: this.explain(workload) };
    }),
  };
}
