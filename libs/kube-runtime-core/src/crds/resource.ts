import type { V1ObjectMeta } from '@kubernetes/client-node';
import { describeProblems, problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';

export const GPUFLEET_GROUP = 'gpufleet.io';
export const GPUFLEET_VERSION = 'v1';

/** A custom resource of group gpufleet.io, version v1, as the API server returns it. */
export interface CustomResource<K extends string, S, T> {
  apiVersion: string;
  kind: K;
  metadata: V1ObjectMeta;
  spec: S;
  status?: T;
}

/** A conversion's answer: the value, or every problem at once, each naming its field. */
export type Converted<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: readonly ValidationProblem[]; readonly message: string };

export function converted<T>(value: T, problems: readonly ValidationProblem[]): Converted<T> {
  if (problems.length === 0) return { ok: true, value };
  return { ok: false, problems, message: `INVALID_ARGUMENT: ${describeProblems(problems)}` };
}

/** apiVersion, kind and the metadata a namespaced (or cluster-scoped) resource must carry. */
export function checkEnvelope(resource: { apiVersion?: unknown; kind?: unknown; metadata?: V1ObjectMeta; spec?: unknown }, kind: string, namespaced: boolean): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const apiVersion = `${GPUFLEET_GROUP}/${GPUFLEET_VERSION}`;
  if (resource.apiVersion !== apiVersion) problems.push(problem('apiVersion', apiVersion, shown(resource.apiVersion)));
  if (resource.kind !== kind) problems.push(problem('kind', kind, shown(resource.kind)));
  if (!resource.metadata?.name) problems.push(problem('metadata.name', 'a name', 'none'));
  if (namespaced && !resource.metadata?.namespace) problems.push(problem('metadata.namespace', 'a namespace (the kind is namespaced)', 'none'));
  if (typeof resource.spec !== 'object' || resource.spec === null || Array.isArray(resource.spec)) problems.push(problem('spec', 'an object', shown(resource.spec)));
  return problems;
}

/** `DEPLOYMENT_PHASE_READY` → `Ready`: a resource's phase as kubectl users read it. */
export function phaseName(value: string, prefix: string): string {
  const rest = value.startsWith(prefix) ? value.slice(prefix.length) : value;
  if (rest === 'UNSPECIFIED' || rest === '') return '';
  return rest
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** The inverse of phaseName for an enum's values; undefined for a name that is none of them. */
export function phaseValue<E extends string>(name: string, prefix: string, values: readonly E[]): E | undefined {
  return values.find((v) => phaseName(v, prefix) === name);
}

/** proto3 JSON of a message without the fields the metadata carries. */
export function withoutKeys(json: unknown, keys: readonly string[]): Record<string, unknown> {
  const out = { ...(json as Record<string, unknown>) };
  for (const k of keys) delete out[k];
  return out;
}
