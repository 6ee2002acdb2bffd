import { createHash } from 'node:crypto';
import { isValidLabelValue } from './label-value';
import type { NodeLabels } from './node-labels';

/** NFD's NodeFeature kind: nfd-master turns its `spec.labels` into labels of the node it names. */
export const NODE_FEATURE_API_VERSION = 'nfd.k8s-sigs.io/v1alpha1';
export const NODE_FEATURE_KIND = 'NodeFeature';
/** The label that tells nfd-master which node a NodeFeature is for. */
export const NFD_NODE_NAME_LABEL = 'nfd.node.kubernetes.io/node-name';
/** NFD's own label namespace: always allowed, and what nfd-master prefixes unprefixed names with. */
export const NFD_FEATURE_NS = 'feature.node.kubernetes.io';

export interface NodeFeatureObject {
  apiVersion: typeof NODE_FEATURE_API_VERSION;
  kind: typeof NODE_FEATURE_KIND;
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: { labels: Record<string, string> };
}

export interface NfdLabelSplit {
  /** What the NodeFeature carries: valid keys and values in namespaces nfd-master accepts. */
  labels: NodeLabels;
  /** Keys left out, each with why. */
  dropped: { key: string; reason: string }[];
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes label key: an optional DNS-subdomain prefix (≤ 253) and "/", then a name of ≤ 63 characters. */
export function isValidLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (!NAME.test(name)) return false;
  return prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix));
}

const inNs = (ns: string, domain: string): boolean => ns === domain || ns.endsWith(`.${domain}`);

/**
 * Whether nfd-master creates a label of this namespace from a NodeFeature: kubernetes.io and
 * k8s.io and their sub-namespaces are always denied, except feature.node.kubernetes.io and
 * profile.node.kubernetes.io (and theirs), which are always allowed. Other namespaces are
 * allowed by NFD ≥ v0.13 unless its denyLabelNs names them (older: only with -extra-label-ns).
 */
export function nfdAcceptsNamespace(ns: string): boolean {
  if (inNs(ns, NFD_FEATURE_NS) || inNs(ns, 'profile.node.kubernetes.io')) return true;
  return !inNs(ns, 'kubernetes.io') && !inNs(ns, 'k8s.io');
}

/**
 * The node's labels as a NodeFeature's `spec.labels`: keys or values Kubernetes would refuse
 * are left out, as are namespaces nfd-master denies (kubernetes.io/arch and /os, which the
 * kubelet sets anyway; node.kubernetes.io/…). An unprefixed key gets NFD's own prefix, which is
 * what nfd-master would give it, so the object says what the node gets.
 */
export function toNfdLabels(labels: NodeLabels): NfdLabelSplit {
  const out: NodeLabels = {};
  const dropped: NfdLabelSplit['dropped'] = [];
  for (const key of Object.keys(labels).sort()) {
    const value = labels[key];
    const full = key.includes('/') ? key : `${NFD_FEATURE_NS}/${key}`;
    if (!isValidLabelKey(full)) dropped.push({ key, reason: 'not a valid Kubernetes label key' });
    else if (!isValidLabelValue(value)) dropped.push({ key, reason: `value ${JSON.stringify(value)} is not a valid Kubernetes label value` });
    else if (!nfdAcceptsNamespace(full.slice(0, full.indexOf('/')))) dropped.push({ key, reason: 'nfd-master denies the kubernetes.io namespaces' });
    else out[full] = value;
  }
  return { labels: out, dropped };
}

/** Longest object name (a DNS subdomain). */
const MAX_NAME = 253;

/**
 * The NodeFeature's name for a node: "gpufleet-<node>". A node name within 9 characters of the
 * 253 limit is cut and given 10 hex digits of its SHA-256, so the name stays valid and unique.
 */
export function nodeFeatureName(nodeName: string): string {
  const name = `gpufleet-${nodeName}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(nodeName).digest('hex').slice(0, 10);
  return `${name.slice(0, MAX_NAME - hash.length - 1).replace(/[-.]+$/, '')}-${hash}`;
}

/** The whole object to server-side apply for a node: the full label set every time, so labels that went away leave it. */
export function nodeFeatureFor(nodeName: string, namespace: string, labels: NodeLabels): NodeFeatureObject {
  return {
    apiVersion: NODE_FEATURE_API_VERSION,
    kind: NODE_FEATURE_KIND,
    metadata: { name: nodeFeatureName(nodeName), namespace, labels: { [NFD_NODE_NAME_LABEL]: nodeName } },
    spec: { labels: { ...labels } },
  };
}
