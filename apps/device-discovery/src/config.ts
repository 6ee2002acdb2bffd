import { hostname } from 'os';
import { ConfigOf, defineConfig, duration, file, list, servicePorts, sharedConfigFields, str } from '@gpufleet/config';

export const PROVIDER_NAMES = ['auto', 'nvidia', 'amd', 'ascend', 'rdma', 'host', 'simulated'] as const;

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
});

export type AgentConfig = ConfigOf<typeof agentConfigSchema.fields>;
export const AGENT_CONFIG = Symbol('AGENT_CONFIG');
