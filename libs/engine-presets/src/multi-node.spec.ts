import { buildEngineCommand, ENGINE_COMMAND_ENV, EngineSpecError, simulatedEngineCommand, type EngineGroup, type EngineSpec } from './index';

/** Two 8×H100 pods in one rack, meeting over InfiniBand (no NVLink between them). */
const leader: EngineGroup = {
  size: 2,
  rank: 0,
  leaderAddress: '10.0.0.1',
  podAddress: '10.0.0.1',
  rendezvousPort: 6379,
  nvlinkAcrossPods: false,
  network: { socketInterfaces: ['ib0', 'ib1'], ibHcas: ['mlx5_0', 'mlx5_1'] },
};
const worker: EngineGroup = { ...leader, rank: 1, podAddress: '10.0.0.2' };
const gpus = ['0', '1', '2', '3', '4', '5', '6', '7'];

const vllm: EngineSpec = {
  engine: 'vllm',
  mode: 'throughput',
  role: 'server',
  modelPath: '/models/llama-3.1-405b',
  servedModelName: 'llama-405b',
  port: 8001,
  acceleratorsPerPod: 8,
  acceleratorIds: gpus,
  acceleratorMemoryMib: 81559,
};

const NETWORK_ENV = { NCCL_SOCKET_IFNAME: 'ib0,ib1', GLOO_SOCKET_IFNAME: 'ib0,ib1', NCCL_IB_HCA: 'mlx5_0,mlx5_1' };
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

describe('vLLM over Ray', () => {
  it('the leader starts a Ray head on the rendezvous port, then serves tensor 8 × pipeline 2 with the ray backend', () => {
    expect(buildEngineCommand({ ...vllm, group: leader })).toEqual({
      command: '/bin/sh',
      args: [
        '-c',
        'ray start --head --node-ip-address=10.0.0.1 --port=6379 --num-gpus=8 --disable-usage-stats && ' +
          'exec vllm serve /models/llama-3.1-405b --served-model-name llama-405b --host 0.0.0.0 --port 8001 ' +
          '--tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray ' +
          '--max-num-seqs 256 --gpu-memory-utilization 0.92 --enable-chunked-prefill --max-num-batched-tokens 8192',
      ],
      env: { ...NETWORK_ENV, VLLM_HOST_IP: '10.0.0.1', CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7' },
    });
  });

  it('a worker joins the head with ray start --address and blocks; extra engine arguments stay on the leader', () => {
    const spec = { ...vllm, group: worker, extraArgs: ['--max-model-len', '32768'] };
    expect(buildEngineCommand(spec)).toEqual({
      command: 'ray',
      args: ['start', '--block', '--address=10.0.0.1:6379', '--node-ip-address=10.0.0.2', '--num-gpus=8', '--disable-usage-stats'],
      env: { ...NETWORK_ENV, VLLM_HOST_IP: '10.0.0.2', CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7' },
    });
    expect(buildEngineCommand({ ...spec, group: leader }).args[1]).toMatch(/--max-num-batched-tokens 8192 --max-model-len 32768$/);
  });

  it('pods sharing one NVLink domain run one tensor-parallel group of 16', () => {
    expect(line({ ...vllm, group: { ...leader, nvlinkAcrossPods: true } })).toMatch(/--tensor-parallel-size 16 --pipeline-parallel-size 1 --distributed-executor-backend ray/);
  });

  it('a layout from a memory estimate wins over the gang’s default', () => {
    expect(line({ ...vllm, group: { ...leader, layout: { tensorParallel: 4, pipelineParallel: 4 } } })).toMatch(/--tensor-parallel-size 4 --pipeline-parallel-size 4 /);
  });

  it('an extra argument that repeats a group flag is refused, naming it', () => {
    expect(problemsOf({ ...vllm, group: leader, extraArgs: ['--pipeline-parallel-size=4'] })).toBe(
      'INVALID_ENGINE_SPEC: extraArgs[0]: --pipeline-parallel-size is already set by the preset or the spec; change the spec instead',
    );
  });

  it('a model path with spaces stays one word of the leader’s shell line', () => {
    expect(buildEngineCommand({ ...vllm, modelPath: "/models/it's big", group: leader }).args[1]).toContain(`exec vllm serve '/models/it'\\''s big' --served-model-name`);
  });

  it('an IPv6 leader is bracketed in --address', () => {
    expect(buildEngineCommand({ ...vllm, group: { ...worker, leaderAddress: 'fd00::1' } }).args[2]).toBe('--address=[fd00::1]:6379');
  });
});

describe('vLLM native data parallel', () => {
  const dp = { ...leader, mode: 'data-parallel' as const };

  it('the leader serves the API with 16 ranks, 8 of them local, and hosts the coordination RPC', () => {
    expect(line({ ...vllm, group: dp })).toBe(
      'vllm serve /models/llama-3.1-405b --served-model-name llama-405b --host 0.0.0.0 --port 8001 --tensor-parallel-size 1 ' +
        '--data-parallel-size 16 --data-parallel-size-local 8 --data-parallel-address 10.0.0.1 --data-parallel-rpc-port 6379 ' +
        '--max-num-seqs 256 --gpu-memory-utilization 0.92 --enable-chunked-prefill --max-num-batched-tokens 8192',
    );
  });

  it('a worker is headless from start rank 8 and serves no API', () => {
    const { args, env } = buildEngineCommand({ ...vllm, group: { ...dp, rank: 1, podAddress: '10.0.0.2' } });
    expect(args.join(' ')).toBe(
      'serve /models/llama-3.1-405b --served-model-name llama-405b --tensor-parallel-size 1 --data-parallel-size 16 --data-parallel-size-local 8 ' +
        '--data-parallel-address 10.0.0.1 --data-parallel-rpc-port 6379 --data-parallel-start-rank 8 --headless ' +
        '--max-num-seqs 256 --gpu-memory-utilization 0.92 --enable-chunked-prefill --max-num-batched-tokens 8192',
    );
    expect(env.VLLM_HOST_IP).toBe('10.0.0.2');
  });

  it('ranks of 2 accelerators: 8 ranks, 4 per pod, the worker starting at 4', () => {
    const { args } = buildEngineCommand({ ...vllm, group: { ...dp, rank: 1, layout: { tensorParallel: 2, pipelineParallel: 1 } } });
    expect(args.join(' ')).toMatch(/--tensor-parallel-size 2 --data-parallel-size 8 --data-parallel-size-local 4 .* --data-parallel-start-rank 4 --headless/);
  });

  it('ranks that do not divide a pod are refused', () => {
    expect(problemsOf({ ...vllm, group: { ...dp, layout: { tensorParallel: 3, pipelineParallel: 1 } } })).toContain(
      "group.layout.tensorParallel: data-parallel ranks of 3 accelerators do not divide a pod's 8",
    );
  });
});

describe('SGLang', () => {
  const sglang: EngineSpec = { ...vllm, engine: 'sglang' };

  it('every node runs launch_server with --tp-size 16 and its --node-rank, meeting at the leader’s --dist-init-addr', () => {
    const expected = (rank: number): string =>
      'python3 -m sglang.launch_server --model-path /models/llama-3.1-405b --served-model-name llama-405b --host 0.0.0.0 --port 8001 --tp-size 16 ' +
      '--max-running-requests 256 --mem-fraction-static 0.88 --chunked-prefill-size 8192 ' +
      `--dist-init-addr 10.0.0.1:6379 --nnodes 2 --node-rank ${rank}`;
    expect(line({ ...sglang, group: leader })).toBe(expected(0));
    expect(line({ ...sglang, group: worker })).toBe(expected(1));
    expect(buildEngineCommand({ ...sglang, group: worker }).env).toEqual({ ...NETWORK_ENV, CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7' });
  });

  it('a pipeline layout adds --pp-size', () => {
    expect(line({ ...sglang, group: { ...leader, layout: { tensorParallel: 8, pipelineParallel: 2 } } })).toMatch(/--tp-size 8 .* --pp-size 2 --dist-init-addr/);
  });

  it('has no choice of mode', () => {
    expect(problemsOf({ ...sglang, group: { ...leader, mode: 'ray' } })).toContain('group.mode: only vLLM has a choice of multi-node mode; sglang has one form, remove the mode');
  });
});

describe('TensorRT-LLM over MPI', () => {
  const trtllm: EngineSpec = { ...vllm, engine: 'trtllm' };
  const mpiLeader: EngineGroup = { ...leader, peerAddresses: ['10.0.0.1', '10.0.0.2'] };

  it('the leader runs mpirun over every accelerator of both hosts, each rank under trtllm-llmapi-launch', () => {
    expect(line({ ...trtllm, group: mpiLeader })).toBe(
      'mpirun --allow-run-as-root -np 16 -H 10.0.0.1:8,10.0.0.2:8 --mca plm_rsh_args -p 6379 ' +
        '-x NCCL_SOCKET_IFNAME -x GLOO_SOCKET_IFNAME -x NCCL_IB_HCA trtllm-llmapi-launch ' +
        'trtllm-serve /models/llama-3.1-405b --served_model_name llama-405b --host 0.0.0.0 --port 8001 --backend pytorch --tp_size 8 --pp_size 2 ' +
        '--max_batch_size 256 --max_num_tokens 8192 --kv_cache_free_gpu_memory_fraction 0.9',
    );
  });

  it('a worker runs the SSH server mpirun reaches it through', () => {
    expect(line({ ...trtllm, group: worker })).toBe('/usr/sbin/sshd -D -e -p 6379');
  });

  it('a leader without every pod’s address is refused', () => {
    expect(problemsOf({ ...trtllm, group: leader })).toContain("group.peerAddresses: mpirun on the leader lists every pod's host; expected 2 addresses, got 0");
  });
});

describe('group validation', () => {
  it('names every bad field of the group', () => {
    const message = problemsOf({ ...vllm, group: { ...leader, size: 1, rank: 3, leaderAddress: 'a b', rendezvousPort: 8001 } });
    expect(message).toContain('group.size: expected an integer of at least 2 pods, got 1');
    expect(message).toContain('group.rank: expected an integer in 0..0, got 3');
    expect(message).toContain('group.leaderAddress: expected an IP address, a host name or a $(VARIABLE) reference, got "a b"');
  });

  it('the leader’s rendezvous port may not be its API port', () => {
    expect(problemsOf({ ...vllm, group: { ...leader, rendezvousPort: 8001 } })).toContain('group.rendezvousPort: the leader serves the API on 8001; the rendezvous needs a port of its own');
  });

  it('a layout that does not cover the gang is refused with the numbers', () => {
    expect(problemsOf({ ...vllm, group: { ...leader, layout: { tensorParallel: 8, pipelineParallel: 1 } } })).toContain(
      'group.layout: tensor 8 × pipeline 1 = 8 accelerators, but the gang has 2 pods × 8 = 16',
    );
  });

  it('llama.cpp has no multi-node preset', () => {
    expect(problemsOf({ ...vllm, engine: 'llama-cpp', group: leader })).toContain('group: llama-cpp has no multi-node preset');
  });

  it('a bad interface name is refused', () => {
    expect(problemsOf({ ...vllm, group: { ...leader, network: { socketInterfaces: ['ib0;x'], ibHcas: [] } } })).toContain('group.network.socketInterfaces[0]');
  });
});

describe('simulated group', () => {
  const entry = { command: 'node', args: ['dist/apps/engine-sim/src/main.js'] };

  it('engine-sim gets the group flags and the real engine’s command line for the rank', () => {
    const { command, args, env } = simulatedEngineCommand({ ...vllm, group: worker }, entry);
    expect([command, ...args].join(' ')).toBe(
      'node dist/apps/engine-sim/src/main.js serve /models/llama-3.1-405b --served-model-name llama-405b --host 0.0.0.0 --port 8001 ' +
        '--tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:6379 --max-num-seqs 256',
    );
    expect(JSON.parse(env[ENGINE_COMMAND_ENV])).toEqual(['ray', 'start', '--block', '--address=10.0.0.1:6379', '--node-ip-address=10.0.0.2', '--num-gpus=8', '--disable-usage-stats']);
    expect(env.NCCL_IB_HCA).toBe('mlx5_0,mlx5_1');
  });

  it('reports the sizes the real engine runs with: SGLang one tensor group of 16', () => {
    expect(simulatedEngineCommand({ ...vllm, engine: 'sglang', group: leader }, entry).args.join(' ')).toContain('--tensor-parallel-size 16 --pipeline-parallel-size 1 --nnodes 2 --node-rank 0');
  });
});
