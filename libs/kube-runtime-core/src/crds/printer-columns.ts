/** One `additionalPrinterColumns` entry of a CRD version (apiextensions.k8s.io/v1). */
export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly jsonPath: string;
  readonly description?: string;
  /** 0: shown by `kubectl get`; 1: only with `-o wide`. */
  readonly priority?: number;
}

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/**
 * The columns `kubectl get` shows for each kind; the CRD manifests under charts/gpufleet/crds/
 * list exactly these (tools/charts/crds.spec.ts compares them).
 */
export const PRINTER_COLUMNS = {
  ModelDeployment: [
    { name: 'Model', type: 'string', jsonPath: '.spec.model' },
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine.engine' },
    { name: 'Replicas', type: 'integer', jsonPath: '.status.desiredReplicas', description: "Replicas desired over every role" },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoints[0]', description: "First ready server (or decode) endpoint" },
    { name: 'Served-Name', type: 'string', jsonPath: '.spec.servedModelName', priority: 1 },
    AGE,
  ],
  GPUInstance: [
    { name: 'Instance-Type', type: 'string', jsonPath: '.spec.instanceType' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Node', type: 'string', jsonPath: '.status.node' },
    { name: 'SSH', type: 'string', jsonPath: '.status.sshHost', description: "Host the instance's sshd is reached on" },
    { name: 'Port', type: 'integer', jsonPath: '.status.sshPort', description: "Port of the instance's sshd" },
    { name: 'User', type: 'string', jsonPath: '.status.sshUser', description: "The one login user", priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 },
    AGE,
  ],
  InstanceType: [
    { name: 'Pool', type: 'string', jsonPath: '.spec.pool' },
    { name: 'Accelerator', type: 'string', jsonPath: '.spec.acceleratorProduct' },
    { name: 'Unit', type: 'integer', jsonPath: '.spec.unit.accelerators', description: "Accelerators per unit" },
    { name: 'Whole', type: 'integer', jsonPath: '.status.capacity.whole.remaining', description: "Whole accelerators free now (multiples of the unit)" },
    { name: 'Whole-Max', type: 'integer', jsonPath: '.status.capacity.whole.onceMaxRequest', description: "Most whole accelerators one pod can get on one node now", priority: 1 },
    { name: 'Shared', type: 'integer', jsonPath: '.status.capacity.shared.remaining', description: "Time-sliced tokens free now (10 per accelerator)" },
    { name: 'Sliced-MiB', type: 'integer', jsonPath: '.status.capacity.sliced.memoryMib.remaining', description: "Accelerator memory free for slices now" },
    { name: 'MIG-Profiles', type: 'string', jsonPath: '.status.capacity.partitioned[*].profile', description: "MIG profiles offered (their counts are in status.capacity.partitioned)", priority: 1 },
    { name: 'MIG-Free', type: 'string', jsonPath: '.status.capacity.partitioned[*].view.remaining', description: "Partitions free now", priority: 1 },
    { name: 'Ready-Nodes', type: 'integer', jsonPath: '.status.readyNodes' },
    { name: 'Credits', type: 'integer', jsonPath: '.spec.creditPrice', description: "Credits per unit per hour" },
    AGE,
  ],
} as const satisfies Record<'ModelDeployment' | 'GPUInstance' | 'InstanceType', readonly PrinterColumn[]>;

/** Scope and names of each kind, for the CRD manifests. */
export const CRD_NAMES = {
  ModelDeployment: { plural: 'modeldeployments', singular: 'modeldeployment', shortNames: ['md'], scope: 'Namespaced' },
  GPUInstance: { plural: 'gpuinstances', singular: 'gpuinstance', shortNames: ['gi'], scope: 'Namespaced' },
  InstanceType: { plural: 'instancetypes', singular: 'instancetype', shortNames: ['it'], scope: 'Cluster' },
} as const;
