/**
 * The table of served resources. Built-in kinds are rows here; a CustomResourceDefinition adds rows
 * at run time (see crds.ts). Discovery, routing, tables and patch semantics all read this one table.
 */

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

export interface ScalePaths {
  specReplicasPath: string;
  statusReplicasPath: string;
  /** A label selector string in the object; absent for built-ins, whose `spec.selector` is converted. */
  labelSelectorPath?: string;
}

export interface ResourceKind {
  group: string;
  version: string;
  /** The plural, as in the URL. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Writes to the main resource keep the stored status; `/status` writes change only status. */
  statusSubresource?: boolean;
  /** The `/scale` subresource: where replicas live (simple dotted paths, as CRDs declare them). */
  scale?: ScalePaths;
  /** Custom resources take no strategic-merge patches (the apiserver answers 415). */
  custom?: boolean;
  /** Columns for `kubectl get`; NAME comes first and is implied. Absent: NAME and AGE. */
  printerColumns?: PrinterColumn[];
  /** The CRD that serves this kind (its `metadata.name`), so deleting the CRD removes it. */
  definedBy?: string;
  /** openAPIV3Schema of a CRD version, used for basic type validation. */
  schema?: unknown;
}

export const groupVersion = (k: Pick<ResourceKind, 'group' | 'version'>): string => (k.group ? `${k.group}/${k.version}` : k.version);

export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

type Row = Omit<ResourceKind, 'group' | 'version' | 'singular'> & { singular?: string };

function rows(group: string, version: string, kinds: Row[]): ResourceKind[] {
  return kinds.map((k) => ({ group, version, singular: k.singular ?? k.kind.toLowerCase(), ...k }));
}

const replicas: ScalePaths = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' };
const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const kueueCategories = ['kueue'];

export const BUILTIN_KINDS: ResourceKind[] = [
  ...rows('', 'v1', [
    { resource: 'namespaces', kind: 'Namespace', namespaced: false, shortNames: ['ns'], statusSubresource: true },
    { resource: 'nodes', kind: 'Node', namespaced: false, shortNames: ['no'], statusSubresource: true },
    { resource: 'pods', kind: 'Pod', namespaced: true, shortNames: ['po'], categories: ['all'], statusSubresource: true },
    { resource: 'services', kind: 'Service', namespaced: true, shortNames: ['svc'], categories: ['all'], statusSubresource: true },
    { resource: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] },
    { resource: 'secrets', kind: 'Secret', namespaced: true },
    { resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true, shortNames: ['sa'] },
    { resource: 'events', kind: 'Event', namespaced: true, shortNames: ['ev'] },
  ]),
  ...rows('apps', 'v1', [
    { resource: 'deployments', kind: 'Deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'], statusSubresource: true, scale: replicas },
    { resource: 'daemonsets', kind: 'DaemonSet', namespaced: true, shortNames: ['ds'], categories: ['all'], statusSubresource: true },
    { resource: 'statefulsets', kind: 'StatefulSet', namespaced: true, shortNames: ['sts'], categories: ['all'], statusSubresource: true, scale: replicas },
  ]),
  ...rows('rbac.authorization.k8s.io', 'v1', [
    { resource: 'roles', kind: 'Role', namespaced: true },
    { resource: 'rolebindings', kind: 'RoleBinding', namespaced: true },
    { resource: 'clusterroles', kind: 'ClusterRole', namespaced: false },
    { resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false },
  ]),
  ...rows('apiextensions.k8s.io', 'v1', [
    {
      resource: 'customresourcedefinitions',
      kind: 'CustomResourceDefinition',
      namespaced: false,
      shortNames: ['crd', 'crds'],
      statusSubresource: true,
      printerColumns: [{ name: 'Created At', type: 'date', jsonPath: '.metadata.creationTimestamp', format: 'date-time' }],
    },
  ]),
  ...rows('coordination.k8s.io', 'v1', [{ resource: 'leases', kind: 'Lease', namespaced: true }]),
  // Kinds that a real cluster gets from CRDs (NFD, Kueue), served here as if those CRDs were installed.
  ...rows('nfd.k8s-sigs.io', 'v1alpha1', [{ resource: 'nodefeatures', kind: 'NodeFeature', namespaced: true, custom: true }]),
  ...rows('kueue.x-k8s.io', 'v1beta2', [
    { resource: 'resourceflavors', kind: 'ResourceFlavor', namespaced: false, shortNames: ['flavor', 'flavors', 'rf'], custom: true, categories: kueueCategories },
    {
      resource: 'clusterqueues',
      kind: 'ClusterQueue',
      namespaced: false,
      shortNames: ['cq'],
      custom: true,
      statusSubresource: true,
      categories: kueueCategories,
      printerColumns: [
        { name: 'Cohort', type: 'string', jsonPath: '.spec.cohortName' },
        { name: 'Pending Workloads', type: 'integer', jsonPath: '.status.pendingWorkloads' },
        { name: 'Admitted Workloads', type: 'integer', jsonPath: '.status.admittedWorkloads', priority: 1 },
      ],
    },
    {
      resource: 'localqueues',
      kind: 'LocalQueue',
      namespaced: true,
      shortNames: ['queue', 'queues', 'lq'],
      custom: true,
      statusSubresource: true,
      categories: kueueCategories,
      printerColumns: [
        { name: 'ClusterQueue', type: 'string', jsonPath: '.spec.clusterQueue' },
        { name: 'Pending Workloads', type: 'integer', jsonPath: '.status.pendingWorkloads' },
        { name: 'Admitted Workloads', type: 'integer', jsonPath: '.status.admittedWorkloads' },
      ],
    },
    { resource: 'admissionchecks', kind: 'AdmissionCheck', namespaced: false, custom: true, statusSubresource: true, categories: kueueCategories },
    {
      resource: 'workloads',
      kind: 'Workload',
      namespaced: true,
      shortNames: ['wl'],
      custom: true,
      statusSubresource: true,
      categories: kueueCategories,
      printerColumns: [
        { name: 'Queue', type: 'string', jsonPath: '.spec.queueName' },
        { name: 'Reserved in', type: 'string', jsonPath: '.status.admission.clusterQueue' },
        { name: 'Admitted', type: 'string', jsonPath: ".status.conditions[?(@.type=='Admitted')].status" },
        age,
      ],
    },
  ]),
];

/** The live table: built-ins plus what CRDs add; lookups by group/version/resource and by kind. */
export class KindTable {
  private readonly byKey = new Map<string, ResourceKind>();

  constructor(kinds: ResourceKind[]) {
    for (const k of kinds) this.add(k);
  }

  private static key(group: string, version: string, resource: string): string {
    return `${group}/${version}/${resource}`;
  }

  add(kind: ResourceKind): void {
    this.byKey.set(KindTable.key(kind.group, kind.version, kind.resource), kind);
  }

  removeDefinedBy(crdName: string): ResourceKind[] {
    const removed = [...this.byKey.values()].filter((k) => k.definedBy === crdName);
    for (const k of removed) this.byKey.delete(KindTable.key(k.group, k.version, k.resource));
    return removed;
  }

  find(group: string, version: string, resource: string): ResourceKind | undefined {
    return this.byKey.get(KindTable.key(group, version, resource));
  }

  byApiVersionKind(apiVersion: string, kind: string): ResourceKind | undefined {
    return this.all().find((k) => groupVersion(k) === apiVersion && k.kind === kind);
  }

  all(): ResourceKind[] {
    return [...this.byKey.values()];
  }

  /** Group -> versions served, in table order (the first is the preferred version). */
  groups(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const k of this.byKey.values()) {
      const versions = groups.get(k.group) ?? [];
      if (!versions.includes(k.version)) versions.push(k.version);
      groups.set(k.group, versions);
    }
    return groups;
  }
}
