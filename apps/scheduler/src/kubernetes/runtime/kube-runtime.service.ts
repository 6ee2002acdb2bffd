import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { NatsConnection } from 'nats';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  type Informer,
  type KubernetesObject,
  type ObjectCache,
  type V1Node,
  type V1Pod,
  type V1Service,
} from '@kubernetes/client-node';
import { Buckets, keyOfStoreKey, OwnerLabels, podStoreKey, PodRuntimeStatus, type Workload } from '@gpufleet/contracts';
import {
  desiredKubePods,
  desiredObjects,
  failedManifestStatusOf,
  groupRestartsOf,
  inWorkloadNamespace,
  KubeLabels,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  nodeStateOf,
  PER_NAMESPACE,
  podStatusFingerprint,
  podStatusOf,
  reconcilePlan,
  workloadNamespaceName,
  type ImageKind,
  type KubeNodeState,
  type NodeWeightsLookup,
  type OwnerObjectRef,
  type PlannedDelete,
} from '@gpufleet/kube-runtime-core';
import { KvStore, NATS_CONNECTION, ReconcileLoop, type ReconcilePass } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { CapacityStateService } from '../../capacity/capacity-state.service';
import { callKube, describeKubeError, KubeNamespaces, kubeErrorCode, sleep } from '../kube-api';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../../config';
import { followTerm, Leadership } from '../../leadership/leadership';
import { SchedulingStore } from '../../scheduling/scheduling-store.service';
import { KUBE_CONFIG } from '../kube-config';
import { KubeletDevicesService } from './kubelet-devices.service';
import { GpuInstanceSync } from '../resources/gpu-instance-sync';
import { ModelDeploymentSync } from '../resources/model-deployment-sync';

const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** Re-runs a pass this often without a change (a missed event, a namespace deleted by hand). */
const RESYNC_MS = 10_000;
/** Tries of one API call that got a 409, 429 or 5xx, with doubling backoff from BACKOFF_MS. */
/** An informer whose watch failed (not a 410, which it handles itself) restarts after this, doubling up to INFORMER_BACKOFF_MAX_MS. */
const INFORMER_BACKOFF_MS = 500;
const INFORMER_BACKOFF_MAX_MS = 30_000;
/** At most this many API writes at once in a pass. */
const PARALLEL_WRITES = 8;

type Watched<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

/** Runs `fn` over `items`, at most `limit` at a time. */
async function bounded<I>(items: readonly I[], limit: number, fn: (item: I) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * The kubernetes runtime on the leader: a ReconcileLoop that turns the placed pods (workloads and
 * ledger of the store) into Pods and Services by server-side apply and deletes what is no longer
 * placed, informers on gpufleet's Pods and Services (and on Nodes) in the workload namespace, and
 * the pods bucket written from the observed Pods, so the controllers read Ready as from a node
 * runtime. Standbys do nothing here.
 */
@Injectable()
export class KubeRuntimeService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly loop: ReconcileLoop;
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private readonly namespaces: KubeNamespaces;
  private podStore?: KvStore<PodRuntimeStatus>;
  private unfollow?: () => void;
  private leadingTerm = 0;
  private pods?: Watched<V1Pod>;
  private services?: Watched<V1Service>;
  private nodes?: Watched<V1Node>;
  private unsubscribe: Array<() => void> = [];
  /** Fingerprints of the records this leader wrote, so a record is written once per change. */
  private readonly written = new Map<string, string>();
  /** Node states from the Node informer, by name. */
  private readonly nodeStates = new Map<string, KubeNodeState>();
  private starting?: Promise<void>;
  /** The custom resources' syncs (KUBE_CUSTOM_RESOURCES=true): the owners of Pods and Services. */
  private owners: { deployments?: ModelDeploymentSync; instances?: GpuInstanceSync } = {};

  constructor(
    @Inject(KUBE_CONFIG) private readonly kc: KubeConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly leadership: Leadership,
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly kubeletDevices: KubeletDevicesService,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
    private readonly moduleRef: ModuleRef,
  ) {
    this.logger = logger.child({ context: 'kube-runtime' });
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
    this.namespaces = new KubeNamespaces(() => this.core, this.logger);
    this.loop = new ReconcileLoop({ name: 'kube-runtime', logger: this.logger, registry, resyncMs: RESYNC_MS, retryMs: 1_000, pass: (run) => this.pass(run) });
  }

  /** The Kubernetes Node's state, once the Node informer has seen it (the leader only). */
  nodeState(name: string): KubeNodeState | undefined {
    return this.nodeStates.get(name);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.owners = { deployments: this.provided(ModelDeploymentSync), instances: this.provided(GpuInstanceSync) };
    this.podStore = await KvStore.open(this.nc.jetstream(), Buckets.pods(this.config.GPUFLEET_CLUSTER), PodRuntimeStatus);
    const server = this.kc.getCurrentCluster()?.server ?? '';
    this.logger.info(`kubernetes runtime: Pods and Services in namespace ${this.namespace} of ${server}, field manager ${this.config.KUBE_FIELD_MANAGER}`);
    // A Kubernetes Node that is cordoned, NotReady or tainted is not placed on; a node Kubernetes does not (yet) know is left to the heartbeats.
    this.capacity.setPlacementGate((node) => {
      const state = this.nodeStates.get(node);
      return state && !state.schedulable ? `Kubernetes Node ${node} is not schedulable: ${state.reasons.join('; ')}` : undefined;
    });
    this.unfollow = followTerm(this.leadership, {
      lead: (term) => {
        this.leadingTerm = term;
        this.starting = this.lead(term).catch((err) => this.logger.error({ err }, `kubernetes runtime could not start: ${describeKubeError(err)}`));
      },
      stepDown: () => void this.stepDown(),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.unfollow?.();
    this.capacity.setPlacementGate(undefined);
    await this.stepDown();
  }

  /** A provider of another module (the custom resources'), when the app has it. */
  private provided<T>(type: Type<T>): T | undefined {
    try {
      return this.moduleRef.get(type, { strict: false });
    } catch {
      return undefined;
    }
  }

  /** The ModelDeployment or GPUInstance object a workload's deployment or instance came from. */
  private ownerOf(workload: Workload): OwnerObjectRef | undefined {
    const labels = workload.spec?.labels ?? {};
    const namespace = workload.spec?.namespace ?? '';
    const recordUid = labels[OwnerLabels.ownerUid] ?? '';
    if (labels[OwnerLabels.deployment]) return this.owners.deployments?.ownerOf(namespace, labels[OwnerLabels.deployment], recordUid);
    if (labels[OwnerLabels.instance]) return this.owners.instances?.ownerOf(namespace, labels[OwnerLabels.instance], recordUid);
    return undefined;
  }

  /** Resolves when no pass is running or asked for (tests). */
  idle(): Promise<void> {
    return this.loop.idle();
  }

  private get namespace(): string {
    return this.config.KUBE_WORKLOAD_NAMESPACE;
  }

  private async lead(term: number): Promise<void> {
    const stillLeading = (): boolean => this.leadingTerm === term && this.leadership.term === term;
    this.logger.info({ term }, 'kubernetes runtime: leading, starting the Pod, Service and Node informers');
    // The informers of one namespace need it to exist; with "*" each namespace is made when first used.
    for (let delay = INFORMER_BACKOFF_MS; stillLeading(); delay = Math.min(delay * 2, INFORMER_BACKOFF_MAX_MS)) {
      try {
        if (this.namespace !== PER_NAMESPACE) await this.namespaces.ensure(this.namespace);
        break;
      } catch (err) {
        this.logger.warn(`could not make namespace ${this.namespace}, retrying in ${delay} ms: ${describeKubeError(err)}`);
        await sleep(delay);
      }
    }
    const perNs = this.namespace === PER_NAMESPACE;
    const ns = this.namespace;
    const pods = makeInformer<V1Pod>(
      this.kc,
      perNs ? '/api/v1/pods' : `/api/v1/namespaces/${ns}/pods`,
      () => (perNs ? this.core.listPodForAllNamespaces({ labelSelector: SELECTOR }) : this.core.listNamespacedPod({ namespace: ns, labelSelector: SELECTOR })),
      SELECTOR,
    );
    const services = makeInformer<V1Service>(
      this.kc,
      perNs ? '/api/v1/services' : `/api/v1/namespaces/${ns}/services`,
      () => (perNs ? this.core.listServiceForAllNamespaces({ labelSelector: SELECTOR }) : this.core.listNamespacedService({ namespace: ns, labelSelector: SELECTOR })),
      SELECTOR,
    );
    const nodes = makeInformer<V1Node>(this.kc, '/api/v1/nodes', () => this.core.listNode());
    const kick = (): void => this.loop.kick();
    const nodeChanged = (node: V1Node): void => this.nodeChanged(node);
    const nodeGone = (node: V1Node): void => {
      const name = node.metadata?.name ?? '';
      if (this.nodeStates.delete(name)) this.capacity.refreshNode(name);
      kick();
    };
    for (const informer of [pods, services] as Array<Watched<KubernetesObject>>) {
      informer.on('add', kick);
      informer.on('update', kick);
      informer.on('delete', kick);
    }
    nodes.on('add', nodeChanged);
    nodes.on('update', nodeChanged);
    nodes.on('delete', nodeGone);
    this.pods = pods;
    this.services = services;
    this.nodes = nodes;
    await Promise.all([
      this.startInformer('pods', pods, stillLeading),
      this.startInformer('services', services, stillLeading),
      this.startInformer('nodes', nodes, stillLeading),
    ]);
    if (!stillLeading()) return;
    const { store, capacity } = this;
    this.unsubscribe = [store.workloads.listen(kick), store.ledger.listen(kick), store.deployments.listen(kick), store.instances.listen(kick), store.pods.listen(kick), store.copies.listen(kick), capacity.onNodeChanged(kick), this.kubeletDevices.onChange(kick)];
    this.logger.info(`kubernetes runtime: informers synced (${pods.list().length} Pods, ${services.list().length} Services, ${nodes.list().length} Nodes); reconciling`);
    this.loop.start();
  }

  /** Starts an informer, and again after every failure that ends its watch, with backoff; the first list must succeed before this resolves. */
  private async startInformer(name: string, informer: Watched<KubernetesObject>, stillLeading: () => boolean): Promise<void> {
    let delay = INFORMER_BACKOFF_MS;
    informer.on('connect', () => (delay = INFORMER_BACKOFF_MS));
    informer.on('error', (err) => {
      if (!stillLeading()) return;
      this.logger.warn(`${name} informer: watch failed, restarting in ${delay} ms: ${describeKubeError(err)}`);
      const wait = delay;
      delay = Math.min(delay * 2, INFORMER_BACKOFF_MAX_MS);
      setTimeout(() => {
        if (stillLeading()) informer.start().catch(() => undefined);
      }, wait).unref();
    });
    for (;;) {
      if (!stillLeading()) return;
      try {
        await informer.start();
        return;
      } catch (err) {
        this.logger.warn(`${name} informer: list failed, retrying in ${delay} ms: ${describeKubeError(err)}`);
        await sleep(delay);
        delay = Math.min(delay * 2, INFORMER_BACKOFF_MAX_MS);
      }
    }
  }

  private async stepDown(): Promise<void> {
    if (this.leadingTerm === 0) return;
    this.leadingTerm = 0;
    for (const off of this.unsubscribe.splice(0)) off();
    const stopping = this.loop.stop();
    await this.starting;
    for (const informer of [this.pods, this.services, this.nodes]) await informer?.stop().catch(() => undefined);
    this.pods = this.services = this.nodes = undefined;
    const held = [...this.nodeStates.keys()];
    this.nodeStates.clear();
    for (const name of held) this.capacity.refreshNode(name);
    this.written.clear();
    this.namespaces.clear();
    await stopping;
    this.logger.info('kubernetes runtime: no longer leading, informers stopped');
  }

  private nodeChanged(node: V1Node): void {
    const state = nodeStateOf(node);
    const before = this.nodeStates.get(state.name);
    this.nodeStates.set(state.name, state);
    if (before?.schedulable !== state.schedulable || before.reasons.join() !== state.reasons.join()) {
      this.logger.info({ node: state.name }, `Kubernetes Node ${state.name} is ${state.schedulable ? 'schedulable' : `not schedulable: ${state.reasons.join('; ')}`}`);
      this.capacity.refreshNode(state.name);
    }
    this.loop.kick();
  }

  /** One pass: desired against observed, apply and delete, then the pods bucket from the observed Pods. */
  private async pass(run: ReconcilePass): Promise<void> {
    const pods = this.pods;
    const services = this.services;
    if (!pods || !services) return;
    const { store, capacity } = this;
    const workloads = { get: (key: string): Workload | undefined => store.workloads.get(keyOfStoreKey(key))?.value };
    const desiredPods = desiredKubePods([...store.ledger.entries.values()].map((e) => e.value), workloads, { ownerOf: (w) => this.ownerOf(w) });
    const deployments = [...store.deployments.entries.values()]
      .map((e) => e.value)
      .filter((d) => d.spec && !d.deletionRequestedAt)
      .map((d) => {
        const owner = this.owners.deployments?.ownerOf(d.spec!.namespace, d.spec!.name, d.uid);
        return { namespace: d.spec!.namespace, name: d.spec!.name, uid: d.uid, ...(owner ? { owner } : {}) };
      });
    const images = Object.fromEntries(this.config.KUBE_ENGINE_IMAGES.map((pair) => pair.split('=', 2) as [ImageKind, string]));
    const sshServiceType = this.config.KUBE_SSH_SERVICE_TYPE;
    // Each node's copies of ModelArtifacts, as its model cache writes them ("<node>.<namespace>.<name>").
    const weights: NodeWeightsLookup = { copyOf: (node, namespace, artifact) => store.copies.get(`${node}.${namespace}.${artifact}`)?.value };
    const desired = desiredObjects({ pods: desiredPods, deployments, sshServiceType }, { inventoryOf: (node) => capacity.inventoryOf(node), images, weights });
    const ns = this.namespace;
    const want = {
      pods: desired.pods.map((p) => inWorkloadNamespace(p, ns)),
      services: desired.services.map((s) => inWorkloadNamespace(s, ns)),
      held: desired.held.map((h) => workloadNamespaceName(h, ns)),
    };
    const observed = { pods: [...pods.list()], services: [...services.list()] };
    const plan = reconcilePlan(want, observed);
    for (const c of plan.conflicts) this.logger.warn(`CONFLICT: ${c.message}`);
    // A multi-node replica whose member left forms again: the members that were in that group are made anew.
    const planned = new Set(plan.delete.map((d) => `${d.ref.namespace}/${d.ref.name}`));
    const deletes = [...plan.delete, ...groupRestartsOf(observed.pods).filter((d) => !planned.has(`${d.ref.namespace}/${d.ref.name}`))];
    for (const namespace of new Set([...plan.apply.pods, ...plan.apply.services].map((o) => o.metadata!.namespace!))) await this.namespaces.ensure(namespace);
    // No new Pod on a Node that is not schedulable (cordoned, drained): a Pod evicted from it stays
    // gone, and the deployment and instance controllers move that work elsewhere.
    const present = new Set(observed.pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`));
    const startable = plan.apply.pods.filter((p) => present.has(`${p.metadata?.namespace}/${p.metadata?.name}`) || this.nodeStates.get(p.spec?.nodeName ?? '')?.schedulable !== false);
    const applies: KubernetesObject[] = [...plan.apply.services, ...startable];
    await run.each(
      [applies],
      () => 'apply',
      (batch) => bounded(batch, PARALLEL_WRITES, (obj) => this.apply(obj, run)),
    );
    await run.each(
      [deletes],
      () => 'delete',
      (batch) => bounded(batch, PARALLEL_WRITES, (d) => this.remove(d, run)),
    );
    await run.each([0], () => 'pod records', () => this.writeRecords([...pods.list()], [...services.list()], desired.failed));
    // The kubelet's assignment is the truth of a running Pod's devices: the ledger follows it.
    await run.each([0], () => 'kubelet devices', () => this.kubeletDevices.check([...pods.list()]));
  }

  private async apply(obj: KubernetesObject, run: ReconcilePass): Promise<void> {
    if (run.stopped) return;
    const what = `${obj.kind} ${obj.metadata?.namespace}/${obj.metadata?.name}`;
    await callKube(what, () => this.objects.patch(obj, undefined, undefined, this.config.KUBE_FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
    this.logger.info(`applied ${what}`);
  }

  private async remove(d: PlannedDelete, run: ReconcilePass): Promise<void> {
    if (run.stopped) return;
    const what = `${d.ref.kind} ${d.ref.namespace}/${d.ref.name}`;
    const spec = { apiVersion: 'v1', kind: d.ref.kind, metadata: { name: d.ref.name, namespace: d.ref.namespace } };
    try {
      await callKube(what, () => this.objects.delete(spec, undefined, undefined, undefined, undefined, 'Background', { preconditions: { uid: d.ref.uid } }), false);
      if (d.message) this.logger.warn(`deleted ${what} (${d.reason}): ${d.message}`);
      else this.logger.info(`deleted ${what} (${d.reason})`);
    } catch (err) {
      // Gone already, or replaced by a newer object of the same name (the uid precondition): the next pass sees which.
      if (kubeErrorCode(err) === 404 || kubeErrorCode(err) === 409) return;
      throw err;
    }
  }


  /**
   * The pods bucket from the observed Pods (podStatusOf) and the pods that cannot become Pods
   * (Failed, as the process runtime reports them); a record whose Pod is gone is deleted. Only
   * what changed is written.
   */
  private async writeRecords(observed: readonly V1Pod[], services: readonly V1Service[], failed: ReturnType<typeof desiredObjects>['failed']): Promise<void> {
    const podStore = this.podStore;
    if (!podStore) return;
    const now = new Date();
    const records = new Map<string, PodRuntimeStatus>();
    // An instance's SSH Service, by gpufleet namespace and instance: where its users ssh to.
    const sshServices = new Map<string, V1Service>();
    for (const s of services) {
      const l = s.metadata?.labels ?? {};
      if (l[KubeLabels.component] === 'ssh' && l[KubeLabels.instance]) sshServices.set(`${l[KubeLabels.namespace]}/${l[KubeLabels.instance]}`, s);
    }
    for (const pod of observed) {
      const l = pod.metadata?.labels ?? {};
      const service = l[KubeLabels.instance] ? sshServices.get(`${l[KubeLabels.namespace]}/${l[KubeLabels.instance]}`) : undefined;
      const status = podStatusOf(pod, { now, ...(service ? { service } : {}) });
      if (status) records.set(podStoreKey(status), status);
    }
    for (const f of failed) {
      const status = failedManifestStatusOf(f, now);
      const key = podStoreKey(status);
      if (!records.has(key)) records.set(key, status);
    }
    const problems: string[] = [];
    const writes: Array<() => Promise<void>> = [];
    for (const [key, status] of records) {
      const fp = podStatusFingerprint(status);
      const current = this.store.pods.get(key)?.value;
      if (this.written.get(key) === fp && current && podStatusFingerprint(current) === fp) continue;
      if (current && podStatusFingerprint(current) === fp) {
        this.written.set(key, fp);
        continue;
      }
      writes.push(async () => {
        await podStore.put(key, status);
        this.written.set(key, fp);
      });
    }
    for (const key of this.store.pods.entries.keys()) {
      if (records.has(key)) continue;
      writes.push(async () => {
        await podStore.delete(key);
        this.written.delete(key);
      });
    }
    await bounded(writes, PARALLEL_WRITES, async (w) => {
      try {
        await w();
      } catch (err) {
        problems.push((err as Error).message);
      }
    });
    if (problems.length > 0) throw new Error(`${problems.length} pod records could not be written: ${problems[0]}`);
  }
}
