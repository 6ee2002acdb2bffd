import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { PodRuntimeStatus } from '@gpufleet/contracts';
import { withSpecHash } from './hash';
import { dnsLabel, KubeLabels } from './names';
import type { ObjectName } from './reconcile-plan';

/** KUBE_WORKLOAD_NAMESPACE's value that puts each object in the Kubernetes namespace named like its gpufleet namespace. */
export const PER_NAMESPACE = '*';

/**
 * An object of desiredObjects (made in its gpufleet namespace) moved into the Kubernetes
 * namespace the runtime is configured with. With `*`, or when the namespaces are the same, the
 * object is returned as it is. Otherwise, since several gpufleet namespaces share one Kubernetes
 * namespace, the name is prefixed with the gpufleet namespace (`team-a-llama-s0-…`, a DNS label),
 * a Service selects only its own namespace's pods (`gpufleet.io/namespace`), owner references are
 * dropped (they cannot cross namespaces) and the spec hash is computed again. Pure.
 */
export function inWorkloadNamespace<T extends V1Pod | V1Service>(object: T, workloadNamespace: string): T {
  const from = object.metadata?.namespace ?? '';
  if (workloadNamespace === PER_NAMESPACE || from === workloadNamespace) return object;
  const metadata = { ...object.metadata, ...workloadNamespaceName({ namespace: from, name: object.metadata?.name ?? '' }, workloadNamespace) };
  delete metadata.ownerReferences;
  const moved = { ...object, metadata } as T;
  if (moved.kind === 'Pod') movePodGroup(moved as V1Pod, from, workloadNamespace);
  if (moved.kind === 'Service') {
    const service = moved as V1Service;
    const selector = service.spec?.selector;
    if (selector) service.spec = { ...service.spec, selector: { ...selector, [KubeLabels.namespace]: from } };
  }
  return withSpecHash(moved);
}

/** Where `inWorkloadNamespace` puts an object of this name (a held Pod's, say). */
export function workloadNamespaceName(object: ObjectName, workloadNamespace: string): ObjectName {
  if (workloadNamespace === PER_NAMESPACE || object.namespace === workloadNamespace) return object;
  return { namespace: workloadNamespace, name: dnsLabel(object.namespace, object.name) };
}

/**
 * A group pod's headless Service is renamed with it (`team-a-big-…-group`), so its `subdomain`
 * and the DNS names of its members in the command line and environment
 * (`<pod>.<service>.<namespace>.svc`) follow. Its `hostname` stays: the names stay unique, the
 * Service's name carrying the gpufleet namespace.
 */
function movePodGroup(pod: V1Pod, from: string, to: string): void {
  const subdomain = pod.spec?.subdomain;
  if (!pod.spec || !subdomain) return;
  const moved = dnsLabel(from, subdomain);
  const rename = (text: string): string => text.split(`.${subdomain}.${from}.svc`).join(`.${moved}.${to}.svc`);
  pod.spec = {
    ...pod.spec,
    subdomain: moved,
    containers: pod.spec.containers.map((c) => ({
      ...c,
      ...(c.args ? { args: c.args.map(rename) } : {}),
      ...(c.env ? { env: c.env.map((e) => (e.value === undefined ? e : { ...e, value: rename(e.value) })) } : {}),
    })),
  };
}

/** Whether two pod records say the same (updated_at aside): a record is only rewritten when it changed. */
export function samePodStatus(a: PodRuntimeStatus | undefined, b: PodRuntimeStatus | undefined): boolean {
  if (!a || !b) return a === b;
  return podStatusFingerprint(a) === podStatusFingerprint(b);
}

/** The record as JSON without updated_at. */
export function podStatusFingerprint(status: PodRuntimeStatus): string {
  const json = PodRuntimeStatus.toJSON({ ...status, updatedAt: undefined }) as Record<string, unknown>;
  delete json.updatedAt;
  return JSON.stringify(json, Object.keys(json).sort());
}
