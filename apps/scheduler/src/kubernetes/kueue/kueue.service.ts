import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type Informer,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import {
  acceleratorResourceOf,
  ADMISSION_CHECK,
  admissionCheckStatus,
  awaitsPlacement,
  clusterQueueOfWorkload,
  desiredKueueObjects,
  KUEUE_API_VERSION,
  KUEUE_GROUP,
  KUEUE_PLURAL,
  KUEUE_VERSION,
  kueueKey,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  placedMessage,
  podSetsOfWorkload,
  staleKueueObjects,
  withPlacementCheck,
  type KueueKind,
  type KueueObject,
  type KueuePool,
  type KueueWorkload,
} from '@gpufleet/kube-runtime-core';
import { ReconcileLoop } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { AcceleratorVendor, type NodeInventory } from '@gpufleet/contracts';
import type { Packing } from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../../capacity/capacity-state.service';
import { callKube, describeKubeError, KubeNamespaces, kubeErrorCode, sleep } from '../kube-api';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../../config';
import { followTerm, Leadership } from '../../leadership/leadership';
import { AdmissionService } from '../../scheduling/admission.service';
import { SchedulingStore } from '../../scheduling/scheduling-store.service';

/** Injection token of the KubeConfig the Kueue mirror uses (its own, so it does not depend on the kubernetes runtime). */
export const KUEUE_KUBE_CONFIG = Symbol('KUEUE_KUBE_CONFIG');

const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** The mirror runs again this often without a change (an object deleted by hand). */
const MIRROR_RESYNC_MS = 10_000;
/** Pending checks are looked at again this often (capacity the scheduler did not announce). */
const CHECKS_RESYNC_MS = 2_000;
const INFORMER_BACKOFF_MS = 500;
const INFORMER_BACKOFF_MAX_MS = 30_000;
/** Kinds in the order they are applied (a ClusterQueue names its flavor and check, a LocalQueue its ClusterQueue); deletes go the other way. */
const KINDS: readonly KueueKind[] = ['AdmissionCheck', 'ResourceFlavor', 'ClusterQueue', 'LocalQueue'];

type Watched<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

/**
 * On the leader: (1) the Kueue mirror, a ReconcileLoop that server-side applies a ResourceFlavor
 * per pool, a ClusterQueue per gpufleet ClusterQueue, a LocalQueue per gpufleet LocalQueue and
 * the gpufleet-placement AdmissionCheck, and deletes the managed ones gpufleet no longer has;
 * (2) the AdmissionCheck's controller, a Workload informer and a loop that answers each Pending
 * gpufleet-placement check from the live placement engine (AdmissionService.tryPlace, which
 * changes nothing). Standbys do nothing here.
 */
@Injectable()
export class KueueService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly mirror: ReconcileLoop;
  private readonly checks: ReconcileLoop;
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly namespaces: KubeNamespaces;
  private unfollow?: () => void;
  private leadingTerm = 0;
  private workloads?: Watched<KubernetesObject>;
  private unsubscribe: Array<() => void> = [];
  /** What this leader last applied, by kueueKey, so an unchanged object is not sent again. */
  private readonly applied = new Map<string, string>();
  private starting?: Promise<void>;

  constructor(
    @Inject(KUEUE_KUBE_CONFIG) private readonly kc: KubeConfig,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly leadership: Leadership,
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly admission: AdmissionService,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'kueue' });
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.namespaces = new KubeNamespaces(() => this.core, this.logger);
    this.mirror = new ReconcileLoop({ name: 'kueue-mirror', logger: this.logger, registry, resyncMs: MIRROR_RESYNC_MS, retryMs: 1_000, pass: () => this.mirrorPass() });
    this.checks = new ReconcileLoop({ name: 'kueue-checks', logger: this.logger, registry, resyncMs: CHECKS_RESYNC_MS, retryMs: 1_000, pass: () => this.checksPass() });
  }

  onApplicationBootstrap(): void {
    this.logger.info(`Kueue mirror: ${KUEUE_API_VERSION} objects on ${this.kc.getCurrentCluster()?.server ?? ''}, field manager ${this.config.KUBE_FIELD_MANAGER}`);
    this.unfollow = followTerm(this.leadership, {
      lead: (term) => {
        this.leadingTerm = term;
        this.starting = this.lead(term).catch((err) => this.logger.error({ err }, `Kueue mirror could not start: ${describeKubeError(err)}`));
      },
      stepDown: () => void this.stepDown(),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.unfollow?.();
    await this.stepDown();
  }

  /** Resolves when neither loop has a pass running or asked for (tests). */
  async idle(): Promise<void> {
    await Promise.all([this.mirror.idle(), this.checks.idle()]);
  }

  private async lead(term: number): Promise<void> {
    const stillLeading = (): boolean => this.leadingTerm === term && this.leadership.term === term;
    const kickMirror = (): void => this.mirror.kick();
    const kickChecks = (): void => this.checks.kick();
    const { store, capacity } = this;
    this.unsubscribe = [
      store.clusterQueues.listen(kickMirror),
      store.localQueues.listen(kickMirror),
      capacity.onNodeChanged(kickMirror),
      capacity.onNodeRemoved(kickMirror),
      store.ledger.listen(kickChecks),
      capacity.onNodeChanged(kickChecks),
    ];
    this.mirror.start();
    const path = `/apis/${KUEUE_GROUP}/${KUEUE_VERSION}/workloads`;
    const workloads = makeInformer<KubernetesObject>(this.kc, path, () =>
      this.custom.listCustomObjectForAllNamespaces({ group: KUEUE_GROUP, version: KUEUE_VERSION, plural: KUEUE_PLURAL.Workload }) as never,
    ) as Watched<KubernetesObject>;
    workloads.on('add', kickChecks);
    workloads.on('update', kickChecks);
    this.workloads = workloads;
    await this.startInformer(workloads, stillLeading);
    if (!stillLeading()) return;
    this.logger.info({ term }, `Kueue: leading; mirroring pools and queues, answering the ${ADMISSION_CHECK} check`);
    this.checks.start();
  }

  private async startInformer(informer: Watched<KubernetesObject>, stillLeading: () => boolean): Promise<void> {
    let delay = INFORMER_BACKOFF_MS;
    informer.on('connect', () => (delay = INFORMER_BACKOFF_MS));
    informer.on('error', (err) => {
      if (!stillLeading()) return;
      this.logger.warn(`Workload informer: watch failed, restarting in ${delay} ms: ${describeKubeError(err)}`);
      const wait = delay;
      delay = Math.min(delay * 2, INFORMER_BACKOFF_MAX_MS);
      setTimeout(() => {
        if (stillLeading()) informer.start().catch(() => undefined);
      }, wait).unref();
    });
    while (stillLeading()) {
      try {
        await informer.start();
        return;
      } catch (err) {
        this.logger.warn(`Workload informer: list failed (is Kueue installed?), retrying in ${delay} ms: ${describeKubeError(err)}`);
        await sleep(delay);
        delay = Math.min(delay * 2, INFORMER_BACKOFF_MAX_MS);
      }
    }
  }

  private async stepDown(): Promise<void> {
    if (this.leadingTerm === 0) return;
    this.leadingTerm = 0;
    for (const off of this.unsubscribe.splice(0)) off();
    const stopping = Promise.all([this.mirror.stop(), this.checks.stop()]);
    await this.starting;
    await this.workloads?.stop().catch(() => undefined);
    this.workloads = undefined;
    this.applied.clear();
    this.namespaces.clear();
    await stopping;
  }

  // ---------------------------------------------------------------- the mirror

  private pools(): KueuePool[] {
    return this.capacity.model.listPools().map((p) => ({
      name: p.name,
      acceleratorVendor: p.identity?.acceleratorVendor ?? AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED,
      acceleratorProduct: p.identity?.acceleratorProduct ?? '',
      nodes: p.nodes.map((n) => this.capacity.inventoryOf(n)).filter((i): i is NodeInventory => i !== undefined),
    }));
  }

  private async mirrorPass(): Promise<void> {
    const desired = desiredKueueObjects({
      pools: this.pools(),
      clusterQueues: [...this.store.clusterQueues.entries.values()].map((e) => e.value),
      localQueues: [...this.store.localQueues.entries.values()].map((e) => e.value),
    });
    const byKind: Record<KueueKind, KueueObject[]> = {
      AdmissionCheck: desired.admissionChecks,
      ResourceFlavor: desired.resourceFlavors,
      ClusterQueue: desired.clusterQueues,
      LocalQueue: desired.localQueues,
    };
    const observed = new Map<KueueKind, KubernetesObject[]>();
    for (const kind of KINDS) {
      const list = await callKube(`list ${kind}`, () => this.objects.list(KUEUE_API_VERSION, kind, undefined, undefined, undefined, undefined, undefined, SELECTOR));
      observed.set(kind, list.items.map((o) => ({ ...o, kind })));
    }
    for (const ns of new Set(desired.localQueues.map((q) => q.metadata.namespace!))) await this.namespaces.ensure(ns);
    for (const kind of KINDS) {
      const present = new Set((observed.get(kind) ?? []).map(kueueKey));
      for (const obj of byKind[kind]) {
        const key = kueueKey(obj);
        const body = JSON.stringify(obj);
        if (this.applied.get(key) === body && present.has(key)) continue;
        await callKube(`apply ${key}`, () => this.objects.patch(obj, undefined, undefined, this.config.KUBE_FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
        this.applied.set(key, body);
        this.logger.info(`applied ${key}`);
      }
    }
    const check = (observed.get('AdmissionCheck') ?? []).find((o) => o.metadata?.name === ADMISSION_CHECK) as (KubernetesObject & { status?: { conditions?: Array<{ type: string; status: string }> } }) | undefined;
    if (!check?.status?.conditions?.some((c) => c.type === 'Active' && c.status === 'True')) await this.markCheckActive();
    for (const kind of [...KINDS].reverse()) {
      for (const stale of staleKueueObjects(byKind[kind], observed.get(kind) ?? [])) {
        const key = kueueKey(stale);
        try {
          await callKube(`delete ${key}`, () => this.objects.delete({ apiVersion: KUEUE_API_VERSION, kind, metadata: { name: stale.metadata!.name, namespace: stale.metadata!.namespace } }), false);
          this.logger.info(`deleted ${key}: gpufleet no longer has it`);
        } catch (err) {
          if (kubeErrorCode((err as Error).cause) !== 404) throw err;
        }
        this.applied.delete(key);
      }
    }
  }

  /** The AdmissionCheck's Active=True condition, server-side applied to its status. */
  private async markCheckActive(): Promise<void> {
    const body = { apiVersion: KUEUE_API_VERSION, kind: 'AdmissionCheck', metadata: { name: ADMISSION_CHECK }, status: admissionCheckStatus(new Date()) };
    await callKube(`status of AdmissionCheck ${ADMISSION_CHECK}`, () =>
      this.custom.patchClusterCustomObjectStatus(
        { group: KUEUE_GROUP, version: KUEUE_VERSION, plural: KUEUE_PLURAL.AdmissionCheck, name: ADMISSION_CHECK, body, fieldManager: this.config.KUBE_FIELD_MANAGER, force: true },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      ),
    );
  }

  // ---------------------------------------------------------------- the admission check

  private async checksPass(): Promise<void> {
    const informer = this.workloads;
    if (!informer) return;
    const waiting = (informer.list() as KueueWorkload[]).filter(awaitsPlacement);
    if (waiting.length === 0) return;
    const problems: string[] = [];
    for (const wl of waiting) {
      try {
        await this.answer(wl);
      } catch (err) {
        problems.push(describeKubeError(err));
      }
    }
    if (problems.length > 0) throw new Error(`${problems.length} admission check answers failed: ${problems.join('; ')}`);
  }

  private localQueueTarget(namespace: string, name: string): string | undefined {
    for (const { value } of this.store.localQueues.entries.values()) if (value.namespace === namespace && value.name === name) return value.clusterQueue;
    return undefined;
  }

  /** gpufleet's answer for one Workload: Ready with the nodes when the engine can place its pod sets, else Pending with why. */
  private async answer(wl: KueueWorkload): Promise<void> {
    const ns = wl.metadata?.namespace ?? 'default';
    const name = wl.metadata?.name ?? '';
    const decided = this.decide(wl);
    if (!decided) return; // not live yet: the next pass answers
    const next = withPlacementCheck(wl, decided.state, decided.message, new Date());
    if (!next) return;
    await callKube(`status of Workload ${ns}/${name}`, () =>
      this.custom.patchNamespacedCustomObjectStatus(
        {
          group: KUEUE_GROUP,
          version: KUEUE_VERSION,
          namespace: ns,
          plural: KUEUE_PLURAL.Workload,
          name,
          body: { metadata: { resourceVersion: wl.metadata?.resourceVersion }, status: { admissionChecks: next } },
          fieldManager: this.config.KUBE_FIELD_MANAGER,
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    false);
    this.logger.info(`Workload ${ns}/${name}: ${ADMISSION_CHECK} ${decided.state}: ${decided.message}`);
  }

  private decide(wl: KueueWorkload): { state: 'Ready' | 'Pending'; message: string } | undefined {
    const cqName = clusterQueueOfWorkload(wl, (ns, n) => this.localQueueTarget(ns, n));
    if (!cqName) return { state: 'Pending', message: `gpufleet: the Workload's LocalQueue "${wl.spec?.queueName ?? ''}" of namespace ${wl.metadata?.namespace ?? ''} is not one of gpufleet's` };
    const cq = this.store.clusterQueues.get(cqName)?.value;
    if (!cq) return { state: 'Pending', message: `gpufleet: ClusterQueue "${cqName}" is not one of gpufleet's` };
    const identity = this.capacity.model.getPool(cq.pool)?.identity;
    const accel = identity ? acceleratorResourceOf({ acceleratorVendor: identity.acceleratorVendor, acceleratorProduct: identity.acceleratorProduct }) : undefined;
    const sets = podSetsOfWorkload(wl, accel);
    if (!sets.ok) return { state: 'Pending', message: `gpufleet: ${sets.message}` };
    const packing: Packing = cq.packing === 'spread' ? 'spread' : 'binpack';
    const outcome = this.admission.tryPlace({ key: `${wl.metadata?.namespace ?? 'default'}/kueue.${wl.metadata?.name ?? ''}`, pool: cq.pool, podSets: sets.podSets, packing });
    if (!outcome) return undefined;
    if (outcome.ok) return { state: 'Ready', message: placedMessage(outcome.placements) };
    return { state: 'Pending', message: `gpufleet cannot place it in pool ${cq.pool}: ${outcome.reason}: ${outcome.message}` };
  }

  // ---------------------------------------------------------------- API calls

}
