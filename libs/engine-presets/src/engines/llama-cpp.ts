import { DEFAULT_ENGINE_HOST, type EngineSpec, type SpecProblem } from '../engine-spec';
import { presetFor } from '../presets';
import type { EngineBuilder, EngineInvocation } from './engine-builder';

/** More layers than any model has: offload all of them to the visible accelerators. */
const ALL_LAYERS = 999;

export const llamaCppBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    if (spec.role !== 'server') problems.push({ field: 'role', message: `llama-server has no disaggregated ${spec.role} mode; use role server` });
    if (spec.speculative) problems.push({ field: 'speculative.method', message: `llama-server has no ${spec.speculative.method} speculative decoding` });
    if (spec.kvOffload) problems.push({ field: 'kvOffload', message: 'llama-server has no KV offload connector' });
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const preset = presetFor('llama-cpp', spec.mode, spec.acceleratorMemoryMib);
    return {
      command: 'llama-server',
      args: [
        '-m',
        spec.modelPath,
        '--alias',
        spec.servedModelName,
        '--host',
        spec.host ?? DEFAULT_ENGINE_HOST,
        '--port',
        String(spec.port),
        '-ngl',
        String(ALL_LAYERS),
        '-c',
        String(preset.contextTokens),
        '--parallel',
        String(preset.maxConcurrency),
      ],
    };
  },
};
