import {
  ENGINE_KINDS,
  ENGINE_MODES,
  ENGINE_ROLES,
  EngineSpecError,
  MULTI_NODE_MODES,
  type EngineGroup,
  SPECULATIVE_METHODS,
  type EngineSpec,
  type SpecProblem,
} from './engine-spec';
import { MINIMUM_VERSIONS } from './presets';

/** Variables the builder owns; a spec that set them would silently move the engine onto other devices. */
const RESERVED_ENV = ['CUDA_VISIBLE_DEVICES'];

const isPositiveInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0;
const isNonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.trim().length > 0;

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** Checks what every engine needs; engine-specific refusals live with each builder. Throws EngineSpecError. */
export function validateEngineSpec(spec: EngineSpec): void {
  const problems: SpecProblem[] = [];
  const problem = (field: string, message: string): void => {
    problems.push({ field, message });
  };

  if (!ENGINE_KINDS.includes(spec.engine)) problem('engine', `expected one of ${ENGINE_KINDS.join(' | ')}, got ${JSON.stringify(spec.engine)}`);
  if (!ENGINE_MODES.includes(spec.mode)) problem('mode', `expected one of ${ENGINE_MODES.join(' | ')}, got ${JSON.stringify(spec.mode)}`);
  if (!ENGINE_ROLES.includes(spec.role)) problem('role', `expected one of ${ENGINE_ROLES.join(' | ')}, got ${JSON.stringify(spec.role)}`);
  if (!isNonEmptyString(spec.modelPath)) problem('modelPath', 'expected a non-empty model path');
  // Both become command-line arguments: one that starts with "-" would be read as an engine flag.
  else if (spec.modelPath.startsWith('-')) problem('modelPath', `expected a model path or hub id, not something that starts with "-" (it would be read as an engine flag), got ${JSON.stringify(spec.modelPath)}`);
  if (!isNonEmptyString(spec.servedModelName)) problem('servedModelName', 'expected a non-empty model name');
  else if (spec.servedModelName.startsWith('-')) problem('servedModelName', `expected a model name that does not start with "-" (it would be read as an engine flag), got ${JSON.stringify(spec.servedModelName)}`);
  if (spec.host !== undefined && !/^[A-Za-z0-9.:[\]-]+$/.test(spec.host)) problem('host', `expected an IP address or host name, got ${JSON.stringify(spec.host)}`);
  if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535) problem('port', `expected an integer in 1..65535, got ${JSON.stringify(spec.port)}`);

  if (!isPositiveInteger(spec.acceleratorsPerPod)) {
    problem('acceleratorsPerPod', `expected a positive integer, got ${JSON.stringify(spec.acceleratorsPerPod)}`);
  }
  if (!Array.isArray(spec.acceleratorIds)) {
    problem('acceleratorIds', 'expected a list of accelerator ids');
  } else {
    if (isPositiveInteger(spec.acceleratorsPerPod) && spec.acceleratorIds.length !== spec.acceleratorsPerPod) {
      problem('acceleratorIds', `expected ${spec.acceleratorsPerPod} ids (acceleratorsPerPod), got ${spec.acceleratorIds.length}`);
    }
    spec.acceleratorIds.forEach((id, i) => {
      if (!isNonEmptyString(id) || /[\s,]/.test(id)) problem(`acceleratorIds[${i}]`, `expected an index or UUID without spaces or commas, got ${JSON.stringify(id)}`);
      else if (spec.acceleratorIds.indexOf(id) !== i) problem(`acceleratorIds[${i}]`, `${id} is listed twice`);
    });
  }
  if (spec.acceleratorMemoryMib !== undefined && !isPositiveInteger(spec.acceleratorMemoryMib)) {
    problem('acceleratorMemoryMib', `expected a positive integer (MiB), got ${JSON.stringify(spec.acceleratorMemoryMib)}`);
  }

  if (spec.memoryFraction !== undefined && !(Number.isFinite(spec.memoryFraction) && spec.memoryFraction > 0 && spec.memoryFraction <= 1)) {
    problem('memoryFraction', `expected a fraction in (0, 1], got ${JSON.stringify(spec.memoryFraction)}`);
  }

  if (spec.version !== undefined) {
    const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(spec.version);
    const minimum = MINIMUM_VERSIONS[spec.engine];
    if (minimum && !match) problem('version', `expected a release like ${minimum}, got ${JSON.stringify(spec.version)}`);
    else if (minimum && match) {
      const have = match.slice(1).map((part) => Number(part ?? 0));
      if (compareVersions(have, minimum.split('.').map(Number)) < 0) problem('version', `presets target ${spec.engine} >= ${minimum}, got ${spec.version}`);
    }
  }

  const speculative = spec.speculative;
  if (speculative !== undefined) {
    if (!SPECULATIVE_METHODS.includes(speculative.method)) {
      problem('speculative.method', `expected one of ${SPECULATIVE_METHODS.join(' | ')}, got ${JSON.stringify(speculative.method)}`);
    } else if (speculative.method === 'eagle3' && !isNonEmptyString(speculative.draftModel)) {
      problem('speculative.draftModel', 'expected a draft model path for eagle3');
    } else if (speculative.method !== 'eagle3' && speculative.draftModel !== undefined) {
      problem(
        'speculative.draftModel',
        speculative.method === 'mtp' ? 'mtp drafts with the heads inside the target model; remove draftModel' : 'ngram drafts from the prompt itself; remove draftModel',
      );
    }
    const tokens = speculative.numSpeculativeTokens;
    if (tokens !== undefined && (!isPositiveInteger(tokens) || tokens > 16)) {
      problem('speculative.numSpeculativeTokens', `expected an integer in 1..16, got ${JSON.stringify(tokens)}`);
    }
    if (spec.role === 'prefill') problem('speculative', 'a prefill role generates no tokens to speculate on; set it on the decode role');
  }

  if (spec.kvOffload !== undefined) {
    if (!isNonEmptyString(spec.kvOffload.connector)) problem('kvOffload.connector', 'expected a connector name');
    if (spec.kvOffload.cpuBytes !== undefined && !isPositiveInteger(spec.kvOffload.cpuBytes)) {
      problem('kvOffload.cpuBytes', `expected a positive integer (bytes), got ${JSON.stringify(spec.kvOffload.cpuBytes)}`);
    }
  }

  (spec.extraArgs ?? []).forEach((arg, i) => {
    if (typeof arg !== 'string' || arg.length === 0) problem(`extraArgs[${i}]`, 'expected a non-empty string');
  });
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (RESERVED_ENV.includes(name)) problem(`env.${name}`, 'set from acceleratorIds; change acceleratorIds instead');
    else if (typeof value !== 'string') problem(`env.${name}`, `expected a string, got ${JSON.stringify(value)}`);
  }

  if (spec.group !== undefined) validateGroup(spec, spec.group, problem);

  if (spec.engine === 'custom' && !isNonEmptyString(spec.customTemplate)) problem('customTemplate', 'expected a command template for the custom engine');
  if (spec.engine !== 'custom' && spec.customTemplate !== undefined) problem('customTemplate', `only the custom engine takes a template; ${spec.engine} builds its own command`);

  if (problems.length > 0) throw new EngineSpecError(problems);
}

const ADDRESS = /^[A-Za-z0-9.:[\]-]+$/;
/**
 * `$(POD_IP)`: a variable the container runtime expands in the command line (Kubernetes'
 * dependent environment variables), for an address only known once the pod runs (its pod IP).
 */
const ENV_REFERENCE = /^\$\([A-Za-z_][A-Za-z0-9_]*\)$/;
const isAddress = (value: unknown): boolean => isNonEmptyString(value) && (ADDRESS.test(value) || ENV_REFERENCE.test(value));
const NIC_NAME = /^[A-Za-z0-9_.:-]+$/;
/** Engines with a multi-node form; llama.cpp's RPC backend and custom commands have none preset. */
const GROUP_ENGINES = ['vllm', 'sglang', 'trtllm'];

function validateGroup(spec: EngineSpec, group: EngineGroup, problem: (field: string, message: string) => void): void {
  if (!GROUP_ENGINES.includes(spec.engine)) {
    problem('group', `${spec.engine} has no multi-node preset; use one pod per replica (size 1) or one of ${GROUP_ENGINES.join(', ')}`);
    return;
  }
  if (!Number.isInteger(group.size) || group.size < 2) problem('group.size', `expected an integer of at least 2 pods, got ${JSON.stringify(group.size)}`);
  if (!Number.isInteger(group.rank) || group.rank < 0 || group.rank >= group.size) problem('group.rank', `expected an integer in 0..${group.size - 1}, got ${JSON.stringify(group.rank)}`);
  if (!isAddress(group.leaderAddress)) problem('group.leaderAddress', `expected an IP address, a host name or a $(VARIABLE) reference, got ${JSON.stringify(group.leaderAddress)}`);
  if (!isAddress(group.podAddress)) problem('group.podAddress', `expected an IP address, a host name or a $(VARIABLE) reference, got ${JSON.stringify(group.podAddress)}`);
  if (!Number.isInteger(group.rendezvousPort) || group.rendezvousPort < 1 || group.rendezvousPort > 65535) {
    problem('group.rendezvousPort', `expected an integer in 1..65535, got ${JSON.stringify(group.rendezvousPort)}`);
  } else if (group.rank === 0 && group.rendezvousPort === spec.port) {
    problem('group.rendezvousPort', `the leader serves the API on ${spec.port}; the rendezvous needs a port of its own`);
  }
  if (group.mode !== undefined) {
    if (spec.engine !== 'vllm') problem('group.mode', `only vLLM has a choice of multi-node mode; ${spec.engine} has one form, remove the mode`);
    else if (!MULTI_NODE_MODES.includes(group.mode)) problem('group.mode', `expected one of ${MULTI_NODE_MODES.join(' | ')}, got ${JSON.stringify(group.mode)}`);
  }
  if (group.layout !== undefined) {
    const { tensorParallel: tp, pipelineParallel: pp } = group.layout;
    const gang = group.size * spec.acceleratorsPerPod;
    if (!isPositiveInteger(tp) || !isPositiveInteger(pp)) problem('group.layout', `expected positive integer sizes, got tensor ${JSON.stringify(tp)} × pipeline ${JSON.stringify(pp)}`);
    else if (!(spec.engine === 'vllm' && group.mode === 'data-parallel') && tp * pp !== gang) {
      problem('group.layout', `tensor ${tp} × pipeline ${pp} = ${tp * pp} accelerators, but the gang has ${group.size} pods × ${spec.acceleratorsPerPod} = ${gang}`);
    }
  }
  group.peerAddresses?.forEach((address, i) => {
    if (!isAddress(address)) problem(`group.peerAddresses[${i}]`, `expected an IP address, a host name or a $(VARIABLE) reference, got ${JSON.stringify(address)}`);
  });
  for (const [field, names] of [['socketInterfaces', group.network?.socketInterfaces ?? []], ['ibHcas', group.network?.ibHcas ?? []]] as const) {
    names.forEach((name, i) => {
      if (!NIC_NAME.test(name)) problem(`group.network.${field}[${i}]`, `expected an interface or device name, got ${JSON.stringify(name)}`);
    });
  }
}
