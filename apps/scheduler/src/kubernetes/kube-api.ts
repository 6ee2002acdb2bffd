import { ApiException, type CoreV1Api } from '@kubernetes/client-node';
import { MANAGED_BY, MANAGED_BY_LABEL } from '@gpufleet/kube-runtime-core';
import type { Logger } from '@gpufleet/observability';

/** Tries of one API call (`callKube`) and the first wait between them, doubled each time. */
export const CALL_ATTEMPTS = 4;
export const BACKOFF_MS = 100;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/** The HTTP status of a Kubernetes API error; undefined for anything else. */
export function kubeErrorCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { statusCode?: unknown })?.statusCode ?? (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** True for the API's 404 (the object, or its namespace, is not there). */
export function isNotFound(err: unknown): boolean {
  return kubeErrorCode(err) === 404;
}

/** What an API error says, without the request (whose headers hold the token). */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    let message: string | undefined;
    try {
      message = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body)?.message;
    } catch {
      message = String(err.body).slice(0, 200);
    }
    return `HTTP ${err.code}${message ? `: ${message}` : ''}`;
  }
  return (err as Error)?.message ?? String(err);
}

/** One API call, tried again on 409 (when `retryConflict`), 429 and 5xx with doubling backoff. */
export async function callKube<T>(what: string, fn: () => Promise<T>, retryConflict = true): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const code = kubeErrorCode(err) ?? 0;
      const retriable = (code === 409 && retryConflict) || code === 429 || code >= 500;
      if (!retriable || attempt >= CALL_ATTEMPTS) throw new Error(`${what}: ${describeKubeError(err)}`, { cause: err });
      await sleep(BACKOFF_MS * 2 ** (attempt - 1));
    }
  }
}

/** Kubernetes namespaces made on first use (labelled as gpufleet's), each checked once per leadership. */
export class KubeNamespaces {
  private readonly ensured = new Set<string>();

  constructor(
    private readonly core: () => CoreV1Api,
    private readonly logger: Logger,
  ) {}

  async ensure(name: string): Promise<void> {
    if (this.ensured.has(name)) return;
    try {
      await this.core().readNamespace({ name });
    } catch (err) {
      if (kubeErrorCode(err) !== 404) throw new Error(`namespace ${name}: ${describeKubeError(err)}`, { cause: err });
      try {
        await this.core().createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } } } });
        this.logger.info(`created namespace ${name}`);
      } catch (createErr) {
        if (kubeErrorCode(createErr) !== 409) throw new Error(`namespace ${name}: ${describeKubeError(createErr)}`, { cause: createErr });
      }
    }
    this.ensured.add(name);
  }

  /** Forgets what was checked (a new leadership checks again). */
  clear(): void {
    this.ensured.clear();
  }
}
