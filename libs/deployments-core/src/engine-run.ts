import type { EngineConfig, EngineRun } from '@gpufleet/contracts';
import {
  type EngineGroup,
  type EngineKind,
  type EngineMode,
  type EngineRole,
  type EngineSpec,
  type MultiNodeMode,
  type SpeculativeMethod,
} from '@gpufleet/engine-presets';

export interface EnginePlacement {
  /** As the engine is told them (indexes or UUIDs), one per accelerator. */
  acceleratorIds: readonly string[];
  acceleratorMemoryMib?: number;
  port: number;
  /** Address the engine binds; unset: every address. */
  host?: string;
  /**
   * This pod's place in a multi-node replica (the runtime resolves it: rank, leader, ports,
   * NICs). Its `mode` is taken from EngineConfig.multi_node when the runtime leaves it unset.
   */
  group?: EngineGroup;
}

/**
 * The engine-presets view of an EngineRun on its devices: proto3 leaves unset strings empty
 * and unset numbers zero, where the presets expect absent fields.
 */
export function engineSpecOf(run: Pick<EngineRun, 'role' | 'model' | 'servedModelName' | 'engine'> & Partial<Pick<EngineRun, 'gpuMemoryUtilization'>>, placement: EnginePlacement): EngineSpec {
  const engine: EngineConfig = run.engine ?? { engine: 'vllm', version: '', mode: '', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} };
  const spec: {
    -readonly [K in keyof EngineSpec]: EngineSpec[K];
  } = {
    engine: (engine.engine || 'vllm') as EngineKind,
    mode: (engine.mode || 'throughput') as EngineMode,
    role: (run.role || 'server') as EngineRole,
    modelPath: run.model,
    servedModelName: run.servedModelName || run.model,
    port: placement.port,
    acceleratorsPerPod: placement.acceleratorIds.length,
    acceleratorIds: placement.acceleratorIds,
  };
  if (engine.version) spec.version = engine.version;
  if (placement.acceleratorMemoryMib) spec.acceleratorMemoryMib = placement.acceleratorMemoryMib;
  if (run.gpuMemoryUtilization) spec.memoryFraction = run.gpuMemoryUtilization;
  if (placement.host) spec.host = placement.host;
  if (engine.speculative?.method) {
    spec.speculative = {
      method: engine.speculative.method as SpeculativeMethod,
      ...(engine.speculative.draftModel ? { draftModel: engine.speculative.draftModel } : {}),
      ...(engine.speculative.numSpeculativeTokens ? { numSpeculativeTokens: engine.speculative.numSpeculativeTokens } : {}),
    };
  }
  if (engine.kvOffload?.connector) {
    spec.kvOffload = { connector: engine.kvOffload.connector, ...(engine.kvOffload.cpuBytes ? { cpuBytes: engine.kvOffload.cpuBytes } : {}) };
  }
  if (engine.extraArgs.length > 0) spec.extraArgs = engine.extraArgs;
  if (Object.keys(engine.env).length > 0) spec.env = engine.env;
  if (engine.customCommand) spec.customTemplate = engine.customCommand;
  if (placement.group) {
    spec.group = placement.group.mode === undefined && engine.multiNode ? { ...placement.group, mode: engine.multiNode as MultiNodeMode } : placement.group;
  }
  return spec;
}
