/**
 * What the router takes from a ModelDeployment record: the model name clients use and the
 * endpoints of its Ready replicas of the role that answers requests. The scheduler writes these
 * records; the router only reads them (by watch).
 */
import type { ModelDeployment } from '@gpufleet/contracts';

/** One ready replica a request can go to. */
export interface ReadyEndpoint {
  /** `http://host:port` of the engine. */
  readonly endpoint: string;
  /** `<namespace>.<name>` of its deployment. */
  readonly deployment: string;
  readonly role: string;
}

export interface DeploymentRoute {
  /** `<namespace>.<name>`. */
  readonly deployment: string;
  /** The name in requests' `model`. */
  readonly model: string;
  /** Ready replicas of the answering role, in status order, without duplicates. */
  readonly endpoints: readonly ReadyEndpoint[];
  /** Replicas of the answering role the deployment wants, for error messages. */
  readonly desired: number;
  /** The deployment has prefill/decode roles: requests go to decode replicas. */
  readonly disaggregated: boolean;
}

/** `spec.servedModelName`, or the model's last path segment (what the scheduler defaults it to). */
export function servedModelName(deployment: ModelDeployment): string {
  const spec = deployment.spec;
  if (!spec) return '';
  if (spec.servedModelName) return spec.servedModelName;
  const model = spec.model.replace(/\/+$/, '');
  return model.slice(model.lastIndexOf('/') + 1);
}

const ENDPOINT = /^https?:\/\/[^/\s]+\/?$/;

/**
 * The route of one deployment record. Requests go to whole-request servers (role `server`, or no
 * role); a prefill/decode deployment gets them on its decode replicas. A replica counts when its
 * state is `Ready` and it has an `http(s)://host:port` endpoint.
 */
export function deploymentRoute(key: string, deployment: ModelDeployment): DeploymentRoute | undefined {
  const model = servedModelName(deployment);
  if (model === '') return undefined;
  const roles = deployment.spec?.roles ?? [];
  const replicas = deployment.status?.replicas ?? [];
  const disaggregated = roles.some((r) => r.role === 'decode') || replicas.some((r) => r.role === 'decode');
  const answers = (role: string): boolean => (disaggregated ? role === 'decode' : role === 'server' || role === '');
  const seen = new Set<string>();
  const endpoints: ReadyEndpoint[] = [];
  for (const replica of replicas) {
    if (replica.state !== 'Ready' || !answers(replica.role) || !ENDPOINT.test(replica.endpoint)) continue;
    const endpoint = replica.endpoint.replace(/\/$/, '');
    if (seen.has(endpoint)) continue;
    seen.add(endpoint);
    endpoints.push({ endpoint, deployment: key, role: replica.role || 'server' });
  }
  let desired = 0;
  for (const role of roles) if (answers(role.role)) desired += role.replicas;
  return { deployment: key, model, endpoints, desired, disaggregated };
}
