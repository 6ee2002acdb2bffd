import { EngineConfig, ModelDeploymentSpec, ModelSizing, SpeculativeConfig } from '@gpufleet/contracts';
import { KV_CACHE_DTYPES, MAX_SIZING_CONCURRENCY, MAX_SIZING_CONTEXT_LENGTH } from '@gpufleet/deployments-core';
import { ENGINE_KINDS, ENGINE_MODES, MULTI_NODE_MODES, SPECULATIVE_METHODS } from '@gpufleet/engine-presets';
import { checkDnsLabel, checkRange, parseEnvPairs, parseSecretRefs } from '../flags';
import { podShapeFromFlags } from '../pod-shape';

/** ModelDeploymentSpec.name: a DNS-1123 label of at most this many characters. */
export const DEPLOYMENT_NAME_MAX = 40;

/** The flags of `gpufleet deploy MODEL`, as commander hands them over. */
export interface DeployFlags {
  name?: string;
  /** A ModelArtifact of the namespace whose cached copy the engine loads. */
  artifact?: string;
  namespace?: string;
  queue?: string;
  engine?: string;
  engineVersion?: string;
  multiNode?: string;
  topology?: string;
  mode?: string;
  replicas?: number;
  instanceType?: string;
  accelerators?: number;
  vcpu?: number;
  /** MiB */
  memory?: number;
  size?: number;
  servedModelName?: string;
  command?: string;
  arg?: string[];
  env?: string[];
  /** `VAR=SECRET/KEY`, repeatable. */
  envSecret?: string[];
  speculative?: string;
  draftModel?: string;
  /** Sizing (ModelSizing): tokens of one sequence; the model's own when left out. */
  contextLength?: number;
  /** Sequences of contextLength the KV cache must hold at once. */
  concurrency?: number;
  /** As typed: a fraction in (0, 1]. */
  gpuMemoryUtilization?: string;
  kvCacheDtype?: string;
  autoTensorParallel?: boolean;
}

/**
 * A deployment name from a model reference: its last path segment, lower-cased, every run of
 * other characters turned into one '-', cut to 40 characters. "meta-llama/Llama-3.1-8B-Instruct"
 * becomes "llama-3-1-8b-instruct"; "/models/qwen.gguf" becomes "qwen".
 */
export function deploymentNameFromModel(model: string): string {
  const segment = model.trim().replace(/[/\\]+$/, '').split(/[/\\]/).pop() ?? '';
  const name = segment
    .replace(/\.gguf$/i, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, DEPLOYMENT_NAME_MAX)
    .replace(/-+$/, '');
  if (!name) throw new Error(`cannot derive a deployment name from the model ${JSON.stringify(model)}; pass --name NAME`);
  return name;
}

/** scheduling-core's TOPOLOGY_LEVELS, narrowest first (the scheduler names them in its refusals). */
const TOPOLOGY_LEVEL_NAMES = ['node', 'nvlink-domain', 'rack', 'zone'];

function oneOf(value: string, allowed: readonly string[], flag: string): string {
  if (!allowed.includes(value)) throw new Error(`${flag} ${value}: expected one of ${allowed.join(', ')}`);
  return value;
}

function speculativeFromFlags(f: DeployFlags): SpeculativeConfig | undefined {
  if (f.speculative === undefined) {
    if (f.draftModel !== undefined) throw new Error('--draft-model is the draft head of --speculative eagle3; add --speculative eagle3');
    return undefined;
  }
  const method = oneOf(f.speculative, SPECULATIVE_METHODS, '--speculative');
  if (method === 'eagle3' && !f.draftModel) throw new Error('--speculative eagle3 needs --draft-model PATH (the EAGLE-3 draft head)');
  if (method !== 'eagle3' && f.draftModel !== undefined) {
    throw new Error(`--draft-model: --speculative ${method} uses no draft model (${method === 'mtp' ? 'the MTP heads are part of the model' : 'n-grams come from the prompt'}); drop it`);
  }
  return { method, draftModel: f.draftModel ?? '', numSpeculativeTokens: 0 };
}

function envFromFlags(f: Pick<DeployFlags, 'env' | 'envSecret'>): Pick<EngineConfig, 'env' | 'envFromSecret'> {
  const env = parseEnvPairs(f.env, '--env');
  return { env, envFromSecret: parseSecretRefs(f.envSecret, '--env-secret', env) };
}

function engineFromFlags(f: DeployFlags): EngineConfig {
  // A command template alone means the custom engine.
  const engine = oneOf(f.engine ?? (f.command !== undefined ? 'custom' : 'vllm'), ENGINE_KINDS, '--engine');
  if (engine === 'custom' && !f.command?.trim()) {
    throw new Error('--engine custom needs --command TEMPLATE (e.g. "my-server --model {{model_path}} --port {{port}}")');
  }
  if (engine !== 'custom' && f.command !== undefined) {
    throw new Error(`--command is the command template of --engine custom; --engine ${engine} builds its own command (pass extra flags with --arg)`);
  }
  return {
    engine,
    version: f.engineVersion ?? '',
    multiNode: f.multiNode === undefined ? '' : oneOf(f.multiNode, MULTI_NODE_MODES, '--multi-node'),
    mode: f.mode === undefined ? '' : oneOf(f.mode, ENGINE_MODES, '--mode'),
    customCommand: f.command?.trim() ?? '',
    extraArgs: [...(f.arg ?? [])],
    ...envFromFlags(f),
    speculative: speculativeFromFlags(f),
    kvOffload: undefined,
  };
}

/**
 * The sizing flags as `spec.sizing`, or undefined when none is given (the scheduler then sizes
 * with the model's own context, one sequence and the preset's memory share). Only the form is
 * checked here; whether the model fits is the scheduler's answer (INSUFFICIENT_GPU_MEMORY).
 * Without an artifact the flags still reach the engine (vLLM --max-model-len, …); nothing is
 * estimated.
 */
export function sizingFromFlags(f: DeployFlags, artifact: string): ModelSizing | undefined {
  const given = [f.contextLength, f.concurrency, f.gpuMemoryUtilization, f.kvCacheDtype].some((v) => v !== undefined) || f.autoTensorParallel === true;
  if (!given) return undefined;
  const contextLength = f.contextLength === undefined ? 0 : checkRange(f.contextLength, 1, MAX_SIZING_CONTEXT_LENGTH, '--context-length', 'tokens of one sequence');
  const concurrency = f.concurrency === undefined ? 0 : checkRange(f.concurrency, 1, MAX_SIZING_CONCURRENCY, '--concurrency', 'sequences the KV cache holds at once');
  let gpuMemoryUtilization = 0;
  if (f.gpuMemoryUtilization !== undefined) {
    const raw = f.gpuMemoryUtilization.trim();
    gpuMemoryUtilization = /^(\d+(\.\d*)?|\.\d+)$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(gpuMemoryUtilization > 0 && gpuMemoryUtilization <= 1)) {
      throw new Error(`--gpu-memory-utilization ${f.gpuMemoryUtilization}: expected a fraction of each GPU's memory in (0, 1], e.g. 0.9`);
    }
  }
  const kvCacheDtype = f.kvCacheDtype === undefined ? '' : oneOf(f.kvCacheDtype, KV_CACHE_DTYPES, '--kv-cache-dtype');
  if (f.autoTensorParallel) {
    if (!artifact) throw new Error("--auto-tensor-parallel sizes by the model of an artifact; add --artifact NAME");
    if (!f.instanceType) throw new Error('--auto-tensor-parallel picks the <pool>.<N>x sibling of an InstanceType; add --instance-type (e.g. h100-80gb-hbm3-x86-64.1x)');
    if ((f.size ?? 1) !== 1) throw new Error(`--auto-tensor-parallel chooses tensor parallel within one node; drop --size ${f.size}`);
  }
  return { contextLength, concurrency, gpuMemoryUtilization, kvCacheDtype, autoTensorParallel: f.autoTensorParallel === true };
}

/** `gpufleet deploy MODEL [flags]` as the CreateDeployment spec: one "server" role. */
export function deploymentSpecFromFlags(model: string, f: DeployFlags): ModelDeploymentSpec {
  const artifact = f.artifact === undefined ? '' : checkDnsLabel(f.artifact, 63, '--artifact');
  if (!model.trim() && !artifact) throw new Error('MODEL: expected a model path or reference, e.g. /models/llama-3.1-8b or meta-llama/Llama-3.1-8B-Instruct, or --artifact NAME');
  const name = f.name !== undefined ? checkDnsLabel(f.name, DEPLOYMENT_NAME_MAX, '--name') : deploymentNameFromModel(model.trim() || artifact);
  const namespace = checkDnsLabel(f.namespace ?? 'default', 63, '--namespace');
  const localQueue = checkDnsLabel(f.queue ?? 'default', 63, '--queue');
  const shape = podShapeFromFlags({ instanceType: f.instanceType, accelerators: f.accelerators, vcpu: f.vcpu, memory: f.memory });
  const size = checkRange(f.size ?? 1, 1, 4294967295, '--size', 'pods per replica');
  return {
    name,
    namespace,
    localQueue,
    priority: 0,
    model: model.trim(),
    artifact,
    servedModelName: f.servedModelName ?? '',
    engine: engineFromFlags(f),
    roles: [
      {
        role: 'server',
        replicas: f.replicas ?? 1,
        size,
        instanceType: shape.instanceType,
        resources: shape.resources,
        topology: f.topology === undefined ? undefined : { requiredLevel: oneOf(f.topology, TOPOLOGY_LEVEL_NAMES, '--topology'), preferredLevel: '' },
        extraArgs: [],
        env: {},
        envFromSecret: {},
      },
    ],
    labels: {},
    sizing: sizingFromFlags(f, artifact),
  };
}
