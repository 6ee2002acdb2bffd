/**
 * What the router takes from a ModelDeployment record: the model name clients use and the
 * endpoints of its Ready replicas of the role that answers requests, plus, for a disaggregated
 * (prefill/decode) deployment, those of its prefill role. The scheduler writes these records; the
 * router only reads them (by watch).
 */
import type { ModelDeployment } from '@gpufleet/contracts';

/** One ready replica a request can go to. */
export interface ReadyEndpoint {
  /** `http://host:port` of the engine. */
  readonly endpoint: string;
  /** `<namespace>.<name>` of its deployment. */
  readonly deployment: string;
  /** `server`, or `decode` for the answering half of a disaggregated deployment (`prefill` in `prefillEndpoints`). */
  readonly role: string;
}

export interface DeploymentRoute {
  /** `<namespace>.<name>`. */
  readonly deployment: string;
  /** The name in requests' `model`. */
  readonly model: string;
  /**
   * Ready replicas of the answering role, in status order, without duplicates. For a
   * disaggregated deployment: its decode replicas, and none while no prefill replica is Ready
   * (a decode replica cannot answer without one).
   */
  readonly endpoints: readonly ReadyEndpoint[];
  /** Replicas of the answering role the deployment wants, for error messages. */
  readonly desired: number;
  /** The deployment has prefill/decode roles: requests are prefilled on a prefill replica, then answered by a decode replica. */
  readonly disaggregated: boolean;
  /** Ready prefill replicas (disaggregated deployments; empty otherwise). */
  readonly prefillEndpoints: readonly ReadyEndpoint[];
  /** Prefill replicas the deployment wants. */
  readonly prefillDesired: number;
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
 * role); a prefill/decode deployment gets them on its decode replicas, each prefilled first on
 * one of its prefill replicas. A replica counts when its state is `Ready` and it has an
 * `http(s)://host:port` endpoint.
 */
export function deploymentRoute(key: string, deployment: ModelDeployment): DeploymentRoute | undefined {
  const model = servedModelName(deployment);
  if (model === '') return undefined;
  const roles = deployment.spec?.roles ?? [];
  const replicas = deployment.status?.replicas ?? [];
  const disaggregated = roles.some((r) => r.role === 'decode') || replicas.some((r) => r.role === 'decode');
  const answers = (role: string): boolean => (disaggregated ? role === 'decode' : role === 'server' || role === '');
  const endpoints = readyEndpoints(key, deployment, answers);
  const prefillEndpoints = disaggregated ? readyEndpoints(key, deployment, (role) => role === 'prefill') : [];
  let desired = 0;
  let prefillDesired = 0;
  for (const role of roles) {
    if (answers(role.role)) desired += role.replicas;
    else if (disaggregated && role.role === 'prefill') prefillDesired += role.replicas;
  }
  return {
    deployment: key,
    model,
    endpoints: disaggregated && prefillEndpoints.length === 0 ? [] : endpoints,
    desired,
    disaggregated,
    prefillEndpoints,
    prefillDesired,
  };
}

function readyEndpoints(key: string, deployment: ModelDeployment, ofRole: (role: string) => boolean): ReadyEndpoint[] {
  const seen = new Set<string>();
  const endpoints: ReadyEndpoint[] = [];
  for (const replica of deployment.status?.replicas ?? []) {
    if (replica.state !== 'Ready' || !ofRole(replica.role) || !ENDPOINT.test(replica.endpoint)) continue;
    const endpoint = replica.endpoint.replace(/\/$/, '');
    if (seen.has(endpoint)) continue;
    seen.add(endpoint);
    endpoints.push({ endpoint, deployment: key, role: replica.role || 'server' });
  }
  return endpoints;
}
