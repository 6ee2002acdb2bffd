import { DEFAULT_ENGINE_HOST, DEFAULT_MULTI_NODE_MODE, type EngineGroup, type EngineSpec, type SpecProblem } from '../engine-spec';
import { DEFAULT_SPECULATIVE_TOKENS, presetFor } from '../presets';
import { speculativeTokens, type EngineBuilder, type EngineInvocation } from './engine-builder';
import { gangAccelerators, groupLayout, groupNetworkEnv, hostPort } from './group';

/** vLLM's disaggregated prefill/decode pairs exchange KV blocks through NIXL; both sides take kv_both. */
const DISAGGREGATION_CONNECTOR = 'NixlConnector';

export const vllmBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    if (spec.kvOffload && spec.role !== 'server') {
      problems.push({ field: 'kvOffload', message: `the ${spec.role} role already uses the ${DISAGGREGATION_CONNECTOR} for KV transfer; offload is only preset for the server role` });
    }
    const group = spec.group;
    if (group && (group.mode ?? DEFAULT_MULTI_NODE_MODE) === 'data-parallel') {
      const tp = group.layout?.tensorParallel ?? 1;
      if (spec.acceleratorsPerPod % tp !== 0) {
        problems.push({ field: 'group.layout.tensorParallel', message: `data-parallel ranks of ${tp} accelerators do not divide a pod's ${spec.acceleratorsPerPod}` });
      }
      if (group.layout && group.layout.pipelineParallel !== 1) {
        problems.push({ field: 'group.layout.pipelineParallel', message: `the data-parallel mode runs whole engine ranks per pod; expected 1, got ${group.layout.pipelineParallel} (use mode ray for pipeline parallel)` });
      }
    }
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const group = spec.group;
    if (!group) return { command: 'vllm', args: serveArgs(spec, ['--tensor-parallel-size', String(spec.acceleratorsPerPod)], true) };
    return (group.mode ?? DEFAULT_MULTI_NODE_MODE) === 'ray' ? rayGroup(spec, group) : dataParallelGroup(spec, group);
  },
};

/**
 * vLLM over Ray (docs: "Distributed inference and serving", multi-node): a Ray head on the
 * leader, `ray start --address` on every other pod, then `vllm serve` on the head with
 * tensor × pipeline parallel over every accelerator of the cluster.
 */
function rayGroup(spec: EngineSpec, group: EngineGroup): EngineInvocation {
  // vLLM binds its collectives to VLLM_HOST_IP; Ray advertises --node-ip-address: both the pod's own address.
  const env = { ...groupNetworkEnv(group), VLLM_HOST_IP: group.podAddress };
  const gpus = `--num-gpus=${spec.acceleratorsPerPod}`;
  if (group.rank > 0) {
    return {
      command: 'ray',
      args: ['start', '--block', `--address=${hostPort(group.leaderAddress, group.rendezvousPort)}`, `--node-ip-address=${group.podAddress}`, gpus, '--disable-usage-stats'],
      takesExtraArgs: false,
      env,
    };
  }
  const layout = groupLayout(spec, group);
  const parallel = ['--tensor-parallel-size', String(layout.tensorParallel), '--pipeline-parallel-size', String(layout.pipelineParallel), '--distributed-executor-backend', 'ray'];
  return {
    before: [['ray', 'start', '--head', `--node-ip-address=${group.podAddress}`, `--port=${group.rendezvousPort}`, gpus, '--disable-usage-stats']],
    command: 'vllm',
    args: serveArgs(spec, parallel, true),
    env,
  };
}

/**
 * vLLM's native multi-node data parallel (docs: "Data Parallel Deployment"): every pod runs
 * `vllm serve` with its share of the ranks; the leader serves the API and hosts the
 * coordination RPC, the others are `--headless` from their start rank on.
 */
function dataParallelGroup(spec: EngineSpec, group: EngineGroup): EngineInvocation {
  const tp = group.layout?.tensorParallel ?? 1;
  const local = spec.acceleratorsPerPod / tp;
  const parallel = [
    '--tensor-parallel-size',
    String(tp),
    '--data-parallel-size',
    String(gangAccelerators(spec, group) / tp),
    '--data-parallel-size-local',
    String(local),
    '--data-parallel-address',
    group.leaderAddress,
    '--data-parallel-rpc-port',
    String(group.rendezvousPort),
  ];
  if (group.rank > 0) parallel.push('--data-parallel-start-rank', String(group.rank * local), '--headless');
  return { command: 'vllm', args: serveArgs(spec, parallel, group.rank === 0), env: { ...groupNetworkEnv(group), VLLM_HOST_IP: group.podAddress } };
}

/** `vllm serve` with the preset's flags; `api` false for a headless rank (no API server, no host or port). */
function serveArgs(spec: EngineSpec, parallel: readonly string[], api: boolean): string[] {
  const preset = presetFor('vllm', spec.mode, spec.acceleratorMemoryMib);
  const args = [
    'serve',
    spec.modelPath,
    ...(api ? ['--served-model-name', spec.servedModelName, '--host', spec.host ?? DEFAULT_ENGINE_HOST, '--port', String(spec.port)] : ['--served-model-name', spec.servedModelName]),
    ...parallel,
    '--max-num-seqs',
    String(preset.maxConcurrency),
    '--gpu-memory-utilization',
    String(spec.memoryFraction ?? preset.memoryFraction),
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
  return args;
}
