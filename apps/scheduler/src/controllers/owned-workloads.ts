import type { Workload, WorkloadSpec } from '@gpufleet/contracts';
import { ownerOf, type OwnerKind } from '@gpufleet/deployments-core';
import type { Logger } from '@gpufleet/observability';
import type { SchedulingStore } from '../scheduling/scheduling-store.service';
import type { WorkloadSubmitter } from '../scheduling/workload-submitter';
import { keyOfSpec, storeKey, workloadKey } from '../scheduling/workload-keys';

/** A replica workload that could not be created is retried after this long. */
const CREATE_RETRY_MS = 5_000;

/**
 * The workloads one controller owns (by the owner labels), as the store will hold them once the
 * controller's own writes land: workloads it created that the mirror has not shown yet are
 * added, ones it deleted are left out, so a pass that runs before its predecessor's writes come
 * back neither creates nor deletes twice. Creations that failed are remembered per owner and
 * retried after CREATE_RETRY_MS, with their reason shown in the owner's status.
 */
export class OwnedWorkloads {
  private readonly created = new Map<string, Workload>();
  private readonly deleted = new Set<string>();
  private readonly createFailures = new Map<string, { at: number; message: string }>();

  constructor(
    private readonly kind: OwnerKind,
    private readonly store: SchedulingStore,
    private readonly submitter: WorkloadSubmitter,
    private readonly logger: Logger,
  ) {}

  /** This kind's workloads by owner key ("<namespace>/<name>"), overlaid with this controller's writes. */
  byOwner(): Map<string, Workload[]> {
    const view = new Map<string, Workload>();
    for (const [key, { value }] of this.store.workloads.entries) {
      this.created.delete(key);
      if (!this.deleted.has(key)) view.set(key, value);
    }
    for (const key of this.deleted) if (!this.store.workloads.entries.has(key)) this.deleted.delete(key);
    for (const [key, w] of this.created) view.set(key, w);
    const out = new Map<string, Workload[]>();
    for (const w of view.values()) {
      const owner = w.spec && ownerOf(w.spec);
      if (owner?.kind !== this.kind) continue;
      const key = workloadKey(w.spec!.namespace, owner.name);
      out.set(key, [...(out.get(key) ?? []), w]);
    }
    return out;
  }

  /** Why the owner's last creation failed, if it did. */
  failureOf(owner: string): string | undefined {
    return this.createFailures.get(owner)?.message;
  }

  noteFailure(owner: string, message: string, now: number): void {
    this.createFailures.set(owner, { at: now, message });
  }

  forget(owner: string): void {
    this.createFailures.delete(owner);
  }

  async create(owner: string, spec: WorkloadSpec, now: number): Promise<void> {
    const failure = this.createFailures.get(owner);
    if (failure && now - failure.at < CREATE_RETRY_MS) return;
    try {
      const workload = await this.submitter.submit(spec);
      this.created.set(keyOfSpec(spec), workload);
      this.createFailures.delete(owner);
      this.logger.info({ owner, workload: spec.name }, `${owner}: created workload ${spec.name}`);
    } catch (err) {
      const message = (err as Error).message;
      this.createFailures.set(owner, { at: now, message });
      this.logger.warn({ owner, workload: spec.name }, `${owner}: workload ${spec.name} not created: ${message}`);
    }
  }

  async delete(key: string, why: string): Promise<void> {
    if (this.deleted.has(key)) return;
    this.deleted.add(key);
    this.created.delete(key);
    try {
      await this.store.workloads.store.delete(storeKey(key));
      this.logger.info({ workload: key }, `deleted workload ${key}: ${why}`);
    } catch (err) {
      this.deleted.delete(key);
      this.logger.warn({ workload: key }, `workload ${key} not deleted (${why}): ${(err as Error).message}`);
    }
  }

  /** Stepping down: the next leader starts from the store alone. */
  reset(): void {
    this.created.clear();
    this.deleted.clear();
  }
}
