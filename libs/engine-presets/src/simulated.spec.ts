import { EngineSpecError, simulatedEngineCommand, type EngineSpec } from './index';

const entry = { command: 'node', args: ['dist/apps/engine-sim/main.js'] };
const spec: EngineSpec = {
  engine: 'sglang',
  mode: 'throughput',
  role: 'server',
  modelPath: '/models/llama-3.1-70b',
  servedModelName: 'llama-70b',
  port: 8001,
  acceleratorsPerPod: 4,
  acceleratorIds: ['0', '1', '2', '3'],
  env: { HF_HOME: '/cache' },
};

describe('simulated engine', () => {
  it('simulated SGLang throughput on 4 GPUs runs engine-sim with vLLM flags and the preset concurrency', () => {
    expect(simulatedEngineCommand(spec, entry)).toEqual({
      command: 'node',
      args: [
        'dist/apps/engine-sim/main.js', 'serve', '/models/llama-3.1-70b', '--served-model-name', 'llama-70b', '--host', '0.0.0.0',
        '--port', '8001', '--tensor-parallel-size', '4', '--max-num-seqs', '256',
      ],
      env: { HF_HOME: '/cache', CUDA_VISIBLE_DEVICES: '0,1,2,3' },
    });
  });

  it('simulated llama.cpp latency uses its slot count as --max-num-seqs', () => {
    expect(simulatedEngineCommand({ ...spec, engine: 'llama-cpp', mode: 'latency' }, entry).args.slice(-2)).toEqual(['--max-num-seqs', '4']);
  });

  it('simulated custom engine leaves concurrency to engine-sim', () => {
    const { args } = simulatedEngineCommand({ ...spec, engine: 'custom', customTemplate: 'x --port {{port}}' }, entry);
    expect(args).not.toContain('--max-num-seqs');
  });

  it('a spec the real engine refuses is refused in simulation too', () => {
    expect(() => simulatedEngineCommand({ ...spec, engine: 'trtllm', speculative: { method: 'ngram' } }, entry)).toThrow(EngineSpecError);
  });
});
