/** CustomResourceDefinitions: validating a definition, its Established status, and the kinds it serves. */
import { invalid, StatusCause } from './errors';
import { PrinterColumn, ResourceKind, ScalePaths } from './kinds';
import { isObject, JsonObject, KubeObject } from './types';

export const CRD_KIND_KEY = 'apiextensions.k8s.io/customresourcedefinitions';

interface CrdVersion {
  name: string;
  served?: boolean;
  storage?: boolean;
  subresources?: { status?: JsonObject; scale?: ScalePaths };
  additionalPrinterColumns?: PrinterColumn[];
  schema?: { openAPIV3Schema?: unknown };
}

interface CrdSpec {
  group?: string;
  scope?: string;
  names?: { plural?: string; singular?: string; kind?: string; listKind?: string; shortNames?: string[]; categories?: string[] };
  versions?: CrdVersion[];
}

const specOf = (crd: KubeObject): CrdSpec => (isObject(crd['spec']) ? (crd['spec'] as CrdSpec) : {});

export function validateCrd(crd: KubeObject): void {
  const spec = specOf(crd);
  const causes: StatusCause[] = [];
  const required = (field: string, value: unknown): void => {
    if (!value) causes.push({ reason: 'FieldValueRequired', message: 'Required value', field });
  };
  required('spec.group', spec.group);
  required('spec.names.plural', spec.names?.plural);
  required('spec.names.kind', spec.names?.kind);
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') {
    causes.push({ reason: 'FieldValueNotSupported', message: `Unsupported value: "${spec.scope ?? ''}": supported values: "Cluster", "Namespaced"`, field: 'spec.scope' });
  }
  if (!spec.versions?.length) causes.push({ reason: 'FieldValueRequired', message: 'Required value: must have exactly one version marked as storage version', field: 'spec.versions' });
  else if (spec.versions.filter((v) => v.storage).length !== 1) {
    causes.push({ reason: 'FieldValueInvalid', message: 'Invalid value: must have exactly one version marked as storage version', field: 'spec.versions' });
  }
  const expected = `${spec.names?.plural}.${spec.group}`;
  if (spec.group && spec.names?.plural && crd.metadata.name !== expected) {
    causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group`, field: 'metadata.name' });
  }
  if (causes.length) throw invalid('CustomResourceDefinition', 'apiextensions.k8s.io', crd.metadata.name ?? '', causes);
}

/** The status the apiextensions controller would write: names accepted, Established at once. */
export function establish(crd: KubeObject, now: string): JsonObject {
  const spec = specOf(crd);
  const names = spec.names ?? {};
  const condition = (type: string, reason: string, message: string): JsonObject => ({ type, status: 'True', lastTransitionTime: now, reason, message });
  return {
    conditions: [condition('NamesAccepted', 'NoConflicts', 'no conflicts found'), condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted')],
    acceptedNames: { ...names, singular: names.singular ?? names.kind?.toLowerCase(), listKind: names.listKind ?? `${names.kind}List` },
    storedVersions: (spec.versions ?? []).filter((v) => v.storage).map((v) => v.name),
  };
}

export function kindsOfCrd(crd: KubeObject): ResourceKind[] {
  const spec = specOf(crd);
  const names = spec.names ?? {};
  return (spec.versions ?? [])
    .filter((v) => v.served !== false)
    .map((v) => ({
      group: spec.group ?? '',
      version: v.name,
      resource: names.plural ?? '',
      singular: names.singular ?? (names.kind ?? '').toLowerCase(),
      kind: names.kind ?? '',
      namespaced: spec.scope === 'Namespaced',
      shortNames: names.shortNames,
      categories: names.categories,
      statusSubresource: v.subresources?.status !== undefined,
      scale: v.subresources?.scale,
      custom: true,
      printerColumns: v.additionalPrinterColumns?.length ? v.additionalPrinterColumns : undefined,
      definedBy: crd.metadata.name,
      schema: v.schema?.openAPIV3Schema,
    }));
}

/**
 * Basic structural validation against openAPIV3Schema: `type`, `properties`, `items`, `required`
 * and `enum`. Formats, patterns, CEL rules and `x-kubernetes-*` extensions are not checked, and
 * unknown fields are kept rather than pruned.
 */
export function schemaErrors(schema: unknown, value: unknown, path: string): StatusCause[] {
  if (!isObject(schema) || value === undefined) return [];
  const type = schema['type'];
  const bad = (expected: string): StatusCause[] => [{ reason: 'FieldValueTypeInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${path} in body must be of type ${expected}`, field: path }];
  if (schema['x-kubernetes-int-or-string'] === true) return typeof value === 'number' || typeof value === 'string' ? [] : bad('int-or-string');
  if (value === null) return schema['nullable'] === true ? [] : bad(String(type ?? 'object'));
  if (type === 'string' && typeof value !== 'string') return bad('string');
  if (type === 'integer' && !(typeof value === 'number' && Number.isInteger(value))) return bad('integer');
  if (type === 'number' && typeof value !== 'number') return bad('number');
  if (type === 'boolean' && typeof value !== 'boolean') return bad('boolean');
  if (type === 'array' && !Array.isArray(value)) return bad('array');
  if (type === 'object' && !isObject(value)) return bad('object');
  const causes: StatusCause[] = [];
  if (Array.isArray(schema['enum']) && !schema['enum'].some((e) => e === value)) {
    causes.push({ reason: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(value)}`, field: path });
  }
  if (Array.isArray(value)) value.forEach((item, i) => causes.push(...schemaErrors(schema['items'], item, `${path}[${i}]`)));
  if (isObject(value)) {
    const props = isObject(schema['properties']) ? schema['properties'] : {};
    for (const req of Array.isArray(schema['required']) ? (schema['required'] as string[]) : []) {
      if (value[req] === undefined) causes.push({ reason: 'FieldValueRequired', message: 'Required value', field: `${path}.${req}` });
    }
    for (const [k, v] of Object.entries(value)) {
      if (path === '' && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
      const sub = props[k] ?? (isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined);
      causes.push(...schemaErrors(sub, v, path ? `${path}.${k}` : k));
    }
  }
  return causes;
}

/**
 * Structural pruning: fields the schema does not declare are removed from `value` in place and
 * returned (as `spec.foo`), unless `x-kubernetes-preserve-unknown-fields` or `additionalProperties`
 * keeps them. As in the apiserver, an `object` with no `properties` keeps nothing.
 */
export function pruneUnknownFields(schema: unknown, value: unknown, path: string): string[] {
  if (!isObject(schema) || schema['x-kubernetes-preserve-unknown-fields'] === true || schema['x-kubernetes-int-or-string'] === true) return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => pruneUnknownFields(schema['items'], item, `${path}[${i}]`));
  if (!isObject(value) || schema['type'] !== 'object') return [];
  const props = isObject(schema['properties']) ? schema['properties'] : {};
  const additional = schema['additionalProperties'];
  const unknown: string[] = [];
  for (const k of Object.keys(value)) {
    if (path === '' && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
    const child = path ? `${path}.${k}` : k;
    const sub = props[k] ?? (isObject(additional) ? additional : undefined);
    if (sub === undefined && additional !== true) {
      delete value[k];
      unknown.push(child);
    } else unknown.push(...pruneUnknownFields(sub, value[k], child));
  }
  return unknown;
}
