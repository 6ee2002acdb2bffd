import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { CRD_NAMES, GPUFLEET_GROUP, GPUFLEET_VERSION, instanceTypeResourceOf, KeyedReconciler } from '@gpufleet/kube-runtime-core';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { CapacityStateService } from '../../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../../config';
import { Leadership } from '../../leadership/leadership';
import { isNotFound } from '../kube-api';
import { KUBE_CONFIG } from '../kube-config';

const PLURAL = CRD_NAMES.InstanceType.plural;
const SSA = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
/** How often a replica looks whether it became (or stopped being) the leader. */

/**
 * The leader mirrors every InstanceType of the capacity model as a cluster-scoped InstanceType
 * custom resource: spec and status each with server-side apply (field manager
 * KUBE_FIELD_MANAGER, force), on becoming leader and on every capacity change, coalesced by a
 * KeyedReconciler (one write per InstanceType per 200 ms at most, retried with backoff); an
 * InstanceType gone from the model is deleted.
 */
@Injectable()
export class InstanceTypeMirror implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly api: CustomObjectsApi;
  private readonly reconciler: KeyedReconciler;
  /** Names this replica wrote or found in the API: candidates for deletion. */
  private readonly known = new Set<string>();
  private stopListening?: () => void;
  private unfollow?: () => void;
  private leading = false;

  constructor(
    @Inject(KUBE_CONFIG) kc: KubeConfig,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly capacity: CapacityStateService,
    private readonly leadership: Leadership,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'kube-instancetypes' });
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.reconciler = new KeyedReconciler(
      (name) => this.sync(name),
      () => [...this.capacity.model.listInstanceTypes().map((t) => t.name), ...this.known],
      { intervalMs: 200, maxDirty: 4096, backoffInitialMs: 500, backoffMaxMs: 30_000, concurrency: 4 },
      (name, err, attempts) => this.logger.warn(`InstanceType ${name}: write failed (attempt ${attempts}, retrying): ${(err as Error).message}`),
    );
  }

  onApplicationBootstrap(): void {
    this.stopListening = this.capacity.listen((event) => {
      if (this.leading && event.instanceType) this.reconciler.mark(event.instanceType.name);
    });
    this.unfollow = this.leadership.onChange(() => this.checkLeadership());
    this.checkLeadership();
  }

  onApplicationShutdown(): void {
    this.unfollow?.();
    this.stopListening?.();
    this.reconciler.stop();
  }

  /** For tests: nothing waiting to be written. */
  get idle(): boolean {
    return this.reconciler.idle;
  }

  private checkLeadership(): void {
    const leading = this.leadership.isLeader && this.capacity.ready;
    if (leading === this.leading) return;
    this.leading = leading;
    if (!leading) return;
    this.logger.info('leader: mirroring InstanceTypes as custom resources');
    // Resources left by an earlier leader that the model no longer has must go too.
    this.api
      .listClusterCustomObject({ group: GPUFLEET_GROUP, version: GPUFLEET_VERSION, plural: PLURAL })
      .then((list: { items?: { metadata?: { name?: string } }[] }) => {
        for (const item of list.items ?? []) if (item.metadata?.name) this.known.add(item.metadata.name);
      })
      .catch((e: Error) => this.logger.warn(`could not list InstanceType resources: ${e.message}`))
      .finally(() => this.reconciler.markAll());
  }

  private async sync(name: string): Promise<void> {
    if (!this.leadership.isLeader) return;
    const instanceType = this.capacity.model.getInstanceType(name);
    const ids = { group: GPUFLEET_GROUP, version: GPUFLEET_VERSION, plural: PLURAL, name };
    if (!instanceType) {
      if (!this.known.has(name)) return;
      try {
        await this.api.deleteClusterCustomObject(ids);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.known.delete(name);
      return;
    }
    const { status, ...main } = instanceTypeResourceOf(instanceType);
    const write = { fieldManager: this.config.KUBE_FIELD_MANAGER, force: true };
    await this.api.patchClusterCustomObject({ ...ids, body: main, ...write }, SSA);
    this.known.add(name);
    await this.api.patchClusterCustomObjectStatus({ ...ids, body: { apiVersion: main.apiVersion, kind: main.kind, metadata: { name }, status }, ...write }, SSA);
  }
}
