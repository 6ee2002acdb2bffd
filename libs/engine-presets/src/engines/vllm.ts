import { DEFAULT_ENGINE_HOST, type EngineSpec, type SpecProblem } from '../engine-spec';
import { DEFAULT_SPECULATIVE_TOKENS, presetFor } from '../presets';
import { speculativeTokens, type EngineBuilder, type EngineInvocation } from './engine-builder';

/** vLLM's disaggregated prefill/decode pairs exchange KV blocks through NIXL; both sides take kv_both. */
const DISAGGREGATION_CONNECTOR = 'NixlConnector';

export const vllmBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    if (spec.kvOffload && spec.role !== 'server') {
      return [{ field: 'kvOffload', message: `the ${spec.role} role already uses the ${DISAGGREGATION_CONNECTOR} for KV transfer; offload is only preset for the server role` }];
    }
    return [];
  },

  build(spec: EngineSpec): EngineInvocation {
    const preset = presetFor('vllm', spec.mode, spec.acceleratorMemoryMib);
    const args = [
      'serve',
      spec.modelPath,
      '--served-model-name',
      spec.servedModelName,
      '--host',
      spec.host ?? DEFAULT_ENGINE_HOST,
      '--port',
      String(spec.port),
      '--tensor-parallel-size',
      String(spec.acceleratorsPerPod),
      '--max-num-seqs',
      String(preset.maxConcurrency),
      '--gpu-memory-utilization',
      String(preset.memoryFraction),
      '--enable-chunked-prefill',
      '--max-num-batched-tokens',
      String(preset.prefillChunkTokens),
    ];
    const speculative = spec.speculative;
    if (speculative) {
      const config: Record<string, string | number> = { method: speculative.method };
      if (speculative.draftModel) config.model = speculative.draftModel;
      config.num_speculative_tokens = speculativeTokens(spec, DEFAULT_SPECULATIVE_TOKENS[speculative.method]);
      // n-gram lookup window over the prompt; vLLM requires it for ngram.
      if (speculative.method === 'ngram') config.prompt_lookup_max = 4;
      args.push('--speculative-config', JSON.stringify(config));
    }
    if (spec.role !== 'server') {
      args.push('--kv-transfer-config', JSON.stringify({ kv_connector: DISAGGREGATION_CONNECTOR, kv_role: 'kv_both' }));
    } else if (spec.kvOffload) {
      const extra = spec.kvOffload.cpuBytes === undefined ? undefined : { cpu_bytes_to_use: spec.kvOffload.cpuBytes };
      args.push('--kv-transfer-config', JSON.stringify({ kv_connector: spec.kvOffload.connector, kv_role: 'kv_both', ...(extra ? { kv_connector_extra_config: extra } : {}) }));
    }
    return { command: 'vllm', args };
  },
};
