/**
 * Failures as metav1.Status, the one error shape every Kubernetes client decodes: clients branch on
 * `reason` and `code` (kubectl prints `message`; informers re-list on 410), so each helper keeps the
 * apiserver's wording.
 */

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Gone'
  | 'Expired'
  | 'Unauthorized'
  | 'MethodNotAllowed'
  | 'UnsupportedMediaType'
  | 'BadRequest'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'InternalError';

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Status {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** `pods` or `deployments.apps`: how the apiserver names a resource in its messages. */
export interface ResourceName {
  group: string;
  resource: string;
}

const qualified = (r: ResourceName): string => (r.group ? `${r.resource}.${r.group}` : r.resource);

export const notFound = (r: ResourceName, name: string): KubeApiError =>
  new KubeApiError(404, 'NotFound', `${qualified(r)} "${name}" not found`, { name, group: r.group, kind: r.resource });

export const alreadyExists = (r: ResourceName, name: string): KubeApiError =>
  new KubeApiError(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, { name, group: r.group, kind: r.resource });

export const conflict = (r: ResourceName, name: string, why: string): KubeApiError =>
  new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(r)} "${name}": ${why}`, {
    name,
    group: r.group,
    kind: r.resource,
  });

/** 422 naming each offending field, as `Kind "name" is invalid: field: message`. */
export const invalid = (kind: string, group: string, name: string, causes: StatusCause[]): KubeApiError =>
  new KubeApiError(
    422,
    'Invalid',
    `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
    { name, group, kind, causes },
  );

export const gone = (message: string): KubeApiError => new KubeApiError(410, 'Expired', message);

export const badRequest = (message: string): KubeApiError => new KubeApiError(400, 'BadRequest', message);

export const unauthorized = (): KubeApiError => new KubeApiError(401, 'Unauthorized', 'Unauthorized');

export const methodNotAllowed = (method: string): KubeApiError =>
  new KubeApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource (${method})`);

export const unsupportedMediaType = (contentType: string): KubeApiError =>
  new KubeApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got ${contentType || 'none'})`);
