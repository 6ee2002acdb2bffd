import type { V1Node, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { LABEL } from '@gpufleet/device-inventory';
import { isDeviceResource } from './devices';
import { DEFAULT_ACCELERATOR_TOLERATIONS } from './pod-manifest';

/** What the scheduler needs of a Kubernetes Node. */
export interface KubeNodeState {
  readonly name: string;
  /** Ready, not cordoned, and no NoSchedule/NoExecute taint the pods do not tolerate. */
  readonly schedulable: boolean;
  readonly ready: boolean;
  readonly cordoned: boolean;
  /** Why it is not schedulable, one sentence each; empty when it is. */
  readonly reasons: readonly string[];
  /** The taints gpufleet's pods do not tolerate. */
  readonly untoleratedTaints: readonly V1Taint[];
  readonly labels: Readonly<Record<string, string>>;
  /** From gpufleet's topology labels, or the well-known Kubernetes ones. */
  readonly topology: { readonly zone?: string; readonly region?: string; readonly rack?: string; readonly nvlinkDomain?: string };
  readonly arch?: string;
  readonly os?: string;
  /** status.allocatable of the device-plugin resources (`gpufleet.io/nvidia-gpu`, `gpufleet.io/nvidia-mig-3g.40gb`, …). */
  readonly deviceAllocatable: Readonly<Record<string, number>>;
  readonly internalIP?: string;
}

/** Kubernetes' rule: a toleration with an empty effect matches every effect; `Exists` with an empty key matches every taint. */
export function tolerates(toleration: V1Toleration, taint: V1Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  const operator = toleration.operator ?? 'Equal';
  if (!toleration.key) return operator === 'Exists';
  if (toleration.key !== taint.key) return false;
  return operator === 'Exists' || (toleration.value ?? '') === (taint.value ?? '');
}

const WELL_KNOWN_ZONE = 'topology.kubernetes.io/zone';
const WELL_KNOWN_REGION = 'topology.kubernetes.io/region';

/**
 * A Node as the scheduler sees it. `tolerations` are those gpufleet's pods carry (default
 * DEFAULT_ACCELERATOR_TOLERATIONS); PreferNoSchedule taints never make a node unschedulable.
 */
export function nodeStateOf(node: V1Node, tolerations: readonly V1Toleration[] = DEFAULT_ACCELERATOR_TOLERATIONS): KubeNodeState {
  const name = node.metadata?.name ?? '';
  const labels = { ...(node.metadata?.labels ?? {}) };
  const readyCondition = node.status?.conditions?.find((c) => c.type === 'Ready');
  const ready = readyCondition?.status === 'True';
  const cordoned = node.spec?.unschedulable === true;
  const untoleratedTaints = (node.spec?.taints ?? []).filter((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tolerations.some((tol) => tolerates(tol, t)));
  const reasons: string[] = [];
  if (cordoned) reasons.push('cordoned (spec.unschedulable): uncordon it with `kubectl uncordon ' + name + '`');
  if (!ready) {
    const why = readyCondition ? `${readyCondition.reason ?? readyCondition.status}${readyCondition.message ? `: ${readyCondition.message}` : ''}` : 'no Ready condition reported';
    reasons.push(`NotReady (${why})`);
  }
  for (const t of untoleratedTaints) reasons.push(`taint ${t.key}${t.value ? `=${t.value}` : ''}:${t.effect} is not tolerated by gpufleet's pods`);
  const deviceAllocatable: Record<string, number> = {};
  for (const [resource, quantity] of Object.entries(node.status?.allocatable ?? {})) {
    if (isDeviceResource(resource)) {
      const n = Number(quantity);
      if (Number.isFinite(n)) deviceAllocatable[resource] = n;
    }
  }
  const topology: { -readonly [K in keyof KubeNodeState['topology']]: string } = {};
  const zone = labels[LABEL.zone] ?? labels[WELL_KNOWN_ZONE];
  if (zone) topology.zone = zone;
  if (labels[WELL_KNOWN_REGION]) topology.region = labels[WELL_KNOWN_REGION];
  if (labels[LABEL.rack]) topology.rack = labels[LABEL.rack];
  if (labels[LABEL.nvlinkDomain]) topology.nvlinkDomain = labels[LABEL.nvlinkDomain];
  const internalIP = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  return {
    name,
    schedulable: reasons.length === 0,
    ready,
    cordoned,
    reasons,
    untoleratedTaints,
    labels,
    topology,
    ...(labels[LABEL.arch] ? { arch: labels[LABEL.arch] } : {}),
    ...(labels[LABEL.os] ? { os: labels[LABEL.os] } : {}),
    deviceAllocatable,
    ...(internalIP ? { internalIP } : {}),
  };
}

export interface JoinedNode<A> {
  readonly name: string;
  readonly agent: A;
  readonly kube: KubeNodeState;
}

export interface NodeJoin<A> {
  readonly joined: JoinedNode<A>[];
  /** Agents with no Kubernetes Node: nothing can be placed on them through Kubernetes. */
  readonly agentOnly: A[];
  /** Nodes without a device-discovery agent: no inventory, so no accelerators to offer. */
  readonly kubeOnly: KubeNodeState[];
}

const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/**
 * The agents' node identities (NODE_NAME, which the DaemonSet sets from `spec.nodeName`) joined
 * with the Kubernetes Nodes by name; an agent whose name is not a Node's matches a Node whose
 * `kubernetes.io/hostname` label is that name (a node registered under its FQDN). Sorted by name.
 */
export function joinNodes<A>(agents: readonly A[], nameOf: (agent: A) => string, nodes: readonly V1Node[], tolerations?: readonly V1Toleration[]): NodeJoin<A> {
  const states = nodes.map((n) => nodeStateOf(n, tolerations));
  const byName = new Map(states.map((s) => [s.name, s]));
  const byHostname = new Map(states.filter((s) => s.labels[HOSTNAME_LABEL]).map((s) => [s.labels[HOSTNAME_LABEL], s]));
  const used = new Set<string>();
  const joined: JoinedNode<A>[] = [];
  const agentOnly: A[] = [];
  for (const agent of agents) {
    const name = nameOf(agent);
    const kube = byName.get(name) ?? byHostname.get(name);
    if (!kube || used.has(kube.name)) {
      agentOnly.push(agent);
      continue;
    }
    used.add(kube.name);
    joined.push({ name, agent, kube });
  }
  const kubeOnly = states.filter((s) => !used.has(s.name));
  joined.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  kubeOnly.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { joined, agentOnly, kubeOnly };
}
