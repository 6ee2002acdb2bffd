import { DEFAULT_ENGINE_HOST, type EngineSpec, type SpecProblem } from '../engine-spec';
import { DEFAULT_SPECULATIVE_TOKENS, presetFor } from '../presets';
import { speculativeTokens, type EngineBuilder, type EngineInvocation } from './engine-builder';
import { gangAccelerators, groupNetworkEnv, hostPort } from './group';

/** SGLang offloads KV to host memory with its hierarchical cache, not a pluggable connector. */
const HICACHE = 'hicache';
const GIB = 1024 ** 3;

export const sglangBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    if (spec.kvOffload && spec.kvOffload.connector !== HICACHE) {
      problems.push({ field: 'kvOffload.connector', message: `SGLang offloads KV through its hierarchical cache; expected "${HICACHE}", got ${JSON.stringify(spec.kvOffload.connector)}` });
    }
    if (spec.kvOffload?.cpuBytes !== undefined && spec.kvOffload.cpuBytes % GIB !== 0) {
      problems.push({ field: 'kvOffload.cpuBytes', message: `SGLang sizes the host cache in whole GiB (--hicache-size); got ${spec.kvOffload.cpuBytes} bytes` });
    }
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const preset = presetFor('sglang', spec.mode, spec.acceleratorMemoryMib);
    const group = spec.group;
    // SGLang's multi-node form (docs: "Multi-Node Deployment"): one tensor-parallel group over
    // every node (--tp-size is the gang's total), the same command on each with its --node-rank,
    // all meeting at the leader's --dist-init-addr.
    const layout = group ? (group.layout ?? { tensorParallel: gangAccelerators(spec, group), pipelineParallel: 1 }) : undefined;
    const args = [
      '-m',
      'sglang.launch_server',
      '--model-path',
      spec.modelPath,
      '--served-model-name',
      spec.servedModelName,
      '--host',
      spec.host ?? DEFAULT_ENGINE_HOST,
      '--port',
      String(spec.port),
      '--tp-size',
      String(layout?.tensorParallel ?? spec.acceleratorsPerPod),
      '--max-running-requests',
      String(preset.maxConcurrency),
      '--mem-fraction-static',
      String(spec.memoryFraction ?? preset.memoryFraction),
      '--chunked-prefill-size',
      String(preset.prefillChunkTokens),
    ];
    const speculative = spec.speculative;
    if (speculative) {
      const steps = speculativeTokens(spec, DEFAULT_SPECULATIVE_TOKENS[speculative.method]);
      if (speculative.method === 'ngram') {
        args.push('--speculative-algorithm', 'NGRAM', '--speculative-num-draft-tokens', String(steps));
      } else {
        // MTP runs through SGLang's EAGLE path with the model's own next-token heads.
        args.push('--speculative-algorithm', speculative.method === 'eagle3' ? 'EAGLE3' : 'EAGLE');
        if (speculative.draftModel) args.push('--speculative-draft-model-path', speculative.draftModel);
        // A single chain (topk 1) verifies steps + 1 tokens per step.
        args.push('--speculative-num-steps', String(steps), '--speculative-eagle-topk', '1', '--speculative-num-draft-tokens', String(steps + 1));
      }
    }
    if (group && layout) {
      if (layout.pipelineParallel > 1) args.push('--pp-size', String(layout.pipelineParallel));
      args.push('--dist-init-addr', hostPort(group.leaderAddress, group.rendezvousPort), '--nnodes', String(group.size), '--node-rank', String(group.rank));
    }
    if (spec.role !== 'server') args.push('--disaggregation-mode', spec.role);
    if (spec.kvOffload) {
      args.push('--enable-hierarchical-cache');
      if (spec.kvOffload.cpuBytes !== undefined) args.push('--hicache-size', String(spec.kvOffload.cpuBytes / GIB));
    }
    return { command: 'python3', args, ...(group ? { env: groupNetworkEnv(group) } : {}) };
  },
};
