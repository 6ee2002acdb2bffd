import { normalizeDeploymentSpec, validateDeploymentSpec } from './deployment-spec';
import { context, deploymentSpec, H100_POOL } from './__fixtures__/records';

const fields = (spec = deploymentSpec()) => validateDeploymentSpec(spec, context).map((p) => p.field);
const messages = (spec = deploymentSpec()) => validateDeploymentSpec(spec, context).map((p) => p.message);

describe('validateDeploymentSpec', () => {
  it('accepts a vLLM deployment on an InstanceType of the queue’s pool', () => {
    expect(messages()).toEqual([]);
  });

  it('fills in the queue, engine, mode, served name and role a user may leave out', () => {
    const spec = normalizeDeploymentSpec(deploymentSpec({ localQueue: '', servedModelName: '', engine: undefined, roles: [{ role: '', replicas: 1, size: 0, instanceType: `${H100_POOL}.1x`, extraArgs: [], env: {}, resources: undefined, topology: undefined, envFromSecret: {} }] }));
    expect(spec.localQueue).toBe('default');
    expect(spec.servedModelName).toBe('llama-3.1-8b');
    expect(spec.engine).toMatchObject({ engine: 'vllm', mode: 'throughput' });
    expect(spec.roles[0]).toMatchObject({ role: 'server', size: 1 });
  });

  it('names every bad field at once', () => {
    const spec = deploymentSpec({
      name: 'Llama_3',
      model: '',
      engine: { engine: 'tgi', version: '', mode: 'fast', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
    });
    expect(fields(spec)).toEqual(expect.arrayContaining(['name', 'model', 'engine.engine', 'engine.mode']));
  });

  it('refuses a name that leaves no room for replica suffixes', () => {
    expect(messages(deploymentSpec({ name: 'a'.repeat(41) }))[0]).toMatch(/^name: expected at most 40 characters/);
  });

  it('refuses an InstanceType of another pool than the LocalQueue admits into', () => {
    const spec = deploymentSpec({ roles: [{ role: 'server', replicas: 1, size: 1, instanceType: 'l40s-x86-64.1x', resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} }] });
    expect(messages(spec)).toEqual([`roles[0].instanceType: expected an InstanceType of pool "${H100_POOL}", where LocalQueue "default" admits, got "l40s-x86-64.1x" of pool "l40s-x86-64"`]);
  });

  it('refuses an unknown InstanceType and an unknown LocalQueue', () => {
    const spec = deploymentSpec({ localQueue: 'nope', roles: [{ role: 'server', replicas: 1, size: 1, instanceType: 'h200.1x', resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} }] });
    expect(fields(spec)).toEqual(['localQueue', 'roles[0].instanceType']);
  });

  it('takes one server role or a prefill and a decode role, nothing else', () => {
    const role = (name: string) => ({ role: name, replicas: 1, size: 1, instanceType: `${H100_POOL}.1x`, resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} });
    expect(messages(deploymentSpec({ roles: [role('prefill'), role('decode')] }))).toEqual([]);
    expect(fields(deploymentSpec({ roles: [role('server'), role('decode')] }))).toEqual(['roles']);
    expect(fields(deploymentSpec({ roles: [] }))).toEqual(['roles']);
  });

  it('reports the engine’s own refusals at creation, naming the deployment field', () => {
    const custom = deploymentSpec({ engine: { engine: 'custom', version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} } });
    expect(fields(custom)).toContain('engine.customCommand');
    const eagle = deploymentSpec({ engine: { engine: 'vllm', version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: { method: 'eagle3', draftModel: '', numSpeculativeTokens: 0 }, kvOffload: undefined, envFromSecret: {} } });
    expect(fields(eagle)).toContain('engine.speculative.draftModel');
  });

  it('bounds labels, environment and engine arguments, and keeps gpufleet.io labels to itself', () => {
    const base = deploymentSpec();
    const manyEnv = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`V${i}`, 'x']));
    const spec = deploymentSpec({
      labels: { 'gpufleet.io/instance': 'box', team: 'x'.repeat(300) },
      engine: { ...base.engine!, env: manyEnv, extraArgs: ['--flag', 'y'.repeat(5000)] },
    });
    expect(messages(spec)).toEqual([
      'labels["gpufleet.io/instance"]: expected no "gpufleet.io/" key: gpufleet sets those itself, got "box"',
      'labels["team"]: expected a value of at most 256 characters, got 300 characters',
      'engine.env: expected at most 128 variables, got 129',
      'engine.extraArgs[1]: expected an argument of at most 4096 characters, got 5000 characters',
    ]);
    expect(fields(deploymentSpec({ engine: { ...base.engine!, env: { BIG: 'z'.repeat(40 * 1024) } } }))).toEqual(['engine.env.BIG']);
  });

  it('refuses replicas beyond the limit and pods without an accelerator', () => {
    const spec = deploymentSpec({ roles: [{ role: 'server', replicas: 1000, size: 1, instanceType: '', resources: { accelerator: undefined, vcpu: 4, memoryMib: 1024 }, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} }] });
    expect(fields(spec)).toEqual(['roles[0].replicas', 'roles[0].resources.accelerator']);
  });

  describe('multi-node replicas (size > 1)', () => {
    const gang = (engine: string, multiNode = '') =>
      deploymentSpec({
        engine: { engine, version: '', mode: 'throughput', customCommand: engine === 'custom' ? 'srv --port {{port}}' : '', multiNode, extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
        roles: [{ role: 'server', replicas: 1, size: 2, instanceType: `${H100_POOL}.1x`, resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} }],
      });

    it('accepts vLLM (Ray and data-parallel), SGLang and TRT-LLM groups', () => {
      for (const [engine, mode] of [['vllm', ''], ['vllm', 'ray'], ['vllm', 'data-parallel'], ['sglang', ''], ['trtllm', '']]) expect(messages(gang(engine, mode))).toEqual([]);
    });

    it('refuses a size past the limit without laying out its pods (4 294 967 295 addresses ran the scheduler out of memory)', () => {
      const huge = gang('vllm');
      huge.roles[0].size = 4_294_967_295;
      expect(fields(huge)).toEqual(['roles[0].size']);
    });

    it('refuses an engine without a multi-node form, naming the size', () => {
      expect(messages(gang('llama-cpp'))).toEqual([
        'roles[0].size: expected llama-cpp has no multi-node preset; use one pod per replica (size 1) or one of vllm, sglang, trtllm, got role server',
      ]);
    });

    it('refuses an unknown mode once, and a mode on an engine that has one form', () => {
      expect(messages(gang('vllm', 'mpi'))).toEqual(['engine.multiNode: expected ray | data-parallel (or empty for the engine\'s default), got "mpi"']);
      expect(fields(gang('sglang', 'ray'))).toEqual(['engine.multiNode']);
    });
  });
});
