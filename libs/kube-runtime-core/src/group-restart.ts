/**
 * Restarting a multi-node replica on Kubernetes when one of its members leaves the group.
 *
 * The kubelet restarts a crashed container in place (restartPolicy Always, CrashLoopBackOff), but
 * the engines cannot re-form around a lost rank: NCCL's communicators are fixed at start, and a
 * leader may only notice after a collective timeout. So the reconciler deletes the Pods of the
 * members that were part of the group the rank left, and makes them again: every member whose
 * engine container started before another member's engine last exited. The member that exited
 * is left to the kubelet, whose back-off paces the group's restarts; members made again start
 * after that exit and are not deleted again until it exits again, so a crash-looping member
 * restarts its group once per crash, never in a loop.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { KubeLabels, MANAGED_BY } from './names';
import type { PlannedDelete } from './reconcile-plan';

type Timestamp = Date | string | undefined;

function toMs(value: Timestamp): number | undefined {
  if (value === undefined) return undefined;
  const ms = (value instanceof Date ? value : new Date(value)).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

function engineStatus(pod: V1Pod): V1ContainerStatus | undefined {
  const name = pod.spec?.containers?.[0]?.name;
  return pod.status?.containerStatuses?.find((c) => c.name === name);
}

/** When the pod's engine last exited (its container's latest termination), if it ever did. */
function lastExitMs(pod: V1Pod): number | undefined {
  const c = engineStatus(pod);
  const times = [c?.state?.terminated?.finishedAt, c?.lastState?.terminated?.finishedAt].map((t) => toMs(t as Timestamp)).filter((t): t is number => t !== undefined);
  return times.length > 0 ? Math.max(...times) : undefined;
}

/** When the pod's current engine started, while it runs. */
function runningSinceMs(pod: V1Pod): number | undefined {
  return toMs(engineStatus(pod)?.state?.running?.startedAt as Timestamp);
}

function describe(pod: V1Pod, exitMs: number): string {
  const labels = pod.metadata?.labels ?? {};
  const c = engineStatus(pod);
  const t = c?.state?.terminated ?? c?.lastState?.terminated;
  const how = t ? (t.signal ? `killed by signal ${t.signal}` : `exited with code ${t.exitCode}`) : 'exited';
  const reason = t?.reason && t.reason !== 'Error' && t.reason !== 'Completed' ? `${t.reason}: ` : '';
  return `${labels[KubeLabels.groupRole]} pod ${labels[KubeLabels.pod]} on ${pod.spec?.nodeName ?? '?'} ${reason}${how} at ${new Date(exitMs).toISOString()}`;
}

/**
 * The Pods of multi-node replicas to delete so that their groups form again (see above), with
 * the observed uid for the delete's precondition. Terminating Pods neither count nor are deleted;
 * Pods gpufleet did not make, and pods of single-pod replicas, are never touched. Pure.
 */
export function groupRestartsOf(pods: readonly V1Pod[]): PlannedDelete[] {
  const groups = new Map<string, V1Pod[]>();
  for (const pod of pods) {
    const labels = pod.metadata?.labels ?? {};
    if (labels[KubeLabels.managedBy] !== MANAGED_BY || !labels[KubeLabels.groupRole] || pod.metadata?.deletionTimestamp) continue;
    // One replica: its workload (a new name for every incarnation), pod set and replica.
    // The gpufleet namespace too: in a shared workload namespace two of them may hold workloads of one name.
    const key = [pod.metadata?.namespace, labels[KubeLabels.namespace], labels[KubeLabels.workload], labels[KubeLabels.podSet], labels[KubeLabels.replica]].join('/');
    groups.set(key, [...(groups.get(key) ?? []), pod]);
  }
  const out: PlannedDelete[] = [];
  for (const members of groups.values()) {
    const exits = members.map((m) => ({ pod: m, at: lastExitMs(m) })).filter((e): e is { pod: V1Pod; at: number } => e.at !== undefined);
    for (const pod of members) {
      const since = runningSinceMs(pod);
      if (since === undefined) continue;
      const left = exits.filter((e) => e.pod !== pod && e.at > since).sort((a, b) => b.at - a.at)[0];
      if (!left) continue;
      out.push({
        ref: { kind: 'Pod', namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
        reason: 'GroupRestart',
        message: `${describe(left.pod, left.at)}, after this ${pod.metadata?.labels?.[KubeLabels.groupRole]}'s engine started; restarting it: engines cannot re-form around a lost rank`,
      });
    }
  }
  return out.sort((a, b) => (a.ref.name < b.ref.name ? -1 : a.ref.name > b.ref.name ? 1 : 0));
}
