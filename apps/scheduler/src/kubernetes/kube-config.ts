import { KubeConfig } from '@kubernetes/client-node';
import type { SchedulerConfig } from '../config';

/** Injection token of the scheduler's KubeConfig (present when the Kubernetes API is used). */
export const KUBE_CONFIG = Symbol('KUBE_CONFIG');

/** True when the scheduler talks to a Kubernetes API: the kubernetes runtime or the custom resources. */
export function usesKubernetes(config: Pick<SchedulerConfig, 'RUNTIME' | 'KUBE_CUSTOM_RESOURCES'>): boolean {
  return config.RUNTIME === 'kubernetes' || config.KUBE_CUSTOM_RESOURCES;
}

/**
 * The Kubernetes API the scheduler works against: KUBECONFIG's file when set, else the Pod's
 * service account when running in one, else ~/.kube/config (what kubectl would use).
 */
export function loadKubeConfig(config: Pick<SchedulerConfig, 'KUBECONFIG'>): KubeConfig {
  const kc = new KubeConfig();
  if (config.KUBECONFIG !== '') kc.loadFromFile(config.KUBECONFIG);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error('KUBECONFIG: expected a kubeconfig with a current context and cluster, got none');
  return kc;
}
