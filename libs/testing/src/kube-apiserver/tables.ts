/**
 * `meta.k8s.io/v1 Table`, what `kubectl get` asks for: the server, not kubectl, chooses columns and
 * renders cells, so each kind's printer lives here. Columns with priority 1 show only in `-o wide`.
 */
import { PrinterColumn, ResourceKind } from './kinds';
import { isObject, JsonObject, KubeObject } from './types';

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: TableColumn[];
  rows: { cells: unknown[]; object: unknown }[];
}

/** The apiserver's duration.HumanDuration: `45s`, `5m30s`, `3h`, `2d5h`, `400d`. */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return h % 24 === 0 ? `${Math.floor(h / 24)}d` : `${Math.floor(h / 24)}d${h % 24}h`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24)}d`;
  return `${Math.floor(h / 24 / 365)}y`;
}

/**
 * The JSONPath subset printer columns use: `.a.b`, `.a[0].b`, `.a[*].b`, and filters such as
 * `.status.conditions[?(@.type=="Ready")].status`. Several matches render comma-separated.
 */
export function evaluateJsonPath(obj: unknown, expr: string): unknown[] {
  const path = expr.trim().replace(/^\{/, '').replace(/\}$/, '').replace(/^\$/, '');
  const tokens = path.match(/\.[^.[\]]+|\[[^\]]*\]/g) ?? [];
  let current: unknown[] = [obj];
  for (const token of tokens) {
    const next: unknown[] = [];
    for (const value of current) {
      if (token.startsWith('.')) {
        if (isObject(value) && value[token.slice(1)] !== undefined) next.push(value[token.slice(1)]);
        continue;
      }
      const inner = token.slice(1, -1);
      if (!Array.isArray(value)) continue;
      const filter = /^\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)$/.exec(inner);
      if (inner === '*') next.push(...value);
      else if (filter) next.push(...value.filter((item) => evaluateJsonPath(item, `.${filter[1]}`)[0] === filter[2]));
      else if (/^-?\d+$/.test(inner)) {
        const i = Number(inner);
        const item = value[i < 0 ? value.length + i : i];
        if (item !== undefined) next.push(item);
      }
    }
    current = next;
  }
  return current;
}

function cellOf(column: PrinterColumn, obj: KubeObject, now: number): unknown {
  const values = evaluateJsonPath(obj, column.jsonPath);
  if (values.length === 0) return column.type === 'date' ? '<unknown>' : null;
  // A date renders as an age, unless the column asks for the timestamp itself (CRDs' "Created At").
  if (column.type === 'date' && typeof values[0] === 'string' && column.format !== 'date-time') return humanDuration(now - Date.parse(values[0]));
  if (values.length === 1 && !isObject(values[0]) && !Array.isArray(values[0])) return values[0];
  return values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',');
}

const column = (name: string, type = 'string', priority = 0, format = ''): TableColumn => ({ name, type, format, description: name, priority });

const nameColumn: TableColumn = { ...column('Name', 'string', 0, 'name'), description: 'Name must be unique within a namespace.' };
const ageColumn = column('Age', 'string');

type Printer = { columns: TableColumn[]; cells: (obj: KubeObject, age: string) => unknown[] };

const get = (obj: unknown, path: string): unknown => evaluateJsonPath(obj, path)[0];
const list = (obj: unknown, path: string): JsonObject[] => {
  const v = get(obj, path);
  return Array.isArray(v) ? v.filter(isObject) : [];
};
const orNone = (v: unknown): string => (v === undefined || v === null || v === '' ? '<none>' : String(v));

function podStatus(pod: KubeObject): string {
  if (pod.metadata.deletionTimestamp) return 'Terminating';
  for (const cs of list(pod, '.status.containerStatuses')) {
    const waiting = get(cs, '.state.waiting.reason');
    if (typeof waiting === 'string') return waiting;
    const terminated = get(cs, '.state.terminated.reason');
    if (typeof terminated === 'string' && get(pod, '.status.phase') === 'Running') return terminated;
  }
  return String(get(pod, '.status.reason') ?? get(pod, '.status.phase') ?? 'Pending');
}

function nodeStatus(node: KubeObject): string {
  const ready = list(node, '.status.conditions').find((c) => c['type'] === 'Ready');
  const status = ready?.['status'] === 'True' ? 'Ready' : ready ? 'NotReady' : 'Unknown';
  return get(node, '.spec.unschedulable') === true ? `${status},SchedulingDisabled` : status;
}

const PRINTERS: Record<string, Printer> = {
  '/pods': {
    columns: [nameColumn, column('Ready'), column('Status'), column('Restarts', 'string'), ageColumn, column('IP', 'string', 1), column('Node', 'string', 1), column('Nominated Node', 'string', 1), column('Readiness Gates', 'string', 1)],
    cells: (pod, age) => {
      const statuses = list(pod, '.status.containerStatuses');
      const ready = statuses.filter((s) => s['ready'] === true).length;
      const restarts = statuses.reduce((n, s) => n + (typeof s['restartCount'] === 'number' ? s['restartCount'] : 0), 0);
      return [pod.metadata.name, `${ready}/${list(pod, '.spec.containers').length}`, podStatus(pod), String(restarts), age, orNone(get(pod, '.status.podIP')), orNone(get(pod, '.spec.nodeName')), orNone(get(pod, '.status.nominatedNodeName')), '<none>'];
    },
  },
  '/nodes': {
    columns: [nameColumn, column('Status'), column('Roles'), ageColumn, column('Version'), column('Internal-IP', 'string', 1), column('OS-Image', 'string', 1), column('Kernel-Version', 'string', 1)],
    cells: (node, age) => {
      const roles = Object.keys(node.metadata.labels ?? {}).filter((l) => l.startsWith('node-role.kubernetes.io/')).map((l) => l.slice('node-role.kubernetes.io/'.length));
      const internal = list(node, '.status.addresses').find((a) => a['type'] === 'InternalIP');
      return [node.metadata.name, nodeStatus(node), roles.length ? roles.join(',') : '<none>', age, orNone(get(node, '.status.nodeInfo.kubeletVersion')), orNone(internal?.['address']), orNone(get(node, '.status.nodeInfo.osImage')), orNone(get(node, '.status.nodeInfo.kernelVersion'))];
    },
  },
  '/namespaces': {
    columns: [nameColumn, column('Status'), ageColumn],
    cells: (ns, age) => [ns.metadata.name, String(get(ns, '.status.phase') ?? 'Active'), age],
  },
  '/services': {
    columns: [nameColumn, column('Type'), column('Cluster-IP'), column('External-IP'), column('Port(s)'), ageColumn, column('Selector', 'string', 1)],
    cells: (svc, age) => {
      // As kubectl prints them: "22:30000/TCP" with a node port; a LoadBalancer's ingress, or <pending> until it has one.
      const ports = list(svc, '.spec.ports').map((p) => `${p['port']}${p['nodePort'] ? `:${p['nodePort']}` : ''}/${p['protocol'] ?? 'TCP'}`);
      const selector = get(svc, '.spec.selector');
      const ingress = list(svc, '.status.loadBalancer.ingress').map((i) => String(i['ip'] ?? i['hostname'] ?? '')).filter(Boolean);
      const external = ingress.length ? ingress.join(',') : get(svc, '.spec.type') === 'LoadBalancer' ? '<pending>' : '<none>';
      return [svc.metadata.name, orNone(get(svc, '.spec.type')), orNone(get(svc, '.spec.clusterIP')), external, ports.length ? ports.join(',') : '<none>', age, isObject(selector) ? Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(',') : '<none>'];
    },
  },
  '/configmaps': {
    columns: [nameColumn, column('Data', 'integer'), ageColumn],
    cells: (cm, age) => [cm.metadata.name, Object.keys({ ...(get(cm, '.data') as object), ...(get(cm, '.binaryData') as object) }).length, age],
  },
  '/secrets': {
    columns: [nameColumn, column('Type'), column('Data', 'integer'), ageColumn],
    cells: (s, age) => [s.metadata.name, orNone(get(s, '.type')), Object.keys((get(s, '.data') as object) ?? {}).length, age],
  },
  'apps/deployments': {
    columns: [nameColumn, column('Ready'), column('Up-to-date', 'integer'), column('Available', 'integer'), ageColumn],
    cells: (d, age) => [d.metadata.name, `${get(d, '.status.readyReplicas') ?? 0}/${get(d, '.spec.replicas') ?? 1}`, get(d, '.status.updatedReplicas') ?? 0, get(d, '.status.availableReplicas') ?? 0, age],
  },
  '/events': {
    columns: [column('Last Seen'), column('Type'), column('Reason'), column('Object'), column('Message')],
    cells: (e, age) => [age, orNone(get(e, '.type')), orNone(get(e, '.reason')), `${String(get(e, '.involvedObject.kind') ?? '').toLowerCase()}/${get(e, '.involvedObject.name') ?? ''}`, orNone(get(e, '.message'))],
  },
};

export interface TableOptions {
  includeObject: 'None' | 'Metadata' | 'Object';
  now?: number;
}

function printerOf(kind: ResourceKind, now: number): Printer {
  const builtIn = PRINTERS[`${kind.group}/${kind.resource}`];
  if (builtIn && !kind.printerColumns) return builtIn;
  const custom = kind.printerColumns ?? [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }];
  return {
    columns: [nameColumn, ...custom.map((c) => ({ name: c.name, type: c.type === 'date' ? 'string' : c.type, format: c.format ?? '', description: c.description ?? c.name, priority: c.priority ?? 0 }))],
    cells: (obj) => [obj.metadata.name, ...custom.map((c) => cellOf(c, obj, now))],
  };
}

export function toTable(kind: ResourceKind, objects: KubeObject[], metadata: Table['metadata'], opts: TableOptions): Table {
  const now = opts.now ?? Date.now();
  const printer = printerOf(kind, now);
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: printer.columns,
    rows: objects.map((obj) => ({
      cells: printer.cells(obj, obj.metadata.creationTimestamp ? humanDuration(now - Date.parse(obj.metadata.creationTimestamp)) : '<unknown>'),
      object:
        opts.includeObject === 'Object'
          ? obj
          : opts.includeObject === 'None'
            ? null
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata },
    })),
  };
}
