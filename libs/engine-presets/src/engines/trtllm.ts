import { DEFAULT_ENGINE_HOST, type EngineSpec, type SpecProblem } from '../engine-spec';
import { presetFor } from '../presets';
import type { EngineBuilder, EngineInvocation } from './engine-builder';
import { gangAccelerators, groupLayout, groupNetworkEnv } from './group';

/** Where the workers' SSH server is, for the MPI launcher to reach them (OpenSSH's sshd). */
export const MPI_SSHD = '/usr/sbin/sshd';

/** trtllm-serve takes speculative decoding, KV connectors and disaggregation only from a YAML options file. */
const NEEDS_YAML = 'trtllm-serve reads it only from an --extra_llm_api_options YAML file, which these presets do not write';

export const trtllmBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    if (spec.role !== 'server') problems.push({ field: 'role', message: `${spec.role}: ${NEEDS_YAML} (cache_transceiver_config); use role server` });
    if (spec.speculative) problems.push({ field: 'speculative', message: `${NEEDS_YAML} (speculative_config)` });
    if (spec.kvOffload) problems.push({ field: 'kvOffload', message: `${NEEDS_YAML} (kv_connector_config)` });
    const group = spec.group;
    if (group && group.rank === 0 && group.peerAddresses?.length !== group.size) {
      problems.push({ field: 'group.peerAddresses', message: `mpirun on the leader lists every pod's host; expected ${group.size} addresses, got ${group.peerAddresses?.length ?? 0}` });
    }
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const preset = presetFor('trtllm', spec.mode, spec.acceleratorMemoryMib);
    const group = spec.group;
    const layout = group ? groupLayout(spec, group) : { tensorParallel: spec.acceleratorsPerPod, pipelineParallel: 1 };
    if (group && group.rank > 0) {
      // A worker is a host of the leader's MPI world: mpirun reaches it over SSH and starts its
      // ranks (the MPI Operator's layout); the SSH keys come with the image.
      return { command: MPI_SSHD, args: ['-D', '-e', '-p', String(group.rendezvousPort)], takesExtraArgs: false, env: groupNetworkEnv(group) };
    }
    const env = group ? groupNetworkEnv(group) : {};
    // TRT-LLM's multi-node serving (docs: trtllm-serve, "multi-node serving"): one MPI world of
    // every accelerator, each rank under trtllm-llmapi-launch, rank 0 serving the API.
    const launcher = group
      ? [
          'mpirun',
          '--allow-run-as-root',
          '-np',
          String(gangAccelerators(spec, group)),
          '-H',
          (group.peerAddresses ?? []).map((host) => `${host}:${spec.acceleratorsPerPod}`).join(','),
          '--mca',
          'plm_rsh_args',
          `-p ${group.rendezvousPort}`,
          ...Object.keys(env).flatMap((name) => ['-x', name]),
          'trtllm-llmapi-launch',
        ]
      : undefined;
    return {
      ...(launcher ? { launcher, env } : {}),
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
        String(layout.tensorParallel),
        ...(layout.pipelineParallel > 1 ? ['--pp_size', String(layout.pipelineParallel)] : []),
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
