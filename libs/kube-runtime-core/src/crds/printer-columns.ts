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
 * The columns `kubectl get` shows for each kind, what `gpufleet get` shows; the CRD manifests
 * under charts/gpufleet/crds/ must list exactly these (a spec can compare them).
 */
export const PRINTER_COLUMNS = {
  ModelDeployment: [
    { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Starting, Ready, Degraded or Deleting' },
    { name: 'Desired', type: 'integer', jsonPath: '.status.desiredReplicas', description: 'Replicas of every role' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Updated', type: 'integer', jsonPath: '.status.updatedReplicas', description: 'Replicas running the current template' },
    { name: 'Model', type: 'string', jsonPath: '.spec.model' },
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine.engine', priority: 1 },
    { name: 'Queue', type: 'string', jsonPath: '.spec.localQueue', priority: 1 },
    AGE,
  ],
  GPUInstance: [
    { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Pending, Starting, Running, Stopped, Failed or Deleting' },
    { name: 'Type', type: 'string', jsonPath: '.spec.instanceType' },
    { name: 'Node', type: 'string', jsonPath: '.status.node' },
    { name: 'SSH-Host', type: 'string', jsonPath: '.status.sshHost' },
    { name: 'SSH-Port', type: 'integer', jsonPath: '.status.sshPort' },
    { name: 'User', type: 'string', jsonPath: '.status.sshUser', priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 },
    AGE,
  ],
  InstanceType: [
    { name: 'Pool', type: 'string', jsonPath: '.spec.pool' },
    { name: 'Accelerator', type: 'string', jsonPath: '.spec.acceleratorProduct' },
    { name: 'Count', type: 'integer', jsonPath: '.spec.unit.accelerators', description: 'Accelerators per unit' },
    { name: 'vCPU', type: 'integer', jsonPath: '.spec.unit.vcpu' },
    { name: 'Memory-MiB', type: 'integer', jsonPath: '.spec.unit.memoryMib' },
    { name: 'Free', type: 'integer', jsonPath: '.status.capacity.whole.remaining', description: 'Whole units free now' },
    { name: 'Ready-Nodes', type: 'integer', jsonPath: '.status.readyNodes' },
    { name: 'Credits', type: 'integer', jsonPath: '.spec.creditPrice', description: 'Credits per unit per hour', priority: 1 },
    AGE,
  ],
} as const satisfies Record<'ModelDeployment' | 'GPUInstance' | 'InstanceType', readonly PrinterColumn[]>;

/** Scope and names of each kind, for the CRD manifests. */
export const CRD_NAMES = {
  ModelDeployment: { plural: 'modeldeployments', singular: 'modeldeployment', shortNames: ['md'], scope: 'Namespaced' },
  GPUInstance: { plural: 'gpuinstances', singular: 'gpuinstance', shortNames: ['gi'], scope: 'Namespaced' },
  InstanceType: { plural: 'instancetypes', singular: 'instancetype', shortNames: ['it'], scope: 'Cluster' },
} as const;
