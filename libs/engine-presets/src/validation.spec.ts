import { buildEngineCommand, EngineSpecError, type EngineSpec } from './index';

const base: EngineSpec = {
  engine: 'vllm',
  mode: 'latency',
  role: 'server',
  modelPath: '/models/m',
  servedModelName: 'm',
  port: 8000,
  acceleratorsPerPod: 2,
  acceleratorIds: ['0', '1'],
};

function problems(spec: EngineSpec): readonly { field: string; message: string }[] {
  try {
    buildEngineCommand(spec);
  } catch (error) {
    if (error instanceof EngineSpecError) return error.problems;
    throw error;
  }
  throw new Error('expected EngineSpecError');
}

describe('spec validation', () => {
  it('eagle3 without a draft model names speculative.draftModel', () => {
    expect(() => buildEngineCommand({ ...base, speculative: { method: 'eagle3' } })).toThrow(
      'INVALID_ENGINE_SPEC: speculative.draftModel: expected a draft model path for eagle3',
    );
  });

  it('mtp with a draft model is refused', () => {
    expect(problems({ ...base, speculative: { method: 'mtp', draftModel: '/d' } })).toEqual([
      { field: 'speculative.draftModel', message: 'mtp drafts with the heads inside the target model; remove draftModel' },
    ]);
  });

  it('a memory share outside (0, 1] names memoryFraction', () => {
    for (const memoryFraction of [0, 1.5, Number.NaN]) {
      expect(problems({ ...base, memoryFraction })).toEqual([{ field: 'memoryFraction', message: `expected a fraction in (0, 1], got ${JSON.stringify(memoryFraction)}` }]);
    }
  });

  it('an unknown speculative method is named', () => {
    expect(problems({ ...base, speculative: { method: 'medusa' as never } })[0].field).toBe('speculative.method');
  });

  it('speculation on a prefill role is refused', () => {
    expect(problems({ ...base, role: 'prefill', speculative: { method: 'ngram' } })).toEqual([
      { field: 'speculative', message: 'a prefill role generates no tokens to speculate on; set it on the decode role' },
    ]);
  });

  it('accelerator ids must match acceleratorsPerPod and be unique', () => {
    expect(problems({ ...base, acceleratorsPerPod: 3, acceleratorIds: ['0', '0', '1'] })).toEqual([
      { field: 'acceleratorIds[1]', message: '0 is listed twice' },
    ]);
    expect(problems({ ...base, acceleratorIds: ['0'] })).toEqual([{ field: 'acceleratorIds', message: 'expected 2 ids (acceleratorsPerPod), got 1' }]);
  });

  it('every problem is reported at once', () => {
    expect(problems({ ...base, port: 70000, modelPath: '', mode: 'fast' as never }).map((p) => p.field)).toEqual(['mode', 'modelPath', 'port']);
    // A model that starts with "-" would become an engine flag (--trust-remote-code, say).
    expect(problems({ ...base, modelPath: '--trust-remote-code', servedModelName: '-x' })).toEqual([
      { field: 'modelPath', message: 'expected a model path or hub id, not something that starts with "-" (it would be read as an engine flag), got "--trust-remote-code"' },
      { field: 'servedModelName', message: 'expected a model name that does not start with "-" (it would be read as an engine flag), got "-x"' },
    ]);
  });

  it('a release older than the presets is refused', () => {
    expect(problems({ ...base, version: '0.8.5' })).toEqual([{ field: 'version', message: 'presets target vllm >= 0.10.0, got 0.8.5' }]);
    expect(() => buildEngineCommand({ ...base, version: 'v0.11.2' })).not.toThrow();
  });

  it('CUDA_VISIBLE_DEVICES cannot be overridden through env', () => {
    expect(problems({ ...base, env: { CUDA_VISIBLE_DEVICES: '7' } })).toEqual([
      { field: 'env.CUDA_VISIBLE_DEVICES', message: 'set from acceleratorIds; change acceleratorIds instead' },
    ]);
  });

  it('a template on a non-custom engine and a custom engine without one are refused', () => {
    expect(problems({ ...base, customTemplate: 'x {{port}}' })[0].field).toBe('customTemplate');
    expect(problems({ ...base, engine: 'custom' })).toEqual([{ field: 'customTemplate', message: 'expected a command template for the custom engine' }]);
  });

  it('kvOffload.cpuBytes must be a positive integer', () => {
    expect(problems({ ...base, kvOffload: { connector: 'OffloadingConnector', cpuBytes: -1 } })).toEqual([
      { field: 'kvOffload.cpuBytes', message: 'expected a positive integer (bytes), got -1' },
    ]);
  });
});
