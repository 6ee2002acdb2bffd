import { DEFAULT_ENGINE_HOST, type EngineSpec, type SpecProblem } from '../engine-spec';
import { presetFor } from '../presets';
import type { EngineBuilder, EngineInvocation } from './engine-builder';

/** trtllm-serve takes speculative decoding, KV connectors and disaggregation only from a YAML options file. */
const NEEDS_YAML = 'trtllm-serve reads it only from an --extra_llm_api_options YAML file, which these presets do not write';

export const trtllmBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    if (spec.role !== 'server') problems.push({ field: 'role', message: `${spec.role}: ${NEEDS_YAML} (cache_transceiver_config); use role server` });
    if (spec.speculative) problems.push({ field: 'speculative', message: `${NEEDS_YAML} (speculative_config)` });
    if (spec.kvOffload) problems.push({ field: 'kvOffload', message: `${NEEDS_YAML} (kv_connector_config)` });
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const preset = presetFor('trtllm', spec.mode, spec.acceleratorMemoryMib);
    return {
      command: 'trtllm-serve',
      args: [
        spec.modelPath,
        '--served_model_name',
        spec.servedModelName,
        '--host',
        spec.host ?? DEFAULT_ENGINE_HOST,
        '--port',
        String(spec.port),
        '--backend',
        'pytorch',
        '--tp_size',
        String(spec.acceleratorsPerPod),
        '--max_batch_size',
        String(preset.maxConcurrency),
        '--max_num_tokens',
        String(preset.prefillChunkTokens),
        '--kv_cache_free_gpu_memory_fraction',
        String(preset.memoryFraction),
      ],
    };
  },
};
