import type { V1Container, V1EnvVar, V1OwnerReference, V1Pod, V1Probe, V1ResourceRequirements, V1Toleration, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { NodeInventory, type EngineRun, type InstanceRun, type PodRef, type SecretKeyRef } from '@gpufleet/contracts';
import { buildEngineCommand, simulatedEngineCommand, type EngineCommand, type EngineGroup, type EngineKind, type EngineSimEntry } from '@gpufleet/engine-presets';
import { engineSpecOf } from '@gpufleet/deployments-core/engine-run';
import { groupNetwork, PodPlanError, resolveEngineMode, resolvePodDevices, resolvePodWeights, withPodWeights, type DesiredPod, type EngineModeSetting, type PodWeights, type WeightsCopy } from '@gpufleet/node-runtime-core';
import { DEVICE_VISIBILITY_VARS } from '@gpufleet/process-spec';
import { deviceAssignmentOf, deviceResourceOf, vendorOfPlacement } from './devices';
import { withSpecHash } from './hash';
import { containerCommandOf, imageOf, type ImageKind } from './images';
import { dnsLabel, KubeAnnotations, KubeLabels, MANAGED_BY, podNameOf } from './names';

/** API group and version of gpufleet's custom resources. */
export const GPUFLEET_API_VERSION = 'gpufleet.io/v1';

/** The port every engine container listens on: a Pod has an IP of its own, so one port fits all. */
export const DEFAULT_ENGINE_PORT = 8000;
/**
 * Where a multi-node replica's leader meets its workers (Ray's GCS, vLLM's data-parallel RPC,
 * SGLang's dist-init, the MPI launcher's SSH on the workers): one port fits every group, since
 * each Pod has an IP of its own. torch.distributed's customary MASTER_PORT.
 */
export const DEFAULT_RENDEZVOUS_PORT = 29500;
/** The downward-API variable holding the Pod's IP; the kubelet expands `$(GPUFLEET_POD_IP)` in the command line. */
export const POD_IP_VAR = 'GPUFLEET_POD_IP';
/** The interface of a Pod's own network (the one its IP and so its group's DNS names are on). */
export const DEFAULT_POD_INTERFACE = 'eth0';

/** sshd's port in an instance's sidecar (unprivileged, so sshd runs as the login user). */
export const SSH_PORT = 2222;
/** The login user's uid in both containers of an instance (the sidecar image has it as `gpufleet`). */
export const DEFAULT_INSTANCE_UID = 1000;
/** Home of the login user: an emptyDir both containers of an instance mount, its working directory. */
export const INSTANCE_HOME = '/home/gpufleet';

/** How engine-sim starts in its image. */
export const DEFAULT_ENGINE_SIM_ENTRY: EngineSimEntry = { command: 'node', args: ['-r', 'reflect-metadata', 'dist/apps/engine-sim/src/main.js'] };

/** The taints of accelerator nodes that gpufleet's pods tolerate (GPU operators' and clouds' usual ones). */
export const DEFAULT_ACCELERATOR_TOLERATIONS: readonly V1Toleration[] = [
  { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'amd.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'huawei.com/Ascend910', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'gpufleet.io/accelerator', operator: 'Exists', effect: 'NoSchedule' },
];

/** Who owns a pod: the ModelDeployment or GPUInstance custom resource, when the cluster has one. */
export interface OwnerObjectRef {
  readonly kind: 'ModelDeployment' | 'GPUInstance';
  readonly name: string;
  /** The custom resource's metadata.uid (not gpufleet's record uid). */
  readonly uid: string;
  /** Default `gpufleet.io/v1`. */
  readonly apiVersion?: string;
}

/** A desired pod (node-runtime-core's) with what the Kubernetes runtime needs besides. */
export interface KubeDesiredPod extends DesiredPod {
  /** The workload's labels: the owner labels (`gpufleet.io/deployment`, `…/role`, `…/instance`, `…/owner-uid`) are copied. */
  readonly workloadLabels?: Readonly<Record<string, string>>;
  /** An instance's `image` (GPUInstanceSpec.image); ignored for engines. */
  readonly image?: string;
  readonly owner?: OwnerObjectRef;
  /** A pod of a multi-node replica (its pod set's size > 1): how many pods, and whether they share one NVLink domain. */
  readonly group?: KubePodGroup;
}

export interface KubePodGroup {
  readonly size: number;
  readonly nvlinkAcrossPods: boolean;
}

/** Every node's copies of ModelArtifacts (the artifact-nodes bucket, written by each node's model cache). */
export interface NodeWeightsLookup {
  copyOf(node: string, namespace: string, artifact: string): WeightsCopy | undefined;
}

/** How this cluster runs pods; the same for every pod. */
export interface KubePodContext {
  /** The node's inventory (the nodes bucket): UUIDs for the devices annotation, engine mode, accelerator memory. */
  inventoryOf(node: string): NodeInventory | undefined;
  /** `auto` (default): engine-sim on nodes of the `simulated` provider, as the process runtime does. */
  readonly engineMode?: EngineModeSetting;
  /** Overrides of DEFAULT_IMAGES, whole references (`registry.local/vllm:v0.11.0`). */
  readonly images?: Readonly<Partial<Record<ImageKind, string>>>;
  readonly engineSim?: EngineSimEntry;
  /** Default DEFAULT_ENGINE_PORT. */
  readonly enginePort?: number;
  /** terminationGracePeriodSeconds; default 30 (the process runtime's STOP_GRACE_S). */
  readonly stopGraceS?: number;
  /** Default DEFAULT_ACCELERATOR_TOLERATIONS; given to pods that hold accelerators. */
  readonly tolerations?: readonly V1Toleration[];
  /** Default `IfNotPresent`. */
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** uid of an instance's containers; default DEFAULT_INSTANCE_UID. */
  readonly instanceUid?: number;
  /** Longest an engine may take to load its model before it counts as failed, s; default 1800. */
  readonly engineStartupS?: number;
  /** The leaders' rendezvous port; default DEFAULT_RENDEZVOUS_PORT. */
  readonly rendezvousPort?: number;
  /** NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME of group pods: the Pod network's interface, default DEFAULT_POD_INTERFACE. */
  readonly podInterface?: string;
  /** The nodes' copies of ModelArtifacts; without it an engine naming an artifact waits (WEIGHTS_PENDING). */
  readonly weights?: NodeWeightsLookup;
}

/**
 * The Pod of one desired pod, for server-side apply (field manager FIELD_MANAGER). Pure: the same
 * input gives the same object, whose `gpufleet.io/spec-hash` annotation is the digest of the
 * rest. Throws node-runtime-core's `PodPlanError` or engine-presets' `EngineSpecError` for the
 * same problems the process runtime reports as a `Failed` pod (an unknown accelerator, a refused
 * engine spec): `desiredManifests` collects those as data.
 *
 * - namespace: the gpufleet namespace (a ModelDeployment's or GPUInstance's own), because owner
 *   references cannot cross namespaces and `secretKeyRef` reads Secrets of the pod's namespace;
 * - pinned with `spec.nodeName`: gpufleet's scheduler already chose the node and holds the devices
 *   in its ledger, so kube-scheduler must not decide again (it could pick no node or wait);
 * - devices: the device-plugin resource of `deviceResourceOf` plus the exact assignment in the
 *   `gpufleet.io/devices` annotation, which the device plugin's Allocate honours.
 */
export function podManifestOf(pod: KubeDesiredPod, ctx: KubePodContext): V1Pod {
  const ref = pod.ref;
  const inventory = ctx.inventoryOf(ref.node) ?? emptyInventory(ref.node);
  const assignment = deviceAssignmentOf(pod.placement, inventory);
  const engine = pod.template.engine;
  const instance = pod.template.instance;
  if (!engine && !instance) throw new PodPlanError('UNSUPPORTED_TEMPLATE', 'the pod template has neither an engine nor an instance');
  const labels = podLabels(pod);
  const annotations: Record<string, string> = { [KubeAnnotations.pod]: pod.id };
  if (assignment) annotations[KubeAnnotations.devices] = JSON.stringify(assignment);
  if (engine?.templateHash) annotations[KubeAnnotations.templateHash] = engine.templateHash;
  const resources = resourcesOf(pod, inventory);
  const spec = engine ? engineSpecFor(pod, engine, inventory, resources, ctx) : instanceSpecFor(pod, instance!, resources, ctx);
  const manifest: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameOf(ref),
      namespace: ref.namespace,
      labels,
      annotations,
      ...(pod.owner ? { ownerReferences: [ownerReferenceOf(pod.owner)] } : {}),
    },
    spec: {
      nodeName: ref.node,
      restartPolicy: restartPolicyOf(pod),
      terminationGracePeriodSeconds: ctx.stopGraceS ?? 30,
      enableServiceLinks: false,
      // Engines and sessions have no business with the Kubernetes API.
      automountServiceAccountToken: false,
      ...(assignment ? { tolerations: [...(ctx.tolerations ?? DEFAULT_ACCELERATOR_TOLERATIONS)] } : {}),
      // A group's pods are found at <hostname>.<subdomain>.<namespace>.svc through the replica's headless Service.
      ...(engine && pod.group ? { hostname: podNameOf(ref), subdomain: groupServiceName(ref) } : {}),
      ...spec,
    },
  };
  return withSpecHash(manifest);
}

/**
 * Engines and instances both restart `always` on the process runtime (a crashed engine comes
 * back with backoff; an instance's command too), so their Pods do; a pod kind that runs to
 * completion would get `OnFailure`.
 */
export function restartPolicyOf(_pod: DesiredPod): 'Always' | 'OnFailure' | 'Never' {
  return 'Always';
}

export function ownerReferenceOf(owner: OwnerObjectRef): V1OwnerReference {
  return { apiVersion: owner.apiVersion ?? GPUFLEET_API_VERSION, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true };
}

/** Labels of a pod's Pod: managed-by, which pod, and the owner labels of its workload. */
export function podLabels(pod: KubeDesiredPod): Record<string, string> {
  const ref = pod.ref;
  const labels: Record<string, string> = {
    [KubeLabels.managedBy]: MANAGED_BY,
    [KubeLabels.component]: pod.template.engine ? 'engine' : 'instance',
    [KubeLabels.namespace]: ref.namespace,
    [KubeLabels.workload]: ref.workload,
    [KubeLabels.podSet]: ref.podSet,
    [KubeLabels.replica]: String(ref.replica),
    [KubeLabels.pod]: String(ref.pod),
  };
  // Node names are DNS subdomains (up to 253 characters); a label value holds at most 63.
  if (LABEL_VALUE.test(ref.node)) labels[KubeLabels.node] = ref.node;
  const from = pod.workloadLabels ?? {};
  for (const key of [KubeLabels.deployment, KubeLabels.role, KubeLabels.ordinal, KubeLabels.instance, KubeLabels.ownerUid]) {
    if (from[key]) labels[key] = from[key];
  }
  const engine = pod.template.engine;
  if (engine) {
    if (!labels[KubeLabels.deployment] && engine.deployment) labels[KubeLabels.deployment] = engine.deployment;
    if (!labels[KubeLabels.role] && engine.role) labels[KubeLabels.role] = engine.role;
    // The deployment's Service sends requests to pod 0 of server and decode replicas (the replica's endpoint).
    const role = engine.role || 'server';
    if (ref.pod === 0 && (role === 'server' || role === 'decode')) labels[KubeLabels.endpoint] = 'true';
    if (pod.group) labels[KubeLabels.groupRole] = ref.pod === 0 ? 'leader' : 'worker';
  }
  const instance = pod.template.instance;
  if (instance && !labels[KubeLabels.instance]) labels[KubeLabels.instance] = instance.instance || ref.workload;
  return labels;
}

function resourcesOf(pod: DesiredPod, inventory: NodeInventory): V1ResourceRequirements {
  const quantities: Record<string, string> = {};
  if (pod.placement.vcpu > 0) quantities.cpu = String(pod.placement.vcpu);
  if (pod.placement.memoryMib > 0) quantities.memory = `${pod.placement.memoryMib}Mi`;
  const device = deviceResourceOf(pod.placement, vendorOfPlacement(pod.placement, inventory));
  if (device) quantities[device.name] = String(device.quantity);
  // Requests equal to limits: the pod gets what the scheduler counted, no more (Guaranteed QoS).
  return Object.keys(quantities).length > 0 ? { requests: { ...quantities }, limits: { ...quantities } } : {};
}

type PodSpecPart = Pick<NonNullable<V1Pod['spec']>, 'containers' | 'volumes' | 'shareProcessNamespace' | 'securityContext'>;

function engineSpecFor(pod: KubeDesiredPod, named: EngineRun, inventory: NodeInventory, resources: V1ResourceRequirements, ctx: KubePodContext): PodSpecPart {
  const port = ctx.enginePort ?? DEFAULT_ENGINE_PORT;
  // An artifact's weights are the node cache's verified copy, as on the process runtime: no Pod until it is Ready.
  const weights = named.artifact ? podWeightsOf(pod, named.artifact, ctx) : undefined;
  const run = weights ? withPodWeights(named, weights) : named;
  const devices = resolvePodDevices(pod.placement, inventory);
  // In the container the device plugin's devices are numbered from 0, whatever their index on the node.
  const accelerators = devices.engineIds.map((_, i) => String(i));
  const group = pod.group ? kubeEngineGroup(pod, pod.group, inventory, ctx) : undefined;
  // All interfaces of the Pod's own network namespace, i.e. its pod IP: the Service, the router and
  // the kubelet's probes reach it there; nothing outside the Pod's network is opened by this.
  const spec = engineSpecOf(run, {
    acceleratorIds: accelerators,
    port,
    host: '0.0.0.0',
    ...(devices.acceleratorMemoryMib ? { acceleratorMemoryMib: devices.acceleratorMemoryMib } : {}),
    ...(group ? { group } : {}),
  });
  const simulated = resolveEngineMode(ctx.engineMode ?? 'auto', inventory) === 'simulated';
  const command: EngineCommand = simulated ? simulatedEngineCommand(spec, ctx.engineSim ?? DEFAULT_ENGINE_SIM_ENTRY) : buildEngineCommand(spec);
  const kind: ImageKind = simulated ? 'engine-sim' : (spec.engine as EngineKind);
  const env: V1EnvVar[] = envVars({ ...withoutVisibility(command.env), ...(weights?.env ?? {}), GPUFLEET_POD: pod.id, ...(run.templateHash ? { GPUFLEET_TEMPLATE_HASH: run.templateHash } : {}), ...(simulated ? { REPLICA_NAME: podNameOf(pod.ref) } : {}) }, run.engine?.envFromSecret ?? {});
  // First in the list: the kubelet expands $(GPUFLEET_POD_IP) in the arguments and in the values of the variables after it.
  if (group) env.unshift({ name: POD_IP_VAR, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  const health = (periodSeconds: number, failureThreshold: number): V1Probe => ({ httpGet: { path: '/health', port: 'http' }, periodSeconds, failureThreshold, timeoutSeconds: 5 });
  const startupS = ctx.engineStartupS ?? 1800;
  const image = imageOf(kind, ctx.images, spec.version ?? '');
  // A worker serves no API: it is Ready while it runs, and the leader's /health (which answers
  // only once every rank joined) stands for the group.
  const worker = group !== undefined && group.rank > 0;
  const rendezvous = group ? [{ name: 'rendezvous', containerPort: group.rendezvousPort, protocol: 'TCP' }] : [];
  const weightVolumes = weightVolumesOf(weights);
  const container: V1Container = {
    name: 'engine',
    image,
    imagePullPolicy: ctx.imagePullPolicy ?? 'IfNotPresent',
    command: [containerCommandOf(kind, image, command.command)],
    args: command.args,
    env,
    ports: worker ? rendezvous : [{ name: 'http', containerPort: port, protocol: 'TCP' }, ...rendezvous],
    // Loading a model takes minutes: the startup probe holds liveness off until /health answers once.
    ...(worker ? {} : { startupProbe: health(10, Math.max(1, Math.ceil(startupS / 10))), readinessProbe: health(5, 3), livenessProbe: health(10, 6) }),
    resources,
    // Tensor-parallel engines share memory between their workers through /dev/shm.
    volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }, ...weightVolumes.map((v) => v.mount)],
  };
  return { containers: [container], volumes: [{ name: 'dshm', emptyDir: { medium: 'Memory' } }, ...weightVolumes.map((v) => v.volume)] };
}

/**
 * This pod's node's copy of `artifact`. Throws WEIGHTS_PENDING (with the node's progress) until
 * the copy is Ready, and WEIGHTS_FAILED when the cache gave up on it: node-runtime-core's
 * resolvePodWeights, read for the pod's own node.
 */
function podWeightsOf(pod: DesiredPod, artifact: string, ctx: KubePodContext): PodWeights {
  const cluster = ctx.weights;
  return resolvePodWeights(pod.ref.namespace, artifact, cluster ? { copyOf: (namespace, name) => cluster.copyOf(pod.ref.node, namespace, name) } : undefined);
}

/**
 * The copy's directories as read-only `hostPath` volumes, mounted where the cache has them on the
 * node, so `{{model_path}}` and HF_HUB_CACHE mean the same inside the container. `Directory`: the
 * kubelet refuses to start the Pod rather than make an empty directory if the tree is gone.
 */
function weightVolumesOf(weights: PodWeights | undefined): Array<{ volume: V1Volume; mount: V1VolumeMount }> {
  return (weights?.binds ?? []).map((bind, i) => {
    const name = i === 0 ? 'weights' : `weights-${i}`;
    return { volume: { name, hostPath: { path: bind.source, type: 'Directory' } }, mount: { name, mountPath: bind.target ?? bind.source, readOnly: true } };
  });
}

/**
 * The pod's place in its multi-node replica on Kubernetes. Addresses: a pod's own is its Pod IP
 * (`$(GPUFLEET_POD_IP)`, from the downward API, expanded by the kubelet: Ray's
 * `--node-ip-address` and VLLM_HOST_IP want an IP, and the IP exists only once the Pod runs);
 * the leader is, to its workers, `<leader pod>.<group Service>.<namespace>.svc` (the headless
 * Service publishes it before the pod is ready) and, to itself, its own IP (vLLM binds its
 * data-parallel RPC there; a ZMQ bind takes no DNS name). The rendezvous port is one for every
 * group (each Pod has an IP of its own). NCCL's and Gloo's bootstrap sockets use the Pod
 * network's interface, where those addresses are; NCCL's RDMA transport the HCAs nearest the
 * pod's accelerators, as on the process runtime.
 */
export function kubeEngineGroup(pod: KubeDesiredPod, group: KubePodGroup, inventory: NodeInventory, ctx: Pick<KubePodContext, 'rendezvousPort' | 'podInterface'>): EngineGroup {
  const ref = pod.ref;
  const self = `$(${POD_IP_VAR})`;
  const addressOf = (rank: number): string => (rank === ref.pod ? self : groupLeaderAddress(ref, podNameOf({ ...ref, pod: rank })));
  const hcas = groupNetwork(inventory, pod.placement.acceleratorIds)?.ibHcas ?? [];
  return {
    size: group.size,
    rank: ref.pod,
    leaderAddress: addressOf(0),
    podAddress: self,
    rendezvousPort: ctx.rendezvousPort ?? DEFAULT_RENDEZVOUS_PORT,
    nvlinkAcrossPods: group.nvlinkAcrossPods,
    // mpirun on the leader (TRT-LLM) reaches every rank's host; its own IP is local to it.
    peerAddresses: Array.from({ length: group.size }, (_, rank) => addressOf(rank)),
    network: { socketInterfaces: [ctx.podInterface ?? DEFAULT_POD_INTERFACE], ibHcas: hcas },
  };
}

/** The headless Service of one multi-node replica: `<workload>-<pod set>-<replica>-group`. */
export function groupServiceName(ref: Pick<PodRef, 'workload' | 'podSet' | 'replica'>): string {
  return dnsLabel(ref.workload, ref.podSet, ref.replica, 'group');
}

/** A group member's DNS name inside the cluster, through its replica's headless Service. */
export function groupLeaderAddress(ref: Pick<PodRef, 'namespace' | 'workload' | 'podSet' | 'replica'>, podName: string): string {
  return `${podName}.${groupServiceName(ref)}.${ref.namespace}.svc`;
}

/**
 * The sidecar's start: a host key of its own (kept in the pod's memory emptyDir, printed once for
 * the status), then the authorized keys, each with the login environment as `environment="…"`
 * options (PermitUserEnvironment), so the session environment does not depend on the image's
 * home directories; the values come from the container's environment (Secrets by reference), so
 * no value is in the Pod's spec or sshd's arguments. A `"` in a value is escaped; a newline
 * becomes a space. Then sshd in the foreground as the login user.
 */
export const SSHD_SCRIPT = [
  'set -eu',
  'd=/run/gpufleet-sshd',
  'mkdir -p "$d"',
  '[ -f "$d/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N "" -f "$d/ssh_host_ed25519_key"',
  'echo "gpufleet ssh host key: $(cat "$d/ssh_host_ed25519_key.pub")"',
  'opts=""',
  'for v in $GPUFLEET_SESSION_ENV; do val=$(printf "%s" "$(printenv "$v")" | tr "\\n" " " | sed \'s/"/\\\\"/g\'); opts="${opts}environment=\\"$v=$val\\","; done',
  'opts=${opts%,}',
  'umask 077',
  'printf "%s\\n" "$GPUFLEET_AUTHORIZED_KEYS" | while IFS= read -r k; do [ -z "$k" ] || printf "%s%s\\n" "${opts:+$opts }" "$k"; done > "$d/authorized_keys"',
  'exec /usr/sbin/sshd -D -e -f /dev/null -p "$SSH_PORT" -h "$d/ssh_host_ed25519_key" -o PidFile=none ' +
    '-o AuthorizedKeysFile="$d/authorized_keys" -o PubkeyAuthentication=yes -o PasswordAuthentication=no ' +
    '-o KbdInteractiveAuthentication=no -o HostbasedAuthentication=no -o PermitRootLogin=no ' +
    '-o PermitUserEnvironment=yes -o StrictModes=no -o UsePAM=no -o "Subsystem sftp internal-sftp"',
].join('\n');

function instanceSpecFor(pod: KubeDesiredPod, run: InstanceRun, resources: V1ResourceRequirements, ctx: KubePodContext): PodSpecPart {
  checkInstance(pod, run);
  const uid = ctx.instanceUid ?? DEFAULT_INSTANCE_UID;
  const sessionEnv: Record<string, string> = { ...run.env, GPUFLEET_POD: pod.id };
  const env = envVars(sessionEnv, run.envFromSecret ?? {});
  const home: V1VolumeMount = { name: 'home', mountPath: INSTANCE_HOME };
  const securityContext = { runAsUser: uid, runAsGroup: uid, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  const workload: V1Container = {
    name: 'workload',
    image: imageOf('instance', pod.image ? { instance: pod.image } : ctx.images),
    imagePullPolicy: ctx.imagePullPolicy ?? 'IfNotPresent',
    // Without a command the container only holds the devices; sessions reach it through the shared PID namespace.
    command: ['/bin/sh', '-c', run.command.trim() ? run.command : 'exec sleep infinity'],
    env: [...env, { name: 'HOME', value: INSTANCE_HOME }],
    workingDir: INSTANCE_HOME,
    resources,
    securityContext,
    volumeMounts: [home],
  };
  const names = [...Object.keys(sessionEnv), ...Object.keys(run.envFromSecret ?? {})].sort();
  const sshd: V1Container = {
    name: 'sshd',
    image: imageOf('sshd', ctx.images),
    imagePullPolicy: ctx.imagePullPolicy ?? 'IfNotPresent',
    command: ['/bin/sh', '-c', SSHD_SCRIPT],
    env: [
      ...env,
      { name: 'HOME', value: INSTANCE_HOME },
      { name: 'SSH_PORT', value: String(SSH_PORT) },
      { name: 'GPUFLEET_AUTHORIZED_KEYS', value: run.sshPublicKeys.map((k) => k.trim()).join('\n') },
      { name: 'GPUFLEET_SESSION_ENV', value: names.join(' ') },
    ],
    workingDir: INSTANCE_HOME,
    ports: [{ name: 'ssh', containerPort: SSH_PORT, protocol: 'TCP' }],
    readinessProbe: { tcpSocket: { port: 'ssh' }, periodSeconds: 5 },
    livenessProbe: { tcpSocket: { port: 'ssh' }, periodSeconds: 10, failureThreshold: 6 },
    // Sessions run here: they may use the pod's memory, as sshd's cgroup does on the process runtime.
    resources: sidecarResources(resources),
    securityContext,
    volumeMounts: [home, { name: 'sshd', mountPath: '/run/gpufleet-sshd' }],
  };
  const volumes: V1Volume[] = [
    { name: 'home', emptyDir: {} },
    { name: 'sshd', emptyDir: { medium: 'Memory' } },
  ];
  return { containers: [workload, sshd], volumes, shareProcessNamespace: true, securityContext: { fsGroup: uid } };
}

function sidecarResources(pod: V1ResourceRequirements): V1ResourceRequirements {
  const memory = pod.limits?.memory;
  return { requests: { cpu: '50m', memory: '64Mi' }, ...(memory ? { limits: { memory } } : {}) };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LABEL_VALUE = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** The process runtime's refusals for an instance, so a template that fails there fails here. */
function checkInstance(pod: DesiredPod, run: InstanceRun): void {
  if (run.sshPublicKeys.length === 0) throw new PodPlanError('INVALID_INSTANCE', `instance ${run.instance || pod.ref.workload} has no SSH public key; logins are by key only`);
  for (const name of [...Object.keys(run.env), ...Object.keys(run.envFromSecret ?? {})]) {
    if (!ENV_NAME.test(name)) throw new PodPlanError('INVALID_INSTANCE', `env.${name}: not a valid environment variable name`);
    if (DEVICE_VISIBILITY_VARS.includes(name)) throw new PodPlanError('INVALID_INSTANCE', `env.${name}: set from the allocated devices; remove it from the instance`);
  }
}

/**
 * Plain variables, then `env_from_secret` as `valueFrom.secretKeyRef` of the Kubernetes Secret of
 * the same name in the pod's namespace: the value never enters the Pod's spec. Sorted by name.
 */
export function envVars(env: Readonly<Record<string, string>>, fromSecret: Readonly<Record<string, SecretKeyRef>>): V1EnvVar[] {
  const out: V1EnvVar[] = [];
  for (const [name, value] of Object.entries(env)) if (!(name in fromSecret)) out.push({ name, value });
  for (const [name, ref] of Object.entries(fromSecret)) out.push({ name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } });
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function withoutVisibility(env: Readonly<Record<string, string>>): Record<string, string> {
  // The device plugin's Allocate sets the visibility variables of the devices it hands over.
  return Object.fromEntries(Object.entries(env).filter(([name]) => !DEVICE_VISIBILITY_VARS.includes(name)));
}

function emptyInventory(node: string): NodeInventory {
  // An unknown node has no accelerators: a pod that holds some fails UNKNOWN_ACCELERATOR naming it.
  return NodeInventory.fromPartial({ nodeName: node });
}
