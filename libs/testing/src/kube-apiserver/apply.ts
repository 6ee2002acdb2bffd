/** Server-side apply (`application/apply-patch+yaml`) over the ownership model of managed-fields.ts. */
import { conflict, KubeApiError, ResourceName } from './errors';
import { covers, describePath, leafFields, Owner, ownersOf, pathOf, removeAt, sameOwner, toManagedFields, valueAt } from './managed-fields';
import { strategicMerge } from './patch';
import { clone, jsonEqual, JsonObject, KubeObject } from './types';

export interface ApplyRequest {
  manager: string;
  force: boolean;
  apiVersion: string;
  /** `main` for the resource of a kind with a status subresource, `status` for `/status`. */
  include: 'main' | 'status' | 'all';
  subresource?: string;
  time: string;
  resource: ResourceName;
}

function conflictError(req: ApplyRequest, name: string, found: { manager: string; apiVersion: string; key: string }[]): KubeApiError {
  const byManager = new Map<string, string[]>();
  for (const f of found) byManager.set(`"${f.manager}" using ${f.apiVersion}`, [...(byManager.get(`"${f.manager}" using ${f.apiVersion}`) ?? []), describePath(f.key)]);
  const parts = [...byManager].map(([who, fields]) => (fields.length === 1 ? `conflict with ${who}: ${fields[0]}` : `conflicts with ${who}:\n- ${fields.join('\n- ')}`));
  const n = found.length;
  const err = conflict(req.resource, name, '');
  return new KubeApiError(409, 'Conflict', `Apply failed with ${n} conflict${n === 1 ? '' : 's'}: ${parts.join('\n')}`, {
    ...err.details,
    causes: found.map((f) => ({ reason: 'FieldManagerConflict', message: `conflict with "${f.manager}" using ${f.apiVersion}`, field: describePath(f.key) })),
  });
}

/**
 * The object after `applied` is applied by `req.manager` to `current` (undefined: create). Fields the
 * manager applied before and omits now are removed unless another manager also owns them; fields
 * another manager owns with a different value are conflicts, taken over when `force` is set.
 */
export function serverSideApply(current: KubeObject | undefined, applied: KubeObject, req: ApplyRequest): KubeObject {
  const wanted = leafFields(applied, { include: req.include });
  const owners = ownersOf(current);
  const me: Owner = owners.find((o) => sameOwner(o, { manager: req.manager, operation: 'Apply', subresource: req.subresource })) ?? {
    manager: req.manager,
    operation: 'Apply',
    subresource: req.subresource,
    apiVersion: req.apiVersion,
    time: req.time,
    fields: new Set(),
  };
  if (!owners.includes(me)) owners.push(me);

  const found: { owner: Owner; manager: string; apiVersion: string; key: string; owned: string }[] = [];
  for (const owner of owners) {
    if (owner === me) continue;
    for (const owned of owner.fields) {
      for (const [key, value] of wanted) {
        if (covers(owned, key) && !jsonEqual(valueAt(current, pathOf(key)), value)) {
          found.push({ owner, manager: owner.manager, apiVersion: owner.apiVersion, key, owned });
        }
      }
    }
  }
  if (found.length > 0 && !req.force) throw conflictError(req, applied.metadata.name ?? '', found);
  for (const f of found) f.owner.fields.delete(f.owned);

  const identity = { name: applied.metadata.name, ...(applied.metadata.namespace ? { namespace: applied.metadata.namespace } : {}) };
  const base = clone(current ?? ({ apiVersion: applied.apiVersion, kind: applied.kind, metadata: identity } as KubeObject)) as JsonObject;
  // A dropped leaf goes unless someone still holds it, a part of it, or a whole that contains it.
  const related = (a: string, b: string): boolean => covers(a, b) || covers(b, a);
  for (const key of me.fields) {
    if (wanted.has(key) || [...wanted.keys()].some((w) => covers(key, w))) continue;
    if (owners.some((o) => o !== me && [...o.fields].some((owned) => related(owned, key)))) continue;
    removeAt(base, pathOf(key));
  }

  // What is merged in: status alone for `/status`, everything but status for the main resource.
  const patch = clone(applied) as JsonObject;
  if (req.include === 'main') delete patch['status'];
  if (req.include === 'status') {
    for (const k of Object.keys(patch)) if (k !== 'status') delete patch[k];
  }
  const metadata = patch['metadata'] as JsonObject | undefined;
  if (metadata) {
    for (const k of Object.keys(metadata)) if (!['labels', 'annotations', 'finalizers', 'ownerReferences'].includes(k)) delete metadata[k];
  }
  const merged = strategicMerge(base, patch) as KubeObject;

  me.fields = new Set(wanted.keys());
  me.time = req.time;
  me.apiVersion = req.apiVersion;
  for (const o of owners) for (const k of [...o.fields]) if (valueAt(merged, pathOf(k)) === undefined) o.fields.delete(k);
  merged.metadata.managedFields = toManagedFields(owners);
  return merged;
}
