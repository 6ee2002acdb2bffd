import { randomUUID } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { DeploymentPhase, DeploymentServiceServer, ModelDeployment, ModelDeploymentSpec, ModelDeploymentStatus, parseWorkloadKey, WatchDeploymentsResponse } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, paginate, serverStream, unary, watchSender } from '@gpufleet/grpc-kit';
import { RevisionConflictError } from '@gpufleet/messaging';
import { normalizeDeploymentSpec, replicaWorkloadSpec, roleResources, validateDeploymentSpec, rolePool, sizeDeployment, sizedRole, unfit, type RoleSizing } from '@gpufleet/deployments-core';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../config';
import { WorkloadApiContext } from './workload-api-context';
import { requireSpecSize } from './request-names';
import { storeKey, workloadKey } from './workload-keys';

/**
 * DeploymentService: any replica validates and records deployments in the store (spec and
 * generation); the leader's DeploymentController creates, replaces and deletes the replicas'
 * workloads and writes the status.
 */
@Injectable()
export class DeploymentsGrpc {
  constructor(
    private readonly ctx: WorkloadApiContext,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  private get store() {
    return this.ctx.store.deployments;
  }

  private async validated(raw: ModelDeploymentSpec | undefined): Promise<ModelDeploymentSpec> {
    if (!raw) throw invalidArgument('spec', 'a ModelDeploymentSpec');
    requireSpecSize(ModelDeploymentSpec.encode(raw).finish().length);
    const spec = normalizeDeploymentSpec(raw);
    await this.ctx.submitter.defaultQueues.ensureLocalQueue(spec.namespace, spec.localQueue);
    const problems = validateDeploymentSpec(spec, this.ctx);
    // With a described artifact, the memory estimate refuses what cannot fit and picks the
    // tensor-parallel size; an artifact still being described is accepted (MemoryFits says).
    let sized: RoleSizing[] | undefined;
    if (problems.length === 0 && spec.artifact) {
      const state = this.ctx.artifactModel(spec.namespace, spec.artifact);
      if (state.kind === 'described') {
        const sizing = sizeDeployment(spec, state.model, this.ctx);
        if (sizing.problems.length > 0) this.ctx.refuse(sizing.problems);
        const refused = unfit(sizing.roles);
        if (refused.length > 0) {
          const first = sizing.roles.find((r) => !r.fits)!;
          throw new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'INSUFFICIENT_GPU_MEMORY', refused.join('; ').replace(/INSUFFICIENT_GPU_MEMORY: /g, ''), `roles[${first.index}].instanceType`);
        }
        sized = sizing.roles;
      }
    }
    if (problems.length === 0) {
      spec.roles.forEach((declared, i) => {
        const role = sizedRole(declared, sized);
        const resources = roleResources(role, this.ctx);
        if (resources) problems.push(...this.ctx.workloadProblems(replicaWorkloadSpec(spec, role, 0, resources, 'check', rolePool(role, this.ctx)), `roles[${i}]`).filter((p) => p.field !== 'name'));
      });
    }
    if (problems.length > 0) this.ctx.refuse(problems);
    return spec;
  }

  private find(namespace: string, name: string): ModelDeployment {
    this.ctx.requireLabel('namespace', namespace);
    this.ctx.requireLabel('name', name);
    const found = this.store.entries.get(workloadKey(namespace, name))?.value;
    if (!found) throw notFound('deployment', workloadKey(namespace, name), 'list them with `gpufleet get deployments`');
    return found;
  }

  private modify(namespace: string, name: string, change: (current: ModelDeployment) => ModelDeployment): Promise<ModelDeployment> {
    return this.ctx.modifyRecord(this.store.store, 'deployment', namespace, name, change);
  }

  readonly implementation: DeploymentServiceServer = {
    createDeployment: unary(async (req) => {
      this.ctx.requireReady();
      const spec = await this.validated(req.spec);
      const desiredReplicas = spec.roles.reduce((n, r) => n + r.replicas, 0);
      const status = ModelDeploymentStatus.fromPartial({ phase: DeploymentPhase.DEPLOYMENT_PHASE_STARTING, desiredReplicas });
      const deployment: ModelDeployment = { spec, status, generation: 1, createdAt: new Date(), deletionRequestedAt: undefined, uid: randomUUID() };
      try {
        await this.store.store.create(storeKey(workloadKey(spec.namespace, spec.name)), deployment);
      } catch (err) {
        if (err instanceof RevisionConflictError) {
          throw new GrpcError(GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS', `deployment "${workloadKey(spec.namespace, spec.name)}" already exists; update it, or delete it first`);
        }
        throw err;
      }
      return { deployment };
    }),

    getDeployment: unary((req) => {
      this.ctx.requireReady();
      return { deployment: this.find(req.namespace, req.name) };
    }),

    listDeployments: unary((req) => {
      this.ctx.requireReady();
      if (req.namespace) this.ctx.requireLabel('namespace', req.namespace);
      const all = [...this.store.entries.values()]
        .map((e) => e.value)
        .filter((d) => !req.namespace || d.spec?.namespace === req.namespace);
      const page = paginate(all, (x) => `${x.spec?.namespace}/${x.spec?.name}`, req.pageSize, req.pageToken);
      return { deployments: page.items, nextPageToken: page.nextPageToken };
    }),

    updateDeployment: unary(async (req) => {
      this.ctx.requireReady();
      const spec = await this.validated(req.spec);
      // An unchanged spec (a manifest applied again) is not a new generation.
      const same = (d: ModelDeployment) => JSON.stringify(ModelDeploymentSpec.toJSON(d.spec!)) === JSON.stringify(ModelDeploymentSpec.toJSON(spec));
      const deployment = await this.modify(spec.namespace, spec.name, (d) => (same(d) ? d : { ...d, spec, generation: d.generation + 1 }));
      return { deployment };
    }),

    scaleDeployment: unary(async (req) => {
      this.ctx.requireReady();
      const deployment = await this.modify(req.namespace, req.name, (d) => {
        const roles = d.spec!.roles;
        const index = req.role ? roles.findIndex((r) => r.role === req.role) : roles.length === 1 ? 0 : -1;
        if (index < 0) {
          throw invalidArgument('role', req.role ? `a role of the deployment (${roles.map((r) => r.role).join(', ')})` : `a role name: the deployment has ${roles.length} roles (${roles.map((r) => r.role).join(', ')})`, req.role || undefined);
        }
        const spec = { ...d.spec!, roles: roles.map((r, i) => (i === index ? { ...r, replicas: req.replicas } : r)) };
        const problems = validateDeploymentSpec(spec, this.ctx).filter((p) => p.field.endsWith('.replicas'));
        if (problems.length > 0) this.ctx.refuse(problems.map((p) => ({ ...p, field: 'replicas', message: p.message.replace(p.field, 'replicas') })));
        return { ...d, spec, generation: d.generation + 1 };
      });
      return { deployment };
    }),

    deleteDeployment: unary(async (req) => {
      this.ctx.requireReady();
      const deployment = await this.modify(req.namespace, req.name, (d) => ({ ...d, deletionRequestedAt: new Date() }));
      return { deployment };
    }),

    watchDeployments: serverStream((req, call) => {
      this.ctx.requireReady();
      if (req.namespace) this.ctx.requireLabel('namespace', req.namespace);
      const matches = (d: ModelDeployment) => !req.namespace || d.spec?.namespace === req.namespace;
      const known = new Set(this.store.entries.keys());
      const sender = watchSender(call, { maxBuffered: this.config.WATCH_MAX_BUFFERED, what: 'deployments', onClose: () => stop() });
      const stop = this.store.listen((key, change) => {
        const added = change.kind === 'put' && !known.has(key);
        if (change.kind === 'put') known.add(key);
        else known.delete(key);
        const msg: WatchDeploymentsResponse =
          change.kind === 'put'
            ? { type: added ? 'ADDED' : 'MODIFIED', deployment: change.value }
            : { type: 'DELETED', deployment: ModelDeployment.fromPartial({ spec: parseWorkloadKey(key) ?? {} }) };
        if (msg.deployment && matches(msg.deployment)) sender.send(msg);
      });
      if (req.initial) {
        const snapshot = [...this.store.entries.values()].filter(({ value }) => matches(value));
        sender.allowSnapshot(snapshot.length);
        for (const { value } of snapshot) sender.send({ type: 'ADDED', deployment: value });
      }
    }),
  };
}
