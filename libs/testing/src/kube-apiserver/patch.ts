/** JSON patch (RFC 6902), JSON merge patch (RFC 7386) and an approximation of strategic merge patch. */
import { badRequest, KubeApiError } from './errors';
import { clone, isObject, jsonEqual, JsonObject } from './types';

// --- RFC 6902 -----------------------------------------------------------------------------------

interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

const unescapePointer = (s: string): string => s.replace(/~1/g, '/').replace(/~0/g, '~');

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path.slice(1).split('/').map(unescapePointer);
}

function parentOf(doc: unknown, tokens: string[], path: string): { parent: JsonObject | unknown[]; last: string } {
  let cur = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else cur = undefined;
    if (cur === undefined) throw invalidPatch(`doc is missing path: "${path}"`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw invalidPatch(`doc is missing path: "${path}"`);
  return { parent: cur, last: tokens[tokens.length - 1] };
}

const invalidPatch = (message: string): KubeApiError =>
  new KubeApiError(422, 'Invalid', `the server rejected our request due to an error in our request: ${message}`);

function getAt(doc: unknown, path: string): unknown {
  let cur = doc;
  for (const t of pointer(path)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else return undefined;
  }
  return cur;
}

function removeAt(doc: unknown, path: string): unknown {
  const { parent, last } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!(i >= 0 && i < parent.length)) throw invalidPatch(`unable to remove nonexistent key: ${last}`);
    return parent.splice(i, 1)[0];
  }
  if (!(last in parent)) throw invalidPatch(`unable to remove nonexistent key: ${last}: missing value`);
  const value = parent[last];
  delete parent[last];
  return value;
}

function addAt(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!(i >= 0 && i <= parent.length)) throw invalidPatch(`index out of range: ${last}`);
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else {
    if (replace && !(last in parent)) throw invalidPatch(`replace operation does not apply: doc is missing key: ${path}`);
    parent[last] = value;
  }
  return doc;
}

export function applyJsonPatch(doc: JsonObject, ops: unknown): JsonObject {
  if (!Array.isArray(ops)) throw badRequest('a JSON patch must be an array of operations');
  let out: unknown = clone(doc);
  for (const raw of ops as JsonPatchOp[]) {
    switch (raw.op) {
      case 'add':
        out = addAt(out, raw.path, clone(raw.value), false);
        break;
      case 'replace':
        out = addAt(out, raw.path, clone(raw.value), true);
        break;
      case 'remove':
        removeAt(out, raw.path);
        break;
      case 'move':
        out = addAt(out, raw.path, removeAt(out, raw.from ?? ''), false);
        break;
      case 'copy':
        out = addAt(out, raw.path, clone(getAt(out, raw.from ?? '')), false);
        break;
      case 'test':
        if (!jsonEqual(getAt(out, raw.path), raw.value)) throw invalidPatch(`testing value ${raw.path} failed`);
        break;
      default:
        throw badRequest(`unknown JSON patch operation ${JSON.stringify((raw as { op?: unknown }).op)}`);
    }
  }
  if (!isObject(out)) throw invalidPatch('the patched document is not an object');
  return out;
}

// --- RFC 7386 -----------------------------------------------------------------------------------

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

// --- strategic merge patch ----------------------------------------------------------------------

/**
 * Lists merged by key instead of replaced, by field name. The apiserver reads these from the Go
 * struct tags of each kind; one name-based table covers the fields gpufleet patches. `ports` is keyed
 * by `containerPort` in a container and by `port` in a Service, so the key is picked per element.
 */
const MERGE_KEYS: Record<string, string[]> = {
  containers: ['name'],
  initContainers: ['name'],
  ephemeralContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  imagePullSecrets: ['name'],
  conditions: ['type'],
  ports: ['containerPort', 'port'],
  ownerReferences: ['uid'],
  taints: ['key'],
  addresses: ['type'],
};

/** Lists of scalars merged as sets. */
const SET_LISTS = new Set(['finalizers']);

export function mergeKeyOf(field: string, element: unknown): string | undefined {
  const keys = MERGE_KEYS[field];
  if (!keys || !isObject(element)) return undefined;
  return keys.find((k) => element[k] !== undefined);
}

function sameItem(key: string, a: unknown, b: unknown): boolean {
  return isObject(a) && isObject(b) && jsonEqual(a[key], b[key]);
}

function mergeList(field: string, target: unknown, patch: unknown[]): unknown[] {
  const current = Array.isArray(target) ? clone(target) : [];
  if (SET_LISTS.has(field)) return [...current, ...patch.filter((p) => !current.some((c) => jsonEqual(c, p)))];
  if (patch.some((p) => isObject(p) && p['$patch'] === 'replace')) return patch.filter((p) => !(isObject(p) && p['$patch'] === 'replace'));
  const key = mergeKeyOf(field, patch.find(isObject));
  if (!key) return clone(patch);
  const out = current;
  for (const item of patch) {
    const i = out.findIndex((c) => sameItem(key, c, item));
    if (isObject(item) && item['$patch'] === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = strategicMerge(out[i], item);
    else out.push(strategicMerge(undefined, item));
  }
  return out;
}

/**
 * Strategic merge: maps merge, keyed lists merge by key, other lists replace, `null` deletes.
 * Directives kubectl sends (`$setElementOrder/…`, `$retainKeys`, `$deleteFromPrimitiveList/…`) are
 * honoured only as far as `$patch: delete|replace`; ordering hints are dropped.
 */
export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  if (patch['$patch'] === 'replace') {
    const { $patch: _ignored, ...rest } = patch;
    return clone(rest);
  }
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/') || k === '$retainKeys' || k === '$patch') continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const drop = Array.isArray(v) ? v : [];
      const list = out[field];
      if (Array.isArray(list)) out[field] = list.filter((x) => !drop.some((d) => jsonEqual(d, x)));
      continue;
    }
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(k, out[k], v);
    else out[k] = strategicMerge(out[k], v);
  }
  return out;
}
