import type { V1ObjectMeta, V1Pod, V1Service } from '@kubernetes/client-node';
import { inPlaceMetadataOf, specHashOf } from './hash';
import { KubeLabels, MANAGED_BY } from './names';

export interface KubeObjects {
  readonly pods: readonly V1Pod[];
  readonly services: readonly V1Service[];
}

export interface ObjectName {
  readonly namespace: string;
  readonly name: string;
}

export interface DesiredKubeObjects extends KubeObjects {
  /**
   * Pods that are desired but cannot be made now (an engine waiting for its weights): one that
   * exists is neither replaced nor deleted, unless it is in phase Failed; none is made.
   */
  readonly held?: readonly ObjectName[];
}

export interface ObjectRef {
  readonly kind: 'Pod' | 'Service';
  readonly namespace: string;
  readonly name: string;
  /** The observed object's uid: delete with it as a precondition, so a newer object of the same name is never hit. */
  readonly uid: string;
}

export type DeleteReason =
  /** Managed, but no desired object has its name: a scale down, a deleted deployment, an instance stopped. */
  | 'NotDesired'
  /** Its spec hash differs from the desired object's: a Pod cannot be changed in place, so it is replaced. */
  | 'SpecChanged'
  /** Phase Failed (evicted, refused by the kubelet): a Pod never leaves it, so it is made again. */
  | 'PodFailed'
  /** A member of its multi-node replica left the group after this Pod's engine started: the group forms again (`groupRestartsOf`). */
  | 'GroupRestart';

export interface PlannedDelete {
  readonly ref: ObjectRef;
  readonly reason: DeleteReason;
  /** Why, in a sentence, where the reason alone does not say (a group restart names the member that left). */
  readonly message?: string;
}

export interface PlannedWait {
  readonly ref: Omit<ObjectRef, 'uid'>;
  /** Why the desired object is not applied in this pass. */
  readonly message: string;
}

export interface PlannedConflict {
  readonly ref: ObjectRef;
  /** What to do about it. */
  readonly message: string;
}

/**
 * What to do in one pass. `apply`: server-side apply (create or update). `delete`: delete with the
 * uid precondition. A replaced Pod is deleted in this pass and applied in a later one, once the old
 * one is gone (`wait` says which). `conflicts`: an object of the desired name that gpufleet does not
 * manage; it is left alone and the desired object is not applied.
 */
export interface ReconcilePlan {
  readonly apply: { readonly pods: V1Pod[]; readonly services: V1Service[] };
  readonly delete: PlannedDelete[];
  readonly wait: PlannedWait[];
  readonly conflicts: PlannedConflict[];
}

type KubeObject = V1Pod | V1Service;

function keyOf(meta: V1ObjectMeta | undefined): string {
  return `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
}

/** Whether gpufleet made the object: the only objects it ever changes or deletes. */
export function isManaged(object: { metadata?: V1ObjectMeta }): boolean {
  return object.metadata?.labels?.[KubeLabels.managedBy] === MANAGED_BY;
}

function refOf(kind: ObjectRef['kind'], object: KubeObject): ObjectRef {
  return { kind, namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '', uid: object.metadata?.uid ?? '' };
}

function terminating(object: KubeObject): boolean {
  return object.metadata?.deletionTimestamp !== undefined && object.metadata?.deletionTimestamp !== null;
}

/**
 * Desired against observed Pods and Services. `observed` may hold objects of any origin (a list
 * by namespace): those without `app.kubernetes.io/managed-by: gpufleet` are never deleted or
 * changed. Pure; the result is sorted by namespace/name within each list.
 */
export function reconcilePlan(desired: DesiredKubeObjects, observed: KubeObjects): ReconcilePlan {
  const plan = { apply: { pods: [] as V1Pod[], services: [] as V1Service[] }, delete: [] as PlannedDelete[], wait: [] as PlannedWait[], conflicts: [] as PlannedConflict[] };
  planKind('Pod', desired.pods, observed.pods, plan, plan.apply.pods, desired.held ?? []);
  planKind('Service', desired.services, observed.services, plan, plan.apply.services, []);
  const byRef = (a: { ref: Omit<ObjectRef, 'uid'> }, b: { ref: Omit<ObjectRef, 'uid'> }): number => compare(`${a.ref.kind}/${a.ref.namespace}/${a.ref.name}`, `${b.ref.kind}/${b.ref.namespace}/${b.ref.name}`);
  plan.delete.sort(byRef);
  plan.wait.sort(byRef);
  plan.conflicts.sort(byRef);
  return plan;
}

function planKind<T extends KubeObject>(kind: ObjectRef['kind'], desired: readonly T[], observed: readonly T[], plan: Omit<ReconcilePlan, 'apply'>, apply: T[], held: readonly ObjectName[]): void {
  const seen = new Map(observed.map((o) => [keyOf(o.metadata), o]));
  const wanted = new Set<string>();
  for (const h of held) {
    const key = keyOf(h);
    const have = seen.get(key);
    wanted.add(key);
    // A failed Pod never runs again, and its replacement waits like a first start.
    if (have && isManaged(have) && !terminating(have) && (have as V1Pod).status?.phase === 'Failed') plan.delete.push({ ref: refOf(kind, have), reason: 'PodFailed' });
  }
  for (const want of [...desired].sort((a, b) => compare(keyOf(a.metadata), keyOf(b.metadata)))) {
    const key = keyOf(want.metadata);
    wanted.add(key);
    const have = seen.get(key);
    const ref = { kind, namespace: want.metadata?.namespace ?? '', name: want.metadata?.name ?? '' };
    if (!have) {
      apply.push(want);
      continue;
    }
    if (!isManaged(have)) {
      plan.conflicts.push({
        ref: refOf(kind, have),
        message: `${kind} ${key} exists but is not managed by gpufleet (no label ${KubeLabels.managedBy}=${MANAGED_BY}); rename or delete it, gpufleet leaves it alone`,
      });
      continue;
    }
    if (terminating(have)) {
      plan.wait.push({ ref, message: `${kind} ${key} is terminating; it is applied again once it is gone` });
      continue;
    }
    const changed = specHashOf(have) !== specHashOf(want);
    if (kind === 'Pod') {
      const failed = (have as V1Pod).status?.phase === 'Failed';
      if (failed || changed) {
        plan.delete.push({ ref: refOf(kind, have), reason: failed ? 'PodFailed' : 'SpecChanged' });
        plan.wait.push({ ref, message: `Pod ${key} is being replaced (${failed ? 'it failed' : 'its spec changed'}); the new one is applied once the old one is gone` });
      } else if (inPlaceMetadataOf(have) !== inPlaceMetadataOf(want)) {
        // Devices annotation or owner references: mutable metadata, applied to the running Pod.
        apply.push(want);
      }
      continue;
    }
    // A Service is changed in place.
    if (changed || inPlaceMetadataOf(have) !== inPlaceMetadataOf(want)) apply.push(want);
  }
  for (const have of observed) {
    if (!isManaged(have) || terminating(have) || wanted.has(keyOf(have.metadata))) continue;
    plan.delete.push({ ref: refOf(kind, have), reason: 'NotDesired' });
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
