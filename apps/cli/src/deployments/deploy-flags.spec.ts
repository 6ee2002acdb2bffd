import { deploymentNameFromModel, deploymentSpecFromFlags } from './deploy-flags';

describe('deploymentNameFromModel', () => {
  it.each([
    ['meta-llama/Llama-3.1-8B-Instruct', 'llama-3-1-8b-instruct'],
    ['/models/llama-3.1-8b/', 'llama-3-1-8b'],
    ['/models/qwen2.5-0.5b.Q4_K_M.gguf', 'qwen2-5-0-5b-q4-k-m'],
    ['Qwen/Qwen2.5-0.5B-Instruct', 'qwen2-5-0-5b-instruct'],
    ['__weird__name__', 'weird-name'],
  ])('%s -> %s', (model, name) => {
    expect(deploymentNameFromModel(model)).toBe(name);
  });

  it('cuts to 40 characters without a trailing dash', () => {
    const name = deploymentNameFromModel('org/a-very-long-model-name-that-goes-on-and-on-and-on-forever');
    expect(name.length).toBeLessThanOrEqual(40);
    expect(name).toBe('a-very-long-model-name-that-goes-on-and');
  });

  it('asks for --name when nothing usable is left', () => {
    expect(() => deploymentNameFromModel('/models/___/')).toThrow(/pass --name NAME/);
  });
});

describe('deploymentSpecFromFlags', () => {
  it('deploys an artifact without a MODEL, named after it', () => {
    const spec = deploymentSpecFromFlags('', { artifact: 'qwen-0-5b' });
    expect(spec).toMatchObject({ name: 'qwen-0-5b', artifact: 'qwen-0-5b', model: '' });
    expect(() => deploymentSpecFromFlags('', {})).toThrow(/^MODEL: expected .* or --artifact NAME$/);
    expect(() => deploymentSpecFromFlags('', { artifact: 'Qwen_0.5B' })).toThrow(/--artifact/);
  });

  it('defaults to one server replica of vLLM on one whole accelerator with 8 vCPU and 64 GiB', () => {
    const spec = deploymentSpecFromFlags('meta-llama/Llama-3.1-8B-Instruct', {});
    expect(spec).toEqual({
      name: 'llama-3-1-8b-instruct',
      namespace: 'default',
      localQueue: 'default',
      priority: 0,
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      artifact: '',
      servedModelName: '',
      engine: { engine: 'vllm', version: '', mode: '', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
      roles: [
        {
          role: 'server',
          replicas: 1,
          size: 1,
          instanceType: '',
          resources: { accelerator: { whole: 1 }, vcpu: 8, memoryMib: 65536 },
          topology: undefined,
          extraArgs: [],
          env: {},
          envFromSecret: {},
        },
      ],
      labels: {},
    });
  });

  it('maps every flag', () => {
    const spec = deploymentSpecFromFlags('/models/llama-70b', {
      name: 'llama',
      namespace: 'team-a',
      queue: 'fast',
      engine: 'sglang',
      engineVersion: '0.5.2',
      mode: 'latency',
      replicas: 3,
      accelerators: 4,
      vcpu: 48,
      memory: 400000,
      size: 2,
      servedModelName: 'llama-70b',
      arg: ['--max-model-len', '8192'],
      env: ['HF_HOME=/cache', 'A=b=c'],
      speculative: 'eagle3',
      draftModel: '/models/eagle3-head',
    });
    expect(spec.name).toBe('llama');
    expect(spec.namespace).toBe('team-a');
    expect(spec.localQueue).toBe('fast');
    expect(spec.servedModelName).toBe('llama-70b');
    expect(spec.engine).toEqual({
      engine: 'sglang',
      version: '0.5.2',
      mode: 'latency',
      customCommand: '', multiNode: '',
      extraArgs: ['--max-model-len', '8192'],
      env: { HF_HOME: '/cache', A: 'b=c' },
      envFromSecret: {},
      speculative: { method: 'eagle3', draftModel: '/models/eagle3-head', numSpeculativeTokens: 0 },
      kvOffload: undefined,
    });
    expect(spec.roles[0]).toMatchObject({ role: 'server', replicas: 3, size: 2, instanceType: '', resources: { accelerator: { whole: 4 }, vcpu: 48, memoryMib: 400000 } });
  });

  it('asks for a multi-node replica: --size, --multi-node and --topology', () => {
    const spec = deploymentSpecFromFlags('/models/llama-3.1-405b', { size: 2, multiNode: 'data-parallel', topology: 'rack', instanceType: 'h100-80gb-hbm3-x86-64.8x' });
    expect(spec.engine?.multiNode).toBe('data-parallel');
    expect(spec.roles[0]).toMatchObject({ size: 2, topology: { requiredLevel: 'rack', preferredLevel: '' } });
    expect(() => deploymentSpecFromFlags('/m', { multiNode: 'mpi' })).toThrow('--multi-node mpi: expected one of ray, data-parallel');
    expect(() => deploymentSpecFromFlags('/m', { topology: 'building' })).toThrow('--topology building: expected one of node, nvlink-domain, rack, zone');
  });

  it('takes --env-secret VAR=SECRET/KEY as references, never as values', () => {
    const spec = deploymentSpecFromFlags('m', { env: ['A=1'], envSecret: ['HF_TOKEN=hf-token/token', 'API_KEY=engine-keys/api.key'] });
    expect(spec.engine?.env).toEqual({ A: '1' });
    expect(spec.engine?.envFromSecret).toEqual({ HF_TOKEN: { name: 'hf-token', key: 'token' }, API_KEY: { name: 'engine-keys', key: 'api.key' } });
  });

  it('refuses a malformed --env-secret and a variable given both ways', () => {
    expect(() => deploymentSpecFromFlags('m', { envSecret: ['HF_TOKEN=hf-token'] })).toThrow('--env-secret HF_TOKEN=hf-token: expected VAR=SECRET/KEY');
    expect(() => deploymentSpecFromFlags('m', { envSecret: ['HF_TOKEN=Bad_Name/token'] })).toThrow('expected VAR=SECRET/KEY');
    expect(() => deploymentSpecFromFlags('m', { env: ['HF_TOKEN=x'], envSecret: ['HF_TOKEN=hf/token'] })).toThrow('HF_TOKEN is also given with --env');
  });

  it('scales the CPU and memory defaults with the accelerators', () => {
    expect(deploymentSpecFromFlags('m', { accelerators: 2 }).roles[0].resources).toEqual({ accelerator: { whole: 2 }, vcpu: 16, memoryMib: 131072 });
  });

  it('asks for a CPU-only pod with --accelerators 0', () => {
    expect(deploymentSpecFromFlags('m', { accelerators: 0, engine: 'llama-cpp' }).roles[0].resources).toEqual({ accelerator: undefined, vcpu: 8, memoryMib: 65536 });
  });

  it('takes an InstanceType instead of resources', () => {
    const role = deploymentSpecFromFlags('m', { instanceType: 'h100-80gb-hbm3-x86-64.4x' }).roles[0];
    expect(role.instanceType).toBe('h100-80gb-hbm3-x86-64.4x');
    expect(role.resources).toBeUndefined();
  });

  it('treats --command alone as the custom engine', () => {
    const spec = deploymentSpecFromFlags('/m', { command: 'my-server --model {{model_path}} --port {{port}}' });
    expect(spec.engine?.engine).toBe('custom');
    expect(spec.engine?.customCommand).toBe('my-server --model {{model_path}} --port {{port}}');
  });

  it.each([
    [{ engine: 'tgi' }, /--engine tgi: expected one of vllm, sglang, trtllm, llama-cpp, custom/],
    [{ mode: 'fast' }, /--mode fast: expected one of latency, throughput/],
    [{ engine: 'custom' }, /--engine custom needs --command TEMPLATE/],
    [{ engine: 'vllm', command: 'x' }, /--command is the command template of --engine custom/],
    [{ speculative: 'medusa' }, /--speculative medusa: expected one of eagle3, mtp, ngram/],
    [{ speculative: 'eagle3' }, /--speculative eagle3 needs --draft-model/],
    [{ speculative: 'mtp', draftModel: '/d' }, /--draft-model: --speculative mtp uses no draft model/],
    [{ draftModel: '/d' }, /--draft-model is the draft head of --speculative eagle3/],
    [{ instanceType: 'x.1x', vcpu: 4 }, /--instance-type fixes the pod's CPU and memory; drop --vcpu/],
    [{ instanceType: 'x.1x', accelerators: 1 }, /--instance-type and --accelerators each choose what a pod gets/],
    [{ name: 'Llama_3' }, /--name "Llama_3": expected a DNS-1123 label .* at most 40 characters/],
    [{ name: 'a'.repeat(41) }, /--name .*at most 40 characters/],
    [{ namespace: 'Team A' }, /--namespace "Team A": expected a DNS-1123 label/],
    [{ size: 0 }, /--size 0: expected an integer from 1 to 4294967295 \(pods per replica\)/],
    [{ env: ['NOVALUE'] }, /--env NOVALUE: expected NAME=VALUE/],
    [{ env: ['1X=2'] }, /--env 1X=2: expected NAME=VALUE/],
  ])('refuses %j naming the flag', (flags, message) => {
    expect(() => deploymentSpecFromFlags('org/model', flags)).toThrow(message);
  });

  it('puts the sizing flags into spec.sizing, and leaves it unset without them', () => {
    const spec = deploymentSpecFromFlags('', {
      artifact: 'llama-70b',
      instanceType: 'h100-80gb-hbm3-x86-64.1x',
      contextLength: 32768,
      concurrency: 4,
      gpuMemoryUtilization: '0.9',
      kvCacheDtype: 'fp8',
      autoTensorParallel: true,
    });
    expect(spec.sizing).toEqual({ contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9, kvCacheDtype: 'fp8', autoTensorParallel: true });
    expect(spec.roles[0].instanceType).toBe('h100-80gb-hbm3-x86-64.1x');
    // One flag alone: the rest fall back (0 / empty: the model's context, 1 sequence, the preset's share).
    expect(deploymentSpecFromFlags('', { artifact: 'llama-8b', gpuMemoryUtilization: '.85' }).sizing).toEqual({ contextLength: 0, concurrency: 0, gpuMemoryUtilization: 0.85, kvCacheDtype: '', autoTensorParallel: false });
    // Without an artifact the engine still gets them (nothing is estimated).
    expect(deploymentSpecFromFlags('/models/m', { contextLength: 8192 }).sizing).toMatchObject({ contextLength: 8192 });
    expect(deploymentSpecFromFlags('', { artifact: 'llama-8b' }).sizing).toBeUndefined();
  });

  it.each([
    [{ contextLength: 0 }, '--context-length 0: expected an integer from 1 to 16777216 (tokens of one sequence)'],
    [{ contextLength: 20_000_000 }, '--context-length 20000000: expected an integer from 1 to 16777216 (tokens of one sequence)'],
    [{ concurrency: 0 }, '--concurrency 0: expected an integer from 1 to 65536 (sequences the KV cache holds at once)'],
    [{ gpuMemoryUtilization: '0' }, "--gpu-memory-utilization 0: expected a fraction of each GPU's memory in (0, 1], e.g. 0.9"],
    [{ gpuMemoryUtilization: '1.5' }, "--gpu-memory-utilization 1.5: expected a fraction of each GPU's memory in (0, 1], e.g. 0.9"],
    [{ gpuMemoryUtilization: '90%' }, "--gpu-memory-utilization 90%: expected a fraction of each GPU's memory in (0, 1], e.g. 0.9"],
    [{ gpuMemoryUtilization: '0x1' }, "--gpu-memory-utilization 0x1: expected a fraction of each GPU's memory in (0, 1], e.g. 0.9"],
    [{ kvCacheDtype: 'int8' }, '--kv-cache-dtype int8: expected one of auto, fp8, fp8_e4m3, fp8_e5m2'],
    [{ autoTensorParallel: true }, '--auto-tensor-parallel picks the <pool>.<N>x sibling of an InstanceType; add --instance-type (e.g. h100-80gb-hbm3-x86-64.1x)'],
    [{ autoTensorParallel: true, instanceType: 'h100-80gb-hbm3-x86-64.1x', size: 2 }, '--auto-tensor-parallel chooses tensor parallel within one node; drop --size 2'],
  ])('refuses sizing flags %j naming the flag', (flags, message) => {
    expect(() => deploymentSpecFromFlags('', { artifact: 'llama-70b', ...flags })).toThrow(message);
  });

  it('refuses --auto-tensor-parallel without an artifact to size by', () => {
    expect(() => deploymentSpecFromFlags('/models/m', { autoTensorParallel: true, instanceType: 'h100-80gb-hbm3-x86-64.1x' })).toThrow('--auto-tensor-parallel sizes by the model of an artifact; add --artifact NAME');
  });

  it('refuses an empty model', () => {
    expect(() => deploymentSpecFromFlags('  ', {})).toThrow(/MODEL: expected a model path/);
  });
});
