import { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Metadata, status as GrpcStatus, type handleUnaryCall, type sendUnaryData, type ServerUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { CustomObjectsApi, KubeConfig, makeInformer, PatchStrategy, setHeaderOptions, type Informer, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import { workloadKey } from '@gpufleet/contracts';
import { GPUFLEET_GROUP, GPUFLEET_VERSION, KeyedReconciler, type CustomResource, type OwnerObjectRef, type ResourceCondition } from '@gpufleet/kube-runtime-core';
import type { KvMirror } from '@gpufleet/messaging';
import type { Logger } from '@gpufleet/observability';
import type { SchedulerConfig } from '../../config';
import type { Leadership } from '../../leadership/leadership';
import { isNotFound } from '../kube-api';

/** The finalizer that holds a deleted object until gpufleet has removed its record. */
export const DEPLOYMENT_FINALIZER = 'gpufleet.io/deployment';
/** On objects gpufleet created from a deployment made through gRPC: gpufleet owns their spec. */
export const CREATED_BY_ANNOTATION = 'gpufleet.io/created-by';
/** The uid of the gpufleet record an object became (the CRD's status schema has no field for it). */
export const RECORD_UID_ANNOTATION = 'gpufleet.io/record-uid';
const SSA = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const INFORMER_RESTART_MS = 2000;
const RETRIED_CODES: ReadonlySet<number> = new Set([GrpcStatus.UNKNOWN, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.ABORTED, GrpcStatus.INTERNAL, GrpcStatus.UNAVAILABLE]);

type Resource = CustomResource<string, Record<string, unknown>, { conditions?: ResourceCondition[]; observedGeneration?: number } & Record<string, unknown>> & KubernetesObject;

/** What a record of the KV store is, to the sync. */
export interface SyncedRecord {
  uid: string;
  generation: number;
  deletionRequestedAt?: Date | undefined;
}

/** One kind: its records, the gRPC handlers that change them, and its conversions. */
export interface SyncedKind<R extends SyncedRecord> {
  readonly kind: 'ModelDeployment' | 'GPUInstance';
  readonly plural: string;
  records(): KvMirror<R>;
  /** Creates the record from the object; a string is the conversion's refusal. gRPC errors are thrown. */
  create(resource: Resource): Promise<R | string>;
  /** Applies a spec edit of the object to the record. */
  update(resource: Resource, current: R): Promise<R | string>;
  remove(resource: Resource): Promise<unknown>;
  /** The record as an object (spec and status). */
  resourceOf(record: R, observedGeneration?: number): { apiVersion: string; kind: string; spec: unknown; status?: Record<string, unknown> & { conditions?: ResourceCondition[] } };
}

/** Calls a gRPC handler in-process, as the server would with an admin caller: the same validation. */
export function invoke<Req, Res>(handler: handleUnaryCall<Req, Res>, request: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    const call = { request, metadata: new Metadata() } as unknown as ServerUnaryCall<Req, Res>;
    const callback: sendUnaryData<Res> = (err, res) => (err ? reject(err) : resolve(res as Res));
    handler(call, callback);
  });
}

function refusal(err: unknown): string {
  const e = err as Partial<ServiceError>;
  return e.details || e.message || String(err);
}

/**
 * Objects of one kind (ModelDeployment, GPUInstance) and gpufleet records kept as one: the KV bucket is the truth.
 * Every replica runs the informer (reads); only the leader writes. An object a user applied is
 * created, updated and (through the `gpufleet.io/deployment` finalizer) deleted in gpufleet by
 * DeploymentService's own handlers; a deployment made through gRPC gets an object annotated
 * `gpufleet.io/created-by: gpufleet`, whose spec gpufleet writes. Both get the deployment's
 * status on `/status`. Writes go through a KeyedReconciler (coalesced, bounded, retried).
 */
export class RecordSync<R extends SyncedRecord> implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly api: CustomObjectsApi;
  private readonly informer: Informer<Resource> & ObjectCache<Resource>;
  private readonly reconciler: KeyedReconciler;
  private informerSynced = false;
  private leading = false;
  private stopped = false;
  private unfollow?: () => void;
  private stopListening?: () => void;

  constructor(
    kc: KubeConfig,
    private readonly config: SchedulerConfig,
    private readonly store: { readonly ready: boolean },
    private readonly leadership: Leadership,
    logger: Logger,
    private readonly k: SyncedKind<R>,
  ) {
    this.logger = logger.child({ context: `kube-${k.plural}` });
    const PLURAL = k.plural;
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.informer = makeInformer<Resource>(kc, `/apis/${GPUFLEET_GROUP}/${GPUFLEET_VERSION}/${PLURAL}`, () =>
      this.api.listCustomObjectForAllNamespaces({ group: GPUFLEET_GROUP, version: GPUFLEET_VERSION, plural: PLURAL }),
    );
    this.reconciler = new KeyedReconciler(
      (key) => this.sync(key),
      () => [...this.informer.list().map((o) => workloadKey(o.metadata.namespace ?? '', o.metadata.name ?? '')), ...this.k.records().entries.keys()],
      { intervalMs: 200, maxDirty: 4096, backoffInitialMs: 500, backoffMaxMs: 30_000, concurrency: 4 },
      (key, err, attempts) => this.logger.warn(`${k.kind} ${key}: sync failed (attempt ${attempts}, retrying): ${refusal(err)}`),
    );
  }

  onApplicationBootstrap(): void {
    const mark = (o: Resource) => {
      if (this.leading) this.reconciler.mark(workloadKey(o.metadata.namespace ?? '', o.metadata.name ?? ''));
    };
    this.informer.on('add', mark);
    this.informer.on('update', mark);
    this.informer.on('delete', mark);
    this.informer.on('error', (err: unknown) => {
      if (this.stopped) return;
      this.logger.warn(`${this.k.kind} informer: ${refusal(err)}; restarting`);
      setTimeout(() => void this.startInformer(), INFORMER_RESTART_MS).unref();
    });
    this.stopListening = this.k.records().listen((key) => {
      if (this.leading) this.reconciler.mark(key);
    });
    this.unfollow = this.leadership.onChange(() => this.checkLeadership());
    void this.startInformer();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unfollow?.();
    this.stopListening?.();
    this.reconciler.stop();
    await this.informer.stop();
  }

  private async startInformer(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.informer.start();
      this.informerSynced = true;
      this.checkLeadership();
    } catch (err) {
      this.logger.warn(`${this.k.kind} informer could not list: ${refusal(err)}; retrying`);
      setTimeout(() => void this.startInformer(), INFORMER_RESTART_MS).unref();
    }
  }

  /** On a change of the lease and once the informer has listed (the store is ready before bootstrap). */
  private checkLeadership(): void {
    const leading = this.leadership.isLeader && this.informerSynced && this.store.ready;
    if (leading === this.leading) return;
    this.leading = leading;
    if (leading) this.reconciler.markAll();
  }

  private ids(namespace: string, name: string) {
    return { group: GPUFLEET_GROUP, version: GPUFLEET_VERSION, plural: this.k.plural, namespace, name };
  }

  /**
   * The object a record came from, as the owner of the record's Pods and Services: one a user
   * applied and gpufleet made the record of (its `gpufleet.io/record-uid` is the record's uid).
   * Undefined for a record made through gRPC, or before the informer has seen the object.
   */
  ownerOf(namespace: string, name: string, recordUid: string): OwnerObjectRef | undefined {
    const resource = this.informerSynced ? this.informer.get(name, namespace) : undefined;
    const uid = resource?.metadata.uid;
    if (!uid || recordUid === '' || resource.metadata.annotations?.[RECORD_UID_ANNOTATION] !== recordUid) return undefined;
    return { kind: this.k.kind, name, uid };
  }

  private async sync(key: string): Promise<void> {
    if (!this.leadership.isLeader) return;
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const resource = this.informer.get(name, namespace);
    const deployment = this.k.records().entries.get(key)?.value;
    const ids = this.ids(namespace, name);

    if (!resource) {
      // No object: a deployment made through gRPC gets one (an object a user applied carries
      // the finalizer, so it cannot have vanished while its deployment lives).
      if (deployment && !deployment.deletionRequestedAt) await this.applyFromDeployment(namespace, name, deployment);
      return;
    }
    const finalizers = resource.metadata.finalizers ?? [];
    if (resource.metadata.deletionTimestamp) {
      if (deployment) {
        if (!deployment.deletionRequestedAt) await this.k.remove(resource);
        return; // the finalizer goes once the controller has removed the record
      }
      if (finalizers.includes(DEPLOYMENT_FINALIZER)) {
        await this.api.patchNamespacedCustomObject({ ...ids, body: { metadata: { finalizers: finalizers.filter((f) => f !== DEPLOYMENT_FINALIZER), resourceVersion: resource.metadata.resourceVersion } } }, MERGE);
      }
      return;
    }
    const createdByGpufleet = resource.metadata.annotations?.[CREATED_BY_ANNOTATION] === 'gpufleet';
    if (!deployment) {
      // The record is gone (deleted through gRPC) after it existed: the object goes too.
      if (createdByGpufleet || resource.metadata.annotations?.[RECORD_UID_ANNOTATION]) {
        await this.api.deleteNamespacedCustomObject(ids).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
        return;
      }
    }
    if (createdByGpufleet) {
      if (deployment) await this.applyFromDeployment(namespace, name, deployment);
      return;
    }
    if (!finalizers.includes(DEPLOYMENT_FINALIZER)) {
      await this.api.patchNamespacedCustomObject({ ...ids, body: { metadata: { finalizers: [...finalizers, DEPLOYMENT_FINALIZER], resourceVersion: resource.metadata.resourceVersion } } }, MERGE);
    }
    const generation = resource.metadata.generation ?? 0;
    let current = deployment;
    // This generation was refused already: the record keeps its spec, and the status (written
    // again on every change of the record) keeps saying so until the object changes.
    const refused = resource.status?.observedGeneration === generation ? refusalOf(resource, generation) : undefined;
    if (!current || resource.status?.observedGeneration !== generation) {
      try {
        const answer = current ? await this.k.update(resource, current) : await this.k.create(resource);
        if (typeof answer === 'string') return this.writeRefusal(resource, answer);
        current = answer;
      } catch (err) {
        const e = err as Partial<ServiceError>;
        // Refusals go to the status; the rest (UNAVAILABLE before the store is ready, a KV
        // timeout, INTERNAL) is retried with backoff.
        if (e.code === undefined || RETRIED_CODES.has(e.code)) throw err;
        return this.writeRefusal(resource, refusal(err));
      }
    }
    if (!current) return;
    if (resource.metadata.annotations?.[RECORD_UID_ANNOTATION] !== current.uid) {
      await this.api.patchNamespacedCustomObject({ ...ids, body: { metadata: { annotations: { [RECORD_UID_ANNOTATION]: current.uid } } } }, MERGE);
    }
    await this.writeStatus(namespace, name, current, generation, resource, refused);
  }

  private async applyFromDeployment(namespace: string, name: string, deployment: R): Promise<void> {
    const { status: _status, ...main } = this.k.resourceOf(deployment);
    const body = { ...main, metadata: { name, namespace, annotations: { [CREATED_BY_ANNOTATION]: 'gpufleet' }, finalizers: [DEPLOYMENT_FINALIZER] } };
    const written = (await this.api.patchNamespacedCustomObject({ ...this.ids(namespace, name), body, fieldManager: this.config.KUBE_FIELD_MANAGER, force: true }, SSA)) as Resource;
    await this.writeStatus(namespace, name, deployment, written.metadata.generation ?? 0, written);
  }

  private accepted(resource: Resource | undefined, ok: boolean, message: string, generation: number): ResourceCondition & { observedGeneration: number } {
    const before = (resource?.status?.conditions ?? []).find((c) => c.type === 'Accepted');
    const status = ok ? 'True' : 'False';
    const lastTransitionTime = before?.status === status && before.lastTransitionTime ? before.lastTransitionTime : new Date().toISOString();
    return { type: 'Accepted', status, reason: ok ? 'Accepted' : 'Invalid', message, lastTransitionTime, observedGeneration: generation };
  }

  private async writeStatus(namespace: string, name: string, deployment: R, generation: number, resource: Resource | undefined, refused?: ResourceCondition): Promise<void> {
    const { status } = this.k.resourceOf(deployment, generation);
    const conditions = [...(status?.conditions ?? []).filter((c) => c.type !== 'Accepted'), refused ?? this.accepted(resource, true, '', generation)];
    const phase = deployment.deletionRequestedAt ? 'Deleting' : status?.phase;
    await this.applyStatus(namespace, name, { ...status, phase, conditions });
  }

  private async writeRefusal(resource: Resource, message: string): Promise<void> {
    const generation = resource.metadata.generation ?? 0;
    const conditions = [...(resource.status?.conditions ?? []).filter((c) => c.type !== 'Accepted'), this.accepted(resource, false, message, generation)];
    await this.applyStatus(resource.metadata.namespace ?? '', resource.metadata.name ?? '', { ...(resource.status ?? {}), conditions, observedGeneration: generation });
  }

  private async applyStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
    // A merge patch, not an apply: an apply configuration of /status alone lacks the required
    // spec, which the simulator (unlike kube-apiserver) validates before merging. The status is
    // written whole (conditions included), so a merge patch states all of it.
    await this.api.patchNamespacedCustomObjectStatus({ ...this.ids(namespace, name), body: { status }, fieldManager: this.config.KUBE_FIELD_MANAGER }, MERGE);
  }
}

/** The object's Accepted=False condition for this generation, if it has one. */
function refusalOf(resource: Resource, generation: number): ResourceCondition | undefined {
  const accepted = (resource.status?.conditions ?? []).find((c) => c.type === 'Accepted');
  return accepted?.status === 'False' && (accepted.observedGeneration ?? generation) === generation ? accepted : undefined;
}
