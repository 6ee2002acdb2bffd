/**
 * Field ownership for server-side apply, an approximation of structured-merge-diff:
 * - a field path is a list of FieldsV1 segments (`f:spec`, `k:{"name":"app"}`); only leaves are
 *   owned (a scalar, an empty map, or a list without a merge key, which is atomic);
 * - lists are keyed by the same name table strategic merge patch uses (patch.ts), not by the
 *   schema's `x-kubernetes-list-map-keys`; sets (`v:` segments) are treated as atomic lists;
 * - of metadata only labels, annotations, finalizers and ownerReferences are owned.
 */
import { mergeKeyOf } from './patch';
import { isObject, jsonEqual, JsonObject, KubeObject, ManagedFieldsEntry } from './types';

export type FieldPath = string[];

const OWNED_METADATA = ['labels', 'annotations', 'finalizers', 'ownerReferences'];

const keyOf = (p: FieldPath): string => JSON.stringify(p);
const pathOf = (k: string): FieldPath => JSON.parse(k) as FieldPath;

function walk(value: unknown, prefix: FieldPath, field: string, out: Map<string, unknown>): void {
  if (isObject(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) walk(v, [...prefix, `f:${k}`], k, out);
    return;
  }
  if (Array.isArray(value) && value.length > 0) {
    const key = mergeKeyOf(field, value[0]);
    if (key && value.every((item) => isObject(item) && item[key] !== undefined)) {
      for (const item of value as JsonObject[]) {
        const itemPrefix = [...prefix, `k:${JSON.stringify({ [key]: item[key] })}`];
        for (const [k, v] of Object.entries(item)) walk(v, [...itemPrefix, `f:${k}`], k, out);
      }
      return;
    }
  }
  out.set(keyOf(prefix), value);
}

/** Every owned leaf of an object with its value; `status` left out where it is a subresource. */
export function leafFields(obj: JsonObject, opts: { include: 'main' | 'status' | 'all' }): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    if (k === 'status' && opts.include === 'main') continue;
    if (k !== 'status' && opts.include === 'status') continue;
    if (k === 'metadata') {
      if (!isObject(v)) continue;
      for (const m of OWNED_METADATA) if (v[m] !== undefined) walk(v[m], ['f:metadata', `f:${m}`], m, out);
      continue;
    }
    walk(v, [`f:${k}`], k, out);
  }
  return out;
}

/** Resolve a field path in an object; undefined where it is absent. */
export function valueAt(obj: unknown, path: FieldPath): unknown {
  let cur = obj;
  for (const seg of path) {
    if (seg.startsWith('f:')) {
      if (!isObject(cur)) return undefined;
      cur = cur[seg.slice(2)];
    } else if (seg.startsWith('k:')) {
      if (!Array.isArray(cur)) return undefined;
      const want = JSON.parse(seg.slice(2)) as JsonObject;
      cur = cur.find((item) => isObject(item) && Object.entries(want).every(([k, v]) => jsonEqual(item[k], v)));
    } else return undefined;
  }
  return cur;
}

/** Remove a field (or keyed list item) and any map it leaves empty. */
export function removeAt(obj: JsonObject, path: FieldPath): void {
  const last = path[path.length - 1];
  const parent = valueAt(obj, path.slice(0, -1));
  if (last.startsWith('f:') && isObject(parent)) delete parent[last.slice(2)];
  if (last.startsWith('k:') && Array.isArray(parent)) {
    const i = parent.indexOf(valueAt(parent, [last]));
    if (i >= 0) parent.splice(i, 1);
  }
  // Drop the map or list the removal emptied (and, recursively, its emptied parents), never the object itself.
  const empty = (isObject(parent) && Object.keys(parent).length === 0) || (Array.isArray(parent) && parent.length === 0);
  if (empty && path.length > 1) removeAt(obj, path.slice(0, -1));
}

export function toFieldsV1(paths: Iterable<string>): JsonObject {
  const root: JsonObject = {};
  for (const key of paths) {
    let node = root;
    for (const seg of pathOf(key)) {
      if (!isObject(node[seg])) node[seg] = seg.startsWith('k:') ? { '.': {} } : {};
      node = node[seg] as JsonObject;
    }
  }
  return root;
}

export function fromFieldsV1(fields: JsonObject, prefix: FieldPath = []): string[] {
  const children = Object.keys(fields).filter((k) => k !== '.');
  if (children.length === 0) return prefix.length ? [keyOf(prefix)] : [];
  return children.flatMap((k) => (isObject(fields[k]) ? fromFieldsV1(fields[k] as JsonObject, [...prefix, k]) : []));
}

/** `.spec.containers[name="app"].image`: how kubectl shows a conflicting field. */
export function describePath(key: string): string {
  return pathOf(key)
    .map((seg) => {
      if (seg.startsWith('f:')) return `.${seg.slice(2)}`;
      const want = JSON.parse(seg.slice(2)) as JsonObject;
      return `[${Object.entries(want).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}]`;
    })
    .join('');
}

/** One owner: a manager, its operation and its subresource, with the leaves it owns. */
export interface Owner {
  manager: string;
  operation: 'Apply' | 'Update';
  subresource?: string;
  apiVersion: string;
  time: string;
  fields: Set<string>;
}

export function ownersOf(obj: KubeObject | undefined): Owner[] {
  return (obj?.metadata.managedFields ?? []).map((e) => ({
    manager: e.manager,
    operation: e.operation,
    subresource: e.subresource,
    apiVersion: e.apiVersion,
    time: e.time,
    fields: new Set(fromFieldsV1(isObject(e.fieldsV1) ? e.fieldsV1 : {})),
  }));
}

export function toManagedFields(owners: Owner[]): ManagedFieldsEntry[] {
  return owners
    .filter((o) => o.fields.size > 0)
    .map((o) => ({
      manager: o.manager,
      operation: o.operation,
      apiVersion: o.apiVersion,
      time: o.time,
      fieldsType: 'FieldsV1' as const,
      fieldsV1: toFieldsV1(o.fields),
      ...(o.subresource ? { subresource: o.subresource } : {}),
    }));
}

export const sameOwner = (a: Pick<Owner, 'manager' | 'operation' | 'subresource'>, b: Pick<Owner, 'manager' | 'operation' | 'subresource'>): boolean =>
  a.manager === b.manager && a.operation === b.operation && (a.subresource ?? '') === (b.subresource ?? '');

/** True where `owned` is `path` or an atomic ancestor of it (owning a whole list owns its items). */
export function covers(owned: string, path: string): boolean {
  if (owned === path) return true;
  const o = pathOf(owned);
  const p = pathOf(path);
  return o.length < p.length && o.every((seg, i) => seg === p[i]);
}

/**
 * After a non-apply write by `writer`: it takes the leaves whose value it changed (from every other
 * owner, with no conflict, as the apiserver does for updates), and every owner loses leaves that no
 * longer exist.
 */
export function recordUpdate(
  before: KubeObject | undefined,
  after: KubeObject,
  writer: Omit<Owner, 'fields' | 'operation'>,
  include: 'main' | 'status' | 'all',
): Owner[] {
  const owners = ownersOf(before);
  const old = before ? leafFields(before, { include }) : new Map<string, unknown>();
  const now = leafFields(after, { include });
  const changed = [...now].filter(([k, v]) => !old.has(k) || !jsonEqual(old.get(k), v)).map(([k]) => k);
  const mine = { ...writer, operation: 'Update' as const };
  let entry = owners.find((o) => sameOwner(o, mine));
  if (changed.length > 0 && !entry) owners.push((entry = { ...mine, fields: new Set() }));
  for (const o of owners) {
    for (const k of changed) if (o !== entry) o.fields.delete(k);
    if (o === entry) {
      for (const k of changed) o.fields.add(k);
      o.time = writer.time;
    }
  }
  for (const o of owners) for (const k of [...o.fields]) if (valueAt(after, pathOf(k)) === undefined) o.fields.delete(k);
  return owners;
}

export { pathOf };
