import { problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';

/**
 * The JSON shape of a custom resource's spec, checked before the domain validators run: a
 * field of the wrong type, an unknown field or a second mode of a oneof is named with its path
 * (`spec.roles[0].replicas: expected an integer from 0 to 4294967295, got "3"`). Bounds that
 * mean something (at most 256 replicas) are the domain validators' (deployments-core).
 */
export type Shape =
  | { readonly kind: 'string' }
  | { readonly kind: 'int'; readonly min: number; readonly max: number }
  | { readonly kind: 'bool' }
  | { readonly kind: 'list'; readonly of: Shape }
  | { readonly kind: 'map'; readonly of: Shape }
  | { readonly kind: 'object'; readonly fields: Readonly<Record<string, Shape>>; readonly oneOf?: readonly string[] };

export const str: Shape = { kind: 'string' };
export const bool: Shape = { kind: 'bool' };
export const uint32: Shape = { kind: 'int', min: 0, max: 2 ** 32 - 1 };
export const int32: Shape = { kind: 'int', min: -(2 ** 31), max: 2 ** 31 - 1 };
export const uint64: Shape = { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER };
export const list = (of: Shape): Shape => ({ kind: 'list', of });
export const map = (of: Shape): Shape => ({ kind: 'map', of });
export const object = (fields: Record<string, Shape>, oneOf?: readonly string[]): Shape => ({ kind: 'object', fields, ...(oneOf ? { oneOf } : {}) });

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every problem of `value` against `shape`, each naming its path under `path`. Absent (undefined or null) fields are fine. */
export function checkShape(shape: Shape, value: unknown, path: string, problems: ValidationProblem[] = []): ValidationProblem[] {
  if (value === undefined || value === null) return problems;
  switch (shape.kind) {
    case 'string':
      if (typeof value !== 'string') problems.push(problem(path, 'a string', shown(value)));
      break;
    case 'bool':
      if (typeof value !== 'boolean') problems.push(problem(path, 'true or false', shown(value)));
      break;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < shape.min || value > shape.max) {
        problems.push(problem(path, `an integer from ${shape.min} to ${shape.max}`, shown(value)));
      }
      break;
    case 'list':
      if (!Array.isArray(value)) problems.push(problem(path, 'a list', shown(typeof value === 'object' ? 'an object' : value)));
      else value.forEach((item, i) => checkShape(shape.of, item, `${path}[${i}]`, problems));
      break;
    case 'map':
      if (!isRecord(value)) problems.push(problem(path, 'an object of names to values', shown(Array.isArray(value) ? 'a list' : value)));
      else for (const [k, v] of Object.entries(value)) checkShape(shape.of, v, `${path}.${k}`, problems);
      break;
    case 'object': {
      if (!isRecord(value)) {
        problems.push(problem(path, 'an object', shown(Array.isArray(value) ? 'a list' : value)));
        break;
      }
      const known = Object.keys(shape.fields);
      for (const [k, v] of Object.entries(value)) {
        const field = shape.fields[k];
        if (!field) problems.push(problem(`${path}.${k}`, `one of the fields ${known.join(', ')}`, 'an unknown field'));
        else checkShape(field, v, `${path}.${k}`, problems);
      }
      if (shape.oneOf) {
        const set = shape.oneOf.filter((k) => value[k] !== undefined && value[k] !== null);
        if (set.length > 1) problems.push(problem(path, `exactly one of ${shape.oneOf.join(', ')}`, set.join(' and ')));
      }
      break;
    }
  }
  return problems;
}

/** The domain validators name fields of the gRPC spec (`roles[0].replicas`, `name`); a custom resource has them under `spec.` and `metadata.`. */
export function resourceField(field: string): string {
  if (field === 'name' || field === 'namespace') return `metadata.${field}`;
  return field === '' ? 'spec' : `spec.${field}`;
}

export function atResource(p: ValidationProblem): ValidationProblem {
  return problem(resourceField(p.field), p.expected, p.got);
}

// Shapes shared by the kinds, after proto/gpufleet/v1 (proto3 JSON names).
export const secretKeyRef = object({ name: str, key: str });
export const podResources = object({
  accelerator: object(
    { whole: uint32, sharedTokens: uint32, slice: object({ memoryMib: uint64, memoryPercent: uint32, coresPercent: uint32 }), partitionProfile: str },
    ['whole', 'sharedTokens', 'slice', 'partitionProfile'],
  ),
  vcpu: uint32,
  memoryMib: uint64,
});
export const topology = object({ requiredLevel: str, preferredLevel: str });
