/**
 * The semantics of the REST verbs over the store: validation, defaults, metadata the server owns,
 * generation, the status subresource, optimistic concurrency, patches, finalizers, owner-reference
 * garbage collection and CRDs becoming served kinds.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { serverSideApply } from './apply';
import { CRD_KIND_KEY, establish, kindsOfCrd, pruneUnknownFields, schemaErrors, validateCrd } from './crds';
import { alreadyExists, badRequest, conflict, invalid, KubeApiError, notFound, StatusCause, unsupportedMediaType } from './errors';
import { groupVersion, KindTable, ResourceKind } from './kinds';
import { ownersOf, recordUpdate, toManagedFields } from './managed-fields';
import { applyJsonPatch, applyMergePatch, strategicMerge } from './patch';
import { fieldSelector, labelSelector } from './selectors';
import { ObjectStore } from './store';
import { clone, isObject, jsonEqual, JsonObject, KubeObject, ManagedFieldsEntry } from './types';

export const kindKeyOf = (k: Pick<ResourceKind, 'group' | 'resource'>): string => `${k.group}/${k.resource}`;
const NAMESPACES = 'namespaces';
const NAMESPACE_KEY = kindKeyOf({ group: '', resource: NAMESPACES });

export interface ListOptions {
  labelSelector?: string | null;
  fieldSelector?: string | null;
  limit?: number;
  continue?: string | null;
}

export interface KubeList {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

export interface WriteOptions {
  fieldManager?: string;
  subresource?: string;
  /** `Strict` refuses fields a CRD schema does not declare; otherwise they are pruned, as the apiserver does. */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  dryRun?: boolean;
}

export interface PatchOptions extends WriteOptions {
  force?: boolean;
}

export type PropagationPolicy = 'Background' | 'Foreground' | 'Orphan';

/** Seconds-precision RFC 3339, as metav1.Time serialises. */
export const timestamp = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export class KubeResources {
  private nextClusterIp = 1;
  private nextNodePort = 0;
  /** Deletions waiting on finalizers remember how their dependents are to be treated. */
  private readonly pendingPolicy = new Map<string, PropagationPolicy>();

  constructor(
    readonly store: ObjectStore,
    readonly kinds: KindTable,
    private readonly now: () => Date = () => new Date(),
  ) {}

  // --- reads --------------------------------------------------------------------------------------

  get(kind: ResourceKind, namespace: string | undefined, name: string): KubeObject {
    const obj = this.store.get(kindKeyOf(kind), this.scope(kind, namespace), name);
    if (!obj) throw notFound(kind, name);
    return this.present(kind, obj);
  }

  list(kind: ResourceKind, namespace: string | undefined, opts: ListOptions = {}): KubeList {
    const labels = labelSelector(opts.labelSelector);
    const fields = fieldSelector(opts.fieldSelector);
    let items = this.store.list(kindKeyOf(kind), kind.namespaced ? namespace : undefined).filter((o) => labels(o) && fields(o));
    const resourceVersion = String(this.store.resourceVersion);
    if (opts.continue) {
      const after = decodeContinue(opts.continue);
      items = items.filter((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}` > after);
    }
    const metadata: KubeList['metadata'] = { resourceVersion };
    if (opts.limit && opts.limit > 0 && items.length > opts.limit) {
      const last = items[opts.limit - 1];
      metadata.remainingItemCount = items.length - opts.limit;
      metadata.continue = Buffer.from(JSON.stringify({ after: `${last.metadata.namespace ?? ''}/${last.metadata.name}` })).toString('base64url');
      items = items.slice(0, opts.limit);
    }
    return { apiVersion: groupVersion(kind), kind: `${kind.kind}List`, metadata, items: items.map((o) => this.present(kind, o)) };
  }

  // --- writes -------------------------------------------------------------------------------------

  create(kind: ResourceKind, namespace: string | undefined, body: unknown, opts: WriteOptions = {}): KubeObject {
    return this.createObject(kind, namespace, body, opts);
  }

  /** `managed`: ownership already computed by server-side apply, kept instead of an Update entry. */
  private createObject(kind: ResourceKind, namespace: string | undefined, body: unknown, opts: WriteOptions, managed?: ManagedFieldsEntry[]): KubeObject {
    if (opts.subresource === 'binding') return this.bind(kind, namespace, body);
    if (opts.subresource) throw badRequest(`cannot create the subresource ${opts.subresource}`);
    const obj = this.decode(kind, body, namespace);
    const meta = obj.metadata;
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomBytes(4).toString('hex').slice(0, 5);
    this.validate(kind, obj, opts);
    this.requireNamespace(kind, meta.namespace);
    if (this.store.get(kindKeyOf(kind), meta.namespace, meta.name ?? '')) throw alreadyExists(kind, meta.name ?? '');
    const now = timestamp(this.now());
    obj.metadata = {
      ...meta,
      uid: randomUUID(),
      creationTimestamp: now,
      generation: 1,
      resourceVersion: undefined,
      deletionTimestamp: undefined,
      managedFields: undefined,
    };
    if (kind.custom && kind.statusSubresource) delete obj['status'];
    this.applyDefaults(kind, obj, undefined);
    obj.metadata.managedFields =
      managed ?? toManagedFields(recordUpdate(undefined, obj, { manager: opts.fieldManager ?? 'unknown', apiVersion: groupVersion(kind), time: now }, 'all'));
    return this.commit(kind, undefined, obj, opts);
  }

  update(kind: ResourceKind, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions = {}): KubeObject {
    if (opts.subresource === 'scale') return this.writeScale(kind, namespace, name, body, opts);
    const existing = this.stored(kind, namespace, name);
    const obj = this.decode(kind, body, namespace);
    if (obj.metadata.name !== name) {
      throw badRequest(`the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${name})`);
    }
    this.checkResourceVersion(kind, existing, obj);
    const next = this.merge(kind, existing, obj, opts.subresource);
    const include = opts.subresource === 'status' ? 'status' : kind.statusSubresource ? 'main' : 'all';
    const owners = recordUpdate(existing, next, { manager: opts.fieldManager ?? 'unknown', apiVersion: groupVersion(kind), time: timestamp(this.now()), subresource: opts.subresource }, include);
    next.metadata.managedFields = toManagedFields(owners);
    return this.commit(kind, existing, next, opts);
  }

  patch(kind: ResourceKind, namespace: string | undefined, name: string, contentType: string, raw: string, opts: PatchOptions = {}): KubeObject {
    const type = contentType.split(';')[0].trim();
    const existing = this.store.get(kindKeyOf(kind), this.scope(kind, namespace), name);
    if (type === 'application/apply-patch+yaml') return this.apply(kind, namespace, name, existing, raw, opts);
    if (!existing) throw notFound(kind, name);
    const body = parseBody(raw, 'application/json');
    // A patch to /scale is a patch of the Scale object, whose replicas are then written back.
    const target = opts.subresource === 'scale' ? this.scaleOf(kind, existing) : existing;
    let patched: unknown;
    switch (type) {
      case 'application/json-patch+json':
        patched = applyJsonPatch(target, body);
        break;
      case 'application/merge-patch+json':
        patched = applyMergePatch(target, body);
        break;
      case 'application/strategic-merge-patch+json':
        if (kind.custom && opts.subresource !== 'scale') throw unsupportedMediaType(`${type} (strategic merge patch is not supported for custom resources)`);
        patched = strategicMerge(target, body);
        break;
      default:
        throw unsupportedMediaType(contentType);
    }
    return this.update(kind, namespace, name, patched, opts);
  }

  private apply(kind: ResourceKind, namespace: string | undefined, name: string, existing: KubeObject | undefined, raw: string, opts: PatchOptions): KubeObject {
    if (!opts.fieldManager) throw badRequest('PATCH requests with apply-patch+yaml content type require fieldManager; it is required for apply requests');
    const applied = this.decode(kind, parseBody(raw, 'application/yaml'), namespace);
    if (applied.metadata.name !== name) {
      throw badRequest(`the name of the object (${applied.metadata.name ?? ''}) does not match the name on the URL (${name})`);
    }
    this.validate(kind, applied, opts);
    if (existing) this.checkResourceVersion(kind, existing, applied);
    const include = opts.subresource === 'status' ? 'status' : kind.statusSubresource ? 'main' : 'all';
    const now = timestamp(this.now());
    const merged = serverSideApply(existing, applied, {
      manager: opts.fieldManager,
      force: opts.force === true,
      apiVersion: groupVersion(kind),
      include,
      subresource: opts.subresource,
      time: now,
      resource: kind,
    });
    if (!existing) {
      // Apply to an absent object creates it, owned by the applier alone.
      return this.createObject(kind, namespace, merged, opts, merged.metadata.managedFields ?? []);
    }
    const next = this.merge(kind, existing, merged, opts.subresource);
    next.metadata.managedFields = merged.metadata.managedFields;
    return this.commit(kind, existing, next, opts);
  }

  getScale(kind: ResourceKind, namespace: string | undefined, name: string): KubeObject {
    return this.scaleOf(kind, this.stored(kind, namespace, name));
  }

  /** autoscaling/v1 Scale, what `kubectl scale` and autoscalers read and write. */
  private scaleOf(kind: ResourceKind, obj: KubeObject): KubeObject {
    const paths = kind.scale;
    if (!paths) throw notFound(kind, `${obj.metadata.name}/scale`);
    let selector = paths.labelSelectorPath ? evaluatePath(obj, paths.labelSelectorPath) : undefined;
    if (!paths.labelSelectorPath) {
      const matchLabels = evaluatePath(obj, '.spec.selector.matchLabels');
      selector = isObject(matchLabels) ? Object.entries(matchLabels).map(([k, v]) => `${k}=${String(v)}`).join(',') : undefined;
    }
    const { name, namespace, uid, resourceVersion, creationTimestamp } = obj.metadata;
    return {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
      spec: { replicas: evaluatePath(obj, paths.specReplicasPath) ?? 0 },
      status: { replicas: evaluatePath(obj, paths.statusReplicasPath) ?? 0, ...(typeof selector === 'string' ? { selector } : {}) },
    };
  }

  private writeScale(kind: ResourceKind, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions): KubeObject {
    const existing = this.stored(kind, namespace, name);
    const scale = isObject(body) ? body : {};
    const replicas = isObject(scale['spec']) ? scale['spec']['replicas'] : undefined;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw invalid('Scale', 'autoscaling', name, [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(replicas)}: must be a non-negative integer`, field: 'spec.replicas' }]);
    }
    const meta = isObject(scale['metadata']) ? scale['metadata'] : {};
    if (meta['resourceVersion'] && meta['resourceVersion'] !== existing.metadata.resourceVersion) {
      throw conflict(kind, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const next = clone(existing);
    setPath(next, kind.scale?.specReplicasPath ?? '.spec.replicas', replicas);
    return this.scaleOf(kind, this.update(kind, namespace, name, next, { ...opts, subresource: undefined }));
  }

  delete(kind: ResourceKind, namespace: string | undefined, name: string, policy: PropagationPolicy = 'Background'): KubeObject {
    const existing = this.stored(kind, namespace, name);
    return this.present(kind, this.deleteObject(kind, existing, policy));
  }

  deleteCollection(kind: ResourceKind, namespace: string | undefined, opts: ListOptions, policy: PropagationPolicy = 'Background'): KubeList {
    const list = this.list(kind, namespace, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    list.items = list.items.map((o) => this.present(kind, this.deleteObject(kind, o, policy)));
    return list;
  }

  // --- internals ----------------------------------------------------------------------------------

  private scope(kind: ResourceKind, namespace: string | undefined): string | undefined {
    return kind.namespaced ? namespace : undefined;
  }

  private stored(kind: ResourceKind, namespace: string | undefined, name: string): KubeObject {
    const obj = this.store.get(kindKeyOf(kind), this.scope(kind, namespace), name);
    if (!obj) throw notFound(kind, name);
    return obj;
  }

  /** Objects are stored once per group/resource; each read carries the version it was asked in. */
  present(kind: ResourceKind, obj: KubeObject): KubeObject {
    return { ...obj, apiVersion: groupVersion(kind), kind: kind.kind };
  }

  private decode(kind: ResourceKind, body: unknown, namespace: string | undefined): KubeObject {
    if (!isObject(body)) throw badRequest('the request body is not a JSON object');
    const obj = clone(body) as KubeObject;
    const causes: StatusCause[] = [];
    if (obj.apiVersion === undefined) obj.apiVersion = groupVersion(kind);
    if (obj.kind === undefined) obj.kind = kind.kind;
    if (obj.apiVersion !== groupVersion(kind)) {
      causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${obj.apiVersion}": must be ${groupVersion(kind)}`, field: 'apiVersion' });
    }
    if (obj.kind !== kind.kind) causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${obj.kind}": must be ${kind.kind}`, field: 'kind' });
    if (!isObject(obj.metadata)) obj.metadata = {};
    if (causes.length) throw invalid(kind.kind, kind.group, obj.metadata.name ?? '', causes);
    if (kind.namespaced) {
      if (obj.metadata.namespace && namespace && obj.metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      obj.metadata.namespace = namespace ?? obj.metadata.namespace ?? 'default';
    } else delete obj.metadata.namespace;
    return obj;
  }

  /** Checks the object as it will be stored; prunes (or, under Strict, refuses) undeclared CRD fields. */
  private validate(kind: ResourceKind, obj: KubeObject, opts: WriteOptions): void {
    if (kind.schema) {
      const unknown = pruneUnknownFields(kind.schema, obj, '');
      if (unknown.length && opts.fieldValidation === 'Strict') {
        throw badRequest(`${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`);
      }
    }
    const causes: StatusCause[] = [];
    const name = obj.metadata.name;
    if (!name) causes.push({ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' });
    else if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
      causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`, field: 'metadata.name' });
    }
    for (const field of ['labels', 'annotations'] as const) {
      const map = obj.metadata[field];
      if (map === undefined) continue;
      if (!isObject(map) || Object.values(map).some((v) => typeof v !== 'string')) {
        causes.push({ reason: 'FieldValueTypeInvalid', message: 'Invalid value: must be a map of strings', field: `metadata.${field}` });
      }
    }
    if (kind.schema) causes.push(...schemaErrors(kind.schema, obj, ''));
    if (causes.length) throw invalid(kind.kind, kind.group, name ?? '', causes);
    if (kindKeyOf(kind) === CRD_KIND_KEY) validateCrd(obj);
  }

  private requireNamespace(kind: ResourceKind, namespace: string | undefined): void {
    if (!kind.namespaced || !namespace) return;
    if (!this.store.get(NAMESPACE_KEY, undefined, namespace)) throw notFound({ group: '', resource: NAMESPACES }, namespace);
  }

  private checkResourceVersion(kind: ResourceKind, existing: KubeObject, obj: KubeObject): void {
    const rv = obj.metadata.resourceVersion;
    if (rv && rv !== existing.metadata.resourceVersion) {
      throw conflict(kind, existing.metadata.name ?? '', 'the object has been modified; please apply your changes to the latest version and try again');
    }
  }

  /**
   * The stored object after a write: server-owned metadata kept, status taken from the write only
   * on `/status` (and then nothing else), and from the stored object on the main resource of a
   * kind with a status subresource.
   */
  private merge(kind: ResourceKind, existing: KubeObject, incoming: KubeObject, subresource: string | undefined): KubeObject {
    let next: KubeObject;
    if (subresource === 'status') {
      next = clone(existing);
      if (incoming['status'] === undefined) delete next['status'];
      else next['status'] = clone(incoming['status']);
    } else if (subresource) {
      throw notFound(kind, `${existing.metadata.name}/${subresource}`);
    } else {
      next = clone(incoming);
      if (kind.statusSubresource) {
        if (existing['status'] === undefined) delete next['status'];
        else next['status'] = clone(existing['status']);
      }
    }
    const keep = ['name', 'namespace', 'uid', 'creationTimestamp', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'resourceVersion', 'managedFields'] as const;
    for (const k of keep) {
      if (existing.metadata[k] === undefined) delete next.metadata[k];
      else next.metadata[k] = clone(existing.metadata[k]) as never;
    }
    // Once deletion began, finalizers may only be removed, never added.
    if (existing.metadata.deletionTimestamp) {
      const before = existing.metadata.finalizers ?? [];
      next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => before.includes(f));
      if (next.metadata.finalizers.length === 0) delete next.metadata.finalizers;
    }
    this.applyDefaults(kind, next, existing);
    return next;
  }

  /** Write `next` unless nothing changed; bump generation on a change outside metadata and status. */
  private commit(kind: ResourceKind, existing: KubeObject | undefined, next: KubeObject, opts: WriteOptions): KubeObject {
    if (existing) this.validate(kind, next, opts);
    if (kindKeyOf(kind) === CRD_KIND_KEY) next['status'] = establish(next, establishedSince(existing) ?? timestamp(this.now()));
    if (existing) {
      const { metadata: _m, status: _s, ...spec } = next;
      const { metadata: _em, status: _es, ...oldSpec } = existing;
      if (!jsonEqual(spec, oldSpec)) next.metadata.generation = (existing.metadata.generation ?? 1) + 1;
      if (jsonEqual(withoutTimes(next), withoutTimes(existing))) return this.present(kind, existing);
    }
    if (opts.dryRun) return this.present(kind, next);
    if (existing?.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      const policy = this.pendingPolicy.get(next.metadata.uid ?? '') ?? 'Background';
      this.store.write(kindKeyOf(kind), next);
      return this.present(kind, this.deleteObject(kind, next, policy));
    }
    const stored = this.store.write(kindKeyOf(kind), next);
    if (kindKeyOf(kind) === CRD_KIND_KEY) this.serveCrd(stored);
    return this.present(kind, stored);
  }

  private applyDefaults(kind: ResourceKind, obj: KubeObject, existing: KubeObject | undefined): void {
    const spec = (isObject(obj['spec']) ? obj['spec'] : undefined) as JsonObject | undefined;
    switch (kindKeyOf(kind)) {
      case NAMESPACE_KEY:
        if (!existing) obj['status'] = { phase: 'Active', ...(isObject(obj['status']) ? obj['status'] : {}) };
        break;
      case '/pods':
        if (!existing && obj['status'] === undefined) obj['status'] = { phase: 'Pending', qosClass: 'BestEffort' };
        for (const c of [...asList(spec?.['containers']), ...asList(spec?.['initContainers'])]) for (const p of asList(c['ports'])) p['protocol'] ??= 'TCP';
        break;
      case '/services':
        if (spec && spec['type'] !== 'ExternalName') {
          spec['type'] ??= 'ClusterIP';
          for (const p of asList(spec['ports'])) p['protocol'] ??= 'TCP';
          if (spec['clusterIP'] === undefined) {
            const previous = existing && isObject(existing['spec']) ? existing['spec']['clusterIP'] : undefined;
            spec['clusterIP'] = previous ?? `10.96.${Math.floor(this.nextClusterIp / 250)}.${(this.nextClusterIp++ % 250) + 1}`;
            spec['clusterIPs'] = [spec['clusterIP']];
          }
          if (spec['type'] === 'NodePort' || spec['type'] === 'LoadBalancer') {
            // As kube-apiserver: a port without a nodePort keeps the one it had, else gets the next of 30000-32767.
            const before = existing && isObject(existing['spec']) ? asList(existing['spec']['ports']) : [];
            for (const p of asList(spec['ports'])) {
              if (p['nodePort'] !== undefined) continue;
              const kept = before.find((b) => b['port'] === p['port'] && (b['protocol'] ?? 'TCP') === p['protocol'])?.['nodePort'];
              p['nodePort'] = kept ?? 30000 + (this.nextNodePort++ % 2768);
            }
          } else {
            for (const p of asList(spec['ports'])) delete p['nodePort'];
          }
        }
        break;
      case '/secrets':
        obj['type'] ??= 'Opaque';
        break;
      case 'apps/deployments':
      case 'apps/statefulsets':
      case 'apps/daemonsets': {
        if (spec && kind.resource !== 'daemonsets') spec['replicas'] ??= 1;
        const template = spec && isObject(spec['template']) && isObject(spec['template']['spec']) ? spec['template']['spec'] : undefined;
        for (const c of [...asList(template?.['containers']), ...asList(template?.['initContainers'])]) for (const p of asList(c['ports'])) p['protocol'] ??= 'TCP';
        break;
      }
    }
  }

  /** `pods/<name>/binding`: what the scheduler does to place a pod. */
  private bind(kind: ResourceKind, namespace: string | undefined, body: unknown): KubeObject {
    const binding = isObject(body) ? body : {};
    const meta = isObject(binding['metadata']) ? binding['metadata'] : {};
    const target = isObject(binding['target']) ? binding['target'] : {};
    const pod = this.stored(kind, namespace, String(meta['name'] ?? ''));
    const spec = (isObject(pod['spec']) ? pod['spec'] : (pod['spec'] = {})) as JsonObject;
    if (spec['nodeName']) throw conflict(kind, pod.metadata.name ?? '', `pod ${pod.metadata.name} is already assigned to node "${spec['nodeName']}"`);
    spec['nodeName'] = target['name'];
    const status = (isObject(pod['status']) ? pod['status'] : (pod['status'] = {})) as JsonObject;
    const conditions = (Array.isArray(status['conditions']) ? status['conditions'] : []).filter((c) => !(isObject(c) && c['type'] === 'PodScheduled'));
    status['conditions'] = [...conditions, { type: 'PodScheduled', status: 'True', lastTransitionTime: timestamp(this.now()) }];
    this.store.write(kindKeyOf(kind), pod);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 } as unknown as KubeObject;
  }

  private serveCrd(crd: KubeObject): void {
    this.kinds.removeDefinedBy(crd.metadata.name ?? '');
    for (const k of kindsOfCrd(crd)) this.kinds.add(k);
  }

  /** Delete now, or mark for deletion while finalizers remain; then collect what it owned. */
  private deleteObject(kind: ResourceKind, obj: KubeObject, policy: PropagationPolicy): KubeObject {
    if (obj.metadata.finalizers?.length) {
      if (obj.metadata.deletionTimestamp) return obj;
      const marked = clone(obj);
      marked.metadata.deletionTimestamp = timestamp(this.now());
      marked.metadata.deletionGracePeriodSeconds = 0;
      this.pendingPolicy.set(obj.metadata.uid ?? '', policy);
      return this.store.write(kindKeyOf(kind), marked);
    }
    if (kindKeyOf(kind) === NAMESPACE_KEY) this.emptyNamespace(obj.metadata.name ?? '');
    const removed = this.store.remove(kindKeyOf(kind), obj) ?? obj;
    this.pendingPolicy.delete(obj.metadata.uid ?? '');
    if (kindKeyOf(kind) === CRD_KIND_KEY) {
      for (const k of this.kinds.removeDefinedBy(obj.metadata.name ?? '')) {
        for (const o of this.store.list(kindKeyOf(k))) this.store.remove(kindKeyOf(k), o);
      }
    }
    this.collectDependents(removed.metadata.uid ?? '', policy);
    return removed;
  }

  private emptyNamespace(namespace: string): void {
    for (const { kindKey, object } of this.store.entries()) {
      if (object.metadata.namespace !== namespace) continue;
      const kind = this.kinds.all().find((k) => kindKeyOf(k) === kindKey);
      if (kind) this.deleteObject(kind, { ...object, metadata: { ...object.metadata, finalizers: undefined } }, 'Background');
    }
  }

  /**
   * Owner-reference garbage collection, run synchronously where the real collector runs a moment
   * later: a dependent none of whose owners remain is deleted (or, under Orphan, released).
   */
  private collectDependents(ownerUid: string, policy: PropagationPolicy): void {
    if (!ownerUid) return;
    const all = this.store.entries();
    const liveUids = new Set(all.map((e) => e.object.metadata.uid));
    for (const { kindKey, object } of all) {
      const refs = object.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === ownerUid)) continue;
      const kind = this.kinds.all().find((k) => kindKeyOf(k) === kindKey);
      if (!kind) continue;
      const remaining = refs.filter((r) => r.uid !== ownerUid);
      const current = this.store.get(kindKey, object.metadata.namespace, object.metadata.name ?? '');
      if (!current) continue;
      if (policy === 'Orphan' || remaining.some((r) => liveUids.has(r.uid))) {
        current.metadata.ownerReferences = remaining.length ? remaining : undefined;
        if (!remaining.length) delete current.metadata.ownerReferences;
        this.store.write(kindKey, current);
      } else {
        this.deleteObject(kind, current, 'Background');
      }
    }
  }
}

/** `.spec.replicas`-style paths, as CRD scale subresources declare them. */
function evaluatePath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const part of path.replace(/^\./, '').split('.')) cur = isObject(cur) ? cur[part] : undefined;
  return cur;
}

function setPath(obj: JsonObject, path: string, value: unknown): void {
  const parts = path.replace(/^\./, '').split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(cur[part])) cur[part] = {};
    cur = cur[part] as JsonObject;
  }
  cur[parts[parts.length - 1]] = value;
}

const asList = (v: unknown): JsonObject[] => (Array.isArray(v) ? v.filter(isObject) : []);

function establishedSince(crd: KubeObject | undefined): string | undefined {
  const status = crd?.['status'];
  const conditions = isObject(status) && Array.isArray(status['conditions']) ? status['conditions'] : [];
  const established = conditions.find((c) => isObject(c) && c['type'] === 'Established');
  return isObject(established) && typeof established['lastTransitionTime'] === 'string' ? established['lastTransitionTime'] : undefined;
}

function withoutTimes(obj: KubeObject): unknown {
  const copy = clone(obj);
  copy.metadata.managedFields = ownersOf(obj).map((o) => ({ ...o, time: '', fields: [...o.fields].sort() })) as never;
  delete copy.metadata.resourceVersion;
  return copy;
}

function decodeContinue(token: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string') return parsed.after;
  } catch {
    // fall through to the error below
  }
  throw badRequest(`invalid continue token ${JSON.stringify(token)}`);
}

/** JSON bodies, or YAML (a superset) where the client sent YAML or an apply patch. */
export function parseBody(raw: string, contentType: string): unknown {
  try {
    return contentType.includes('yaml') ? parseYaml(raw) : JSON.parse(raw);
  } catch (err) {
    throw new KubeApiError(400, 'BadRequest', `the request body could not be decoded: ${(err as Error).message}`);
  }
}
