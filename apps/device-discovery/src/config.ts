import { hostname } from 'os';
import { bool, ConfigOf, defineConfig, duration, file, int, list, servicePorts, sharedConfigFields, str } from '@gpufleet/config';

export const PROVIDER_NAMES = ['auto', 'nvidia', 'amd', 'ascend', 'rdma', 'host', 'simulated'] as const;

export const DEVICE_PLUGIN_MODES = ['whole', 'shared', 'slice'] as const;

export const agentConfigSchema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50052, http: 8081 }),
  NODE_NAME: str({
    default: hostname().toLowerCase(),
    pattern: /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/,
    patternDesc: 'a DNS-1123 node name (lower-case letters, digits, "-" and ".")',
    desc: 'Name of the node this agent reports; in Kubernetes, spec.nodeName from the downward API.',
  }),
  GPUFLEET_PROVIDERS: list({
    default: ['auto'],
    of: str({ choices: PROVIDER_NAMES, desc: 'a device provider' }),
    desc: '"auto" (every vendor tool found, plus rdma and host), "simulated", or an explicit list such as "nvidia,rdma,host".',
  }),
  GPUFLEET_FLEET_FILE: file({ optional: true, desc: 'Fleet file (YAML) the simulated provider reads; required with GPUFLEET_PROVIDERS=simulated.' }),
  SIMULATED_NODES: list({
    default: [],
    of: str({ pattern: /^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/, patternDesc: '"*" or a node name', desc: 'a node of the fleet file' }),
    desc: 'With GPUFLEET_PROVIDERS=simulated: fleet-file nodes this one agent presents, each as a node of its own ("*": every node of the file; NODE_NAME is then not used). Empty: NODE_NAME alone.',
  }),
  HOST_ROOT: str({ default: '/', desc: 'Where the host filesystem is mounted (/host in a container); /proc and /sys are read under it.' }),
  HEARTBEAT_INTERVAL_S: duration({ default: 15, min: 0.1, desc: 'Seconds between heartbeats.' }),
  DETECT_INTERVAL_S: duration({ default: 30, min: 1, desc: 'Seconds between detection passes; the inventory is republished only when it changed.' }),
  NODE_LABELS: list({ default: [], of: str({ pattern: /^[^=]+=.*$/, patternDesc: 'key=value', desc: 'a label' }), desc: 'Extra node labels, "key=value" comma-separated; they win over computed labels.' }),
  DEVICE_PLUGIN: str({ default: 'off', choices: ['on', 'off'], desc: 'Serve the kubelet device plugin API (one plugin per gpufleet.io resource) and register with the kubelet.' }),
  DEVICE_PLUGIN_DIR: str({ default: '/var/lib/kubelet/device-plugins', desc: "The kubelet's device-plugins directory: kubelet.sock and the plugins' sockets." }),
  POD_RESOURCES_DIR: str({ default: '/var/lib/kubelet/pod-resources', desc: "The kubelet's pod-resources directory (kubelet.sock of the PodResourcesLister API)." }),
  POD_RESOURCES_INTERVAL_S: duration({
    default: 10,
    min: 1,
    max: 3600,
    desc: "With DEVICE_PLUGIN=on: seconds between reads of the kubelet's pod-resources API; what it reports (devices assigned to Pods, devices allocatable) is written to the kubelet-devices bucket when it changed.",
  }),
  DEVICE_PLUGIN_MODES: list({
    default: ['whole'],
    of: str({ choices: DEVICE_PLUGIN_MODES, desc: 'an allocation mode' }),
    desc: 'Modes offered on cards without MIG, each as its own resource (…-gpu, …-gpu-shared, …-gpu-slice); MIG cards offer their partitions. Several modes offer the same cards: see docs/device-discovery.md.',
  }),
  DEVICE_PLUGIN_SHARED_REPLICAS: int({ default: 10, min: 1, max: 1000, desc: 'Units per card of a …-shared resource (time-sliced).' }),
  DEVICE_PLUGIN_SLICES: int({ default: 4, min: 1, max: 1000, desc: 'Units per card of a …-slice resource; each is that fraction of the memory and compute.' }),
  DEVICE_PLUGIN_UNHEALTHY_AFTER: int({ default: 3, min: 1, max: 1000, desc: 'Consecutive bad health observations (failed probe, card missing from a detection pass, non-fatal XID) that turn a card Unhealthy; a fatal XID does at once.' }),
  DEVICE_PLUGIN_HEALTHY_AFTER: int({ default: 3, min: 1, max: 1000, desc: 'Consecutive good observations that turn an Unhealthy card Healthy again.' }),
  NFD: bool({
    default: false,
    desc: 'Publish the node\'s labels as an NFD NodeFeature (nfd.k8s-sigs.io/v1alpha1, "gpufleet-<node>" in POD_NAMESPACE) after every detection pass whose labels changed; nfd-master puts them on the Node.',
  }),
  KUBECONFIG: str({
    default: '',
    desc: 'With NFD=true: path of a kubeconfig file for the Kubernetes API; empty: the in-cluster service account (inside a Pod), else ~/.kube/config.',
  }),
  POD_NAMESPACE: str({
    default: 'gpufleet',
    pattern: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    patternDesc: 'a Kubernetes namespace name',
    desc: 'With NFD=true: namespace of the NodeFeature objects (the chart passes the Pod\'s own, from the downward API).',
  }),
}, [
  // One kubelet, one node: the plugin serves the node the agent runs on.
  (c) =>
    c.DEVICE_PLUGIN === 'on' && (c.SIMULATED_NODES.includes('*') || c.SIMULATED_NODES.length > 1)
      ? [{ variable: 'DEVICE_PLUGIN', message: `"on" serves the kubelet of one node, but SIMULATED_NODES presents several (${c.SIMULATED_NODES.join(',')})` }]
      : [],
]);

export type AgentConfig = ConfigOf<typeof agentConfigSchema.fields>;
export const AGENT_CONFIG = Symbol('AGENT_CONFIG');
