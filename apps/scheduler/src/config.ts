import { bool, ConfigOf, defineConfig, duration, int, list, servicePorts, sharedConfigFields, str } from '@gpufleet/config';

export const RUNTIMES = ['process', 'kubernetes'] as const;
export const SSH_SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer'] as const;

export const schedulerConfigSchema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50051, http: 8080 }),
  NOT_READY_TIMEOUT_S: duration({
    default: 45,
    min: 1,
    desc: 'Seconds without a heartbeat after which a node turns NotReady and its capacity leaves the views.',
  }),
  REPLICA_RESCHEDULE_AFTER_S: duration({
    default: 300,
    min: 1,
    desc: 'Seconds a deployment replica or GPU instance on a NotReady node waits before it is released and placed on another node.',
  }),
  WATCH_MAX_BUFFERED: int({
    default: 10_000,
    min: 1,
    desc: 'Messages a Watch* stream may have waiting for a client that reads too slowly (beyond its initial snapshot); past it the watch ends with RESOURCE_EXHAUSTED and the client re-watches.',
  }),
  RUNTIME: str({
    default: 'process',
    choices: RUNTIMES,
    desc: 'What runs the placed workloads: "process" (a node-runtime per node starts them as local processes) or "kubernetes" (the scheduler creates Pods and Services through the Kubernetes API; docs/kubernetes.md).',
  }),
  KUBECONFIG: str({
    default: '',
    desc: 'Path of a kubeconfig file for the Kubernetes API; empty: the in-cluster service account (inside a Pod), else ~/.kube/config.',
  }),
  KUBE_CUSTOM_RESOURCES: bool({
    default: false,
    desc: 'Watch and write the gpufleet.io custom resources (ModelDeployment, GPUInstance, InstanceType) through the Kubernetes API, on either runtime.',
  }),
  KUEUE: bool({
    default: false,
    desc: 'Mirror pools and queues into Kueue (kueue.x-k8s.io/v1beta2 ResourceFlavors, ClusterQueues, LocalQueues) and answer the gpufleet-placement AdmissionCheck of Kueue Workloads from gpufleet\'s placement (docs/kubernetes.md#kueue); Kueue must be installed.',
  }),
  KUBE_WORKLOAD_NAMESPACE: str({
    default: 'gpufleet',
    desc: 'Kubernetes namespace of the Pods and Services the kubernetes runtime creates; "*" puts each workload in the Kubernetes namespace named like its gpufleet namespace.',
  }),
  KUBE_FIELD_MANAGER: str({ default: 'gpufleet', pattern: /^[a-z0-9][a-z0-9.-]{0,127}$/, patternDesc: 'a field manager name', desc: 'Field manager of every server-side apply.' }),
  KUBE_ENGINE_IMAGES: list({
    default: [],
    minItems: 0,
    of: str({ pattern: /^[a-z0-9-]+=\S+$/, patternDesc: 'engine=image', desc: 'an engine and its image' }),
    desc: 'Engine images of the kubernetes runtime as engine=image pairs (vllm=…, sglang=…, trtllm=…, llama-cpp=…, engine-sim=…); engines not named use the built-in defaults.',
  }),
  KUBE_INSTANCE_IMAGE: str({ default: '', desc: "Image of a GPUInstance's workload container when its spec names none; empty: the built-in default." }),
  KUBE_SSH_SERVICE_TYPE: str({ default: 'ClusterIP', choices: SSH_SERVICE_TYPES, desc: "Type of the Service exposing a GPUInstance's SSH port." }),
  LEADER_RENEW_S: duration({ default: 5, min: 0.1, desc: 'Seconds between renewals of the scheduler leader lease.' }),
  LEADER_EXPIRE_S: duration({
    default: 10,
    min: 0.3,
    desc: 'Seconds a lease may go unrenewed before a standby scheduler takes over (takeover within this plus LEADER_RENEW_S).',
  }),
}, [
  // A lease renewed no more often than it expires lapses between renewals: two leaders.
  (c) =>
    c.LEADER_RENEW_S < c.LEADER_EXPIRE_S
      ? []
      : [{ variable: 'LEADER_RENEW_S', message: `expected less than LEADER_EXPIRE_S (${c.LEADER_EXPIRE_S}), got ${c.LEADER_RENEW_S}: the lease would lapse between renewals` }],
]);

export type SchedulerConfig = ConfigOf<typeof schedulerConfigSchema.fields>;

/** Injection token of the validated configuration. */
export const SCHEDULER_CONFIG = Symbol('SCHEDULER_CONFIG');
