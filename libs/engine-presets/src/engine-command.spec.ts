import { buildEngineCommand, EngineSpecError, type EngineSpec } from './index';

const base: EngineSpec = {
  engine: 'vllm',
  mode: 'throughput',
  role: 'server',
  modelPath: '/models/llama-3.1-70b',
  servedModelName: 'llama-70b',
  port: 8001,
  acceleratorsPerPod: 4,
  acceleratorIds: ['0', '1', '2', '3'],
  acceleratorMemoryMib: 81559,
};

const line = (spec: EngineSpec): string => {
  const { command, args } = buildEngineCommand(spec);
  return [command, ...args].join(' ');
};

const problemsOf = (spec: EngineSpec): string => {
  try {
    buildEngineCommand(spec);
  } catch (error) {
    if (error instanceof EngineSpecError) return error.message;
    throw error;
  }
  throw new Error('expected EngineSpecError');
};

describe('vLLM', () => {
  it('vLLM throughput on 4×H100 sets --tensor-parallel-size 4 and --max-num-seqs 256', () => {
    expect(buildEngineCommand(base)).toEqual({
      command: 'vllm',
      args: [
        'serve', '/models/llama-3.1-70b', '--served-model-name', 'llama-70b', '--host', '0.0.0.0', '--port', '8001',
        '--tensor-parallel-size', '4', '--max-num-seqs', '256', '--gpu-memory-utilization', '0.92',
        '--enable-chunked-prefill', '--max-num-batched-tokens', '8192',
      ],
      env: { CUDA_VISIBLE_DEVICES: '0,1,2,3' },
    });
  });

  it('vLLM latency on 1 GPU keeps 32 sequences and 2048-token prefill chunks', () => {
    expect(line({ ...base, mode: 'latency', acceleratorsPerPod: 1, acceleratorIds: ['GPU-7f3a'] })).toBe(
      'vllm serve /models/llama-3.1-70b --served-model-name llama-70b --host 0.0.0.0 --port 8001 --tensor-parallel-size 1 --max-num-seqs 32 --gpu-memory-utilization 0.9 --enable-chunked-prefill --max-num-batched-tokens 2048',
    );
  });

  it('vLLM on a 24 GiB card caps --gpu-memory-utilization at 0.85', () => {
    expect(buildEngineCommand({ ...base, acceleratorMemoryMib: 24576 }).args).toContain('0.85');
  });

  it('a memory share from the deployment’s sizing replaces the preset’s, for vLLM and SGLang alike', () => {
    const vllm = buildEngineCommand({ ...base, memoryFraction: 0.8 }).args;
    expect(vllm.slice(vllm.indexOf('--gpu-memory-utilization'), vllm.indexOf('--gpu-memory-utilization') + 2)).toEqual(['--gpu-memory-utilization', '0.8']);
    expect(vllm.filter((a) => a === '--gpu-memory-utilization')).toHaveLength(1);
    const sglang = buildEngineCommand({ ...base, engine: 'sglang', memoryFraction: 0.8 }).args;
    expect(sglang[sglang.indexOf('--mem-fraction-static') + 1]).toBe('0.8');
  });

  it('vLLM with eagle3 passes the draft head in --speculative-config', () => {
    const { args } = buildEngineCommand({ ...base, speculative: { method: 'eagle3', draftModel: '/models/eagle3-head' } });
    expect(args.slice(-2)).toEqual(['--speculative-config', '{"method":"eagle3","model":"/models/eagle3-head","num_speculative_tokens":3}']);
  });

  it('vLLM with mtp speculates one token with the model’s own heads', () => {
    const { args } = buildEngineCommand({ ...base, speculative: { method: 'mtp' } });
    expect(args.slice(-2)).toEqual(['--speculative-config', '{"method":"mtp","num_speculative_tokens":1}']);
  });

  it('vLLM with ngram sets a prompt lookup window', () => {
    const { args } = buildEngineCommand({ ...base, speculative: { method: 'ngram', numSpeculativeTokens: 5 } });
    expect(args.slice(-2)).toEqual(['--speculative-config', '{"method":"ngram","num_speculative_tokens":5,"prompt_lookup_max":4}']);
  });

  it('vLLM with CPU KV offload sets --kv-transfer-config with cpu_bytes_to_use', () => {
    const { args } = buildEngineCommand({ ...base, kvOffload: { connector: 'OffloadingConnector', cpuBytes: 64_000_000_000 } });
    expect(args.slice(-2)).toEqual([
      '--kv-transfer-config',
      '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":64000000000}}',
    ]);
  });

  it('vLLM prefill and decode roles exchange KV through the NixlConnector', () => {
    for (const role of ['prefill', 'decode'] as const) {
      expect(buildEngineCommand({ ...base, role }).args.slice(-2)).toEqual(['--kv-transfer-config', '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']);
    }
  });

  it('vLLM decode role refuses KV offload on top of the NIXL transfer', () => {
    expect(problemsOf({ ...base, role: 'decode', kvOffload: { connector: 'OffloadingConnector' } })).toBe(
      'INVALID_ENGINE_SPEC: kvOffload: the decode role already uses the NixlConnector for KV transfer; offload is only preset for the server role',
    );
  });

  it('extra args come last and env is merged with CUDA_VISIBLE_DEVICES', () => {
    const command = buildEngineCommand({ ...base, extraArgs: ['--max-model-len', '32768'], env: { HF_HOME: '/cache' } });
    expect(command.args.slice(-2)).toEqual(['--max-model-len', '32768']);
    expect(command.env).toEqual({ HF_HOME: '/cache', CUDA_VISIBLE_DEVICES: '0,1,2,3' });
  });

  it('extra args may not repeat a preset flag, in either spelling', () => {
    expect(problemsOf({ ...base, extraArgs: ['--enable-prefix-caching', '--max_num_seqs=8'] })).toBe(
      'INVALID_ENGINE_SPEC: extraArgs[1]: --max_num_seqs is already set by the preset or the spec; change the spec instead',
    );
  });
});

describe('SGLang', () => {
  const sglang: EngineSpec = { ...base, engine: 'sglang' };

  it('SGLang throughput on 4×H100 sets --tp-size 4 and --max-running-requests 256', () => {
    expect(line(sglang)).toBe(
      'python3 -m sglang.launch_server --model-path /models/llama-3.1-70b --served-model-name llama-70b --host 0.0.0.0 --port 8001 --tp-size 4 --max-running-requests 256 --mem-fraction-static 0.88 --chunked-prefill-size 8192',
    );
  });

  it('SGLang latency decode role with eagle3 sets EAGLE3, a single-chain draft and --disaggregation-mode decode', () => {
    expect(line({ ...sglang, mode: 'latency', role: 'decode', speculative: { method: 'eagle3', draftModel: '/models/eagle3-head', numSpeculativeTokens: 4 } })).toBe(
      'python3 -m sglang.launch_server --model-path /models/llama-3.1-70b --served-model-name llama-70b --host 0.0.0.0 --port 8001 --tp-size 4 --max-running-requests 32 --mem-fraction-static 0.85 --chunked-prefill-size 2048' +
        ' --speculative-algorithm EAGLE3 --speculative-draft-model-path /models/eagle3-head --speculative-num-steps 4 --speculative-eagle-topk 1 --speculative-num-draft-tokens 5 --disaggregation-mode decode',
    );
  });

  it('SGLang mtp runs through the EAGLE path without a draft model', () => {
    expect(buildEngineCommand({ ...sglang, speculative: { method: 'mtp' } }).args.slice(-8)).toEqual([
      '--speculative-algorithm', 'EAGLE', '--speculative-num-steps', '1', '--speculative-eagle-topk', '1', '--speculative-num-draft-tokens', '2',
    ]);
  });

  it('SGLang ngram sets NGRAM and the draft token count', () => {
    expect(buildEngineCommand({ ...sglang, speculative: { method: 'ngram' } }).args.slice(-4)).toEqual(['--speculative-algorithm', 'NGRAM', '--speculative-num-draft-tokens', '4']);
  });

  it('SGLang prefill role sets --disaggregation-mode prefill', () => {
    expect(buildEngineCommand({ ...sglang, role: 'prefill' }).args.slice(-2)).toEqual(['--disaggregation-mode', 'prefill']);
  });

  it('SGLang hicache offload sizes the host cache in GiB', () => {
    expect(buildEngineCommand({ ...sglang, kvOffload: { connector: 'hicache', cpuBytes: 64 * 1024 ** 3 } }).args.slice(-3)).toEqual(['--enable-hierarchical-cache', '--hicache-size', '64']);
  });

  it('SGLang refuses a vLLM connector name', () => {
    expect(problemsOf({ ...sglang, kvOffload: { connector: 'OffloadingConnector' } })).toBe(
      'INVALID_ENGINE_SPEC: kvOffload.connector: SGLang offloads KV through its hierarchical cache; expected "hicache", got "OffloadingConnector"',
    );
  });
});

describe('TensorRT-LLM', () => {
  const trtllm: EngineSpec = { ...base, engine: 'trtllm' };

  it('TensorRT-LLM throughput on 4×H100 sets --tp_size 4 and --max_batch_size 256', () => {
    expect(line(trtllm)).toBe(
      'trtllm-serve /models/llama-3.1-70b --served_model_name llama-70b --host 0.0.0.0 --port 8001 --backend pytorch --tp_size 4 --max_batch_size 256 --max_num_tokens 8192 --kv_cache_free_gpu_memory_fraction 0.9',
    );
  });

  it('TensorRT-LLM refuses speculative decoding and disaggregated roles that need a YAML file', () => {
    expect(problemsOf({ ...trtllm, role: 'decode', speculative: { method: 'mtp' } })).toBe(
      'INVALID_ENGINE_SPEC: role: decode: trtllm-serve reads it only from an --extra_llm_api_options YAML file, which these presets do not write (cache_transceiver_config); use role server; ' +
        'speculative: trtllm-serve reads it only from an --extra_llm_api_options YAML file, which these presets do not write (speculative_config)',
    );
  });
});

describe('llama.cpp', () => {
  const llama: EngineSpec = { ...base, engine: 'llama-cpp', modelPath: '/models/qwen2.5-7b-q4_k_m.gguf', acceleratorsPerPod: 1, acceleratorIds: ['0'], mode: 'latency' };

  it('llama.cpp latency offloads every layer and serves 4 slots over a 32k context', () => {
    expect(buildEngineCommand(llama)).toEqual({
      command: 'llama-server',
      args: ['-m', '/models/qwen2.5-7b-q4_k_m.gguf', '--alias', 'llama-70b', '--host', '0.0.0.0', '--port', '8001', '-ngl', '999', '-c', '32768', '--parallel', '4'],
      env: { CUDA_VISIBLE_DEVICES: '0' },
    });
  });

  it('llama.cpp throughput serves 16 slots over a 64k context', () => {
    expect(buildEngineCommand({ ...llama, mode: 'throughput' }).args.slice(-4)).toEqual(['-c', '65536', '--parallel', '16']);
  });

  it('llama.cpp refuses eagle3', () => {
    expect(problemsOf({ ...llama, speculative: { method: 'eagle3', draftModel: '/d' } })).toBe('INVALID_ENGINE_SPEC: speculative.method: llama-server has no eagle3 speculative decoding');
  });
});

describe('custom', () => {
  const custom: EngineSpec = {
    ...base,
    engine: 'custom',
    modelPath: '/models/my model',
    customTemplate: 'my-engine --weights {{model_path}} --listen :{{port}} --devices {{gpu_ids}}',
  };

  it('custom template substitutes placeholders per word', () => {
    expect(buildEngineCommand(custom)).toEqual({
      command: 'my-engine',
      args: ['--weights', '/models/my model', '--listen', ':8001', '--devices', '0,1,2,3'],
      env: { CUDA_VISIBLE_DEVICES: '0,1,2,3' },
    });
  });

  it('custom template names an unknown placeholder and a missing {{port}}', () => {
    expect(problemsOf({ ...custom, customTemplate: 'my-engine {{model}}' })).toBe(
      'INVALID_ENGINE_SPEC: customTemplate: unknown placeholder {{model}} (known: {{model_path}}, {{port}}, {{gpu_ids}}, {{served_model_name}}, {{tensor_parallel_size}}); customTemplate: expected {{port}} so the engine listens where the fleet routes to',
    );
  });
});
