import { ApiException, CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import type { NodeFeatureObject } from '@gpufleet/device-inventory';

/** The field manager of the agent's server-side applies. */
export const FIELD_MANAGER = 'gpufleet';

/** One request to the API server waits at most this long: a hung connection must not stall the publisher for good. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** KUBECONFIG's file when set, else the Pod's service account when in one, else ~/.kube/config (what kubectl would use). */
export function loadKubeConfig(kubeconfig: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfig !== '') kc.loadFromFile(kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error('KUBECONFIG: expected a kubeconfig with a current context and cluster, got none');
  return kc;
}

export function statusCodeOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** What an API error says, without the request (whose headers hold the token). */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    let message: string | undefined;
    try {
      message = (typeof err.body === 'string' ? (JSON.parse(err.body) as { message?: string }) : (err.body as { message?: string } | undefined))?.message;
    } catch {
      message = String(err.body).slice(0, 200);
    }
    return `HTTP ${err.code}${message ? `: ${message}` : ''}`;
  }
  return (err as Error)?.message ?? String(err);
}

function withTimeout<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`)), REQUEST_TIMEOUT_MS);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The two calls the agent makes: apply a NodeFeature, read a Node. */
export class NfdKubeClient {
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async applyNodeFeature(object: NodeFeatureObject): Promise<void> {
    try {
      await withTimeout('apply', this.objects.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
    } catch (err) {
      throw new Error(describeKubeError(err), { cause: err });
    }
  }

  /** true: the Node exists; false: 404; throws on anything else. */
  async nodeExists(name: string): Promise<boolean> {
    try {
      await withTimeout('get node', this.core.readNode({ name }));
      return true;
    } catch (err) {
      if (statusCodeOf(err) === 404) return false;
      throw new Error(describeKubeError(err), { cause: err });
    }
  }
}
