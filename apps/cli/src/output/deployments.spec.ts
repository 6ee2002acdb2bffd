import { DeploymentPhase, ModelDeployment } from '@gpufleet/contracts';
import { renderTable } from './format';
import { deploymentColumns, deploymentProgress, describeDeployment, engineName, joinSome, sizingLine } from './deployments';

const NOW = Date.parse('2026-01-01T12:00:00Z');

function deployment(): ModelDeployment {
  return ModelDeployment.fromPartial({
    spec: {
      name: 'llama',
      namespace: 'team-a',
      localQueue: 'default',
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      servedModelName: 'llama-3.1-8b',
      engine: { engine: 'vllm', version: '0.11.0', mode: 'latency', extraArgs: ['--max-model-len', '8192'], env: { A: '1' } },
      roles: [{ role: 'server', replicas: 2, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 8, memoryMib: 65536 } }],
    },
    status: {
      phase: DeploymentPhase.DEPLOYMENT_PHASE_STARTING,
      desiredReplicas: 2,
      readyReplicas: 1,
      updatedReplicas: 2,
      endpoints: ['http://127.0.0.1:41001'],
      conditions: [{ type: 'Available', status: true, reason: 'ReplicaReady', message: '1 of 2 replicas ready', lastTransition: new Date(NOW - 30_000) }],
      replicas: [
        { role: 'server', ordinal: 0, state: 'Ready', node: 'h100-0', endpoint: 'http://127.0.0.1:41001', acceleratorIds: ['0'], updated: true },
        { role: 'server', ordinal: 1, state: 'Pending', message: 'Quota: ExceedsQuota', updated: true },
      ],
    },
    generation: 1,
    createdAt: new Date(NOW - 300_000),
  });
}

describe('deployment output', () => {
  it('lists NAMESPACE NAME MODEL ENGINE PHASE READY UPDATED ENDPOINTS AGE', () => {
    const table = renderTable([deployment()], deploymentColumns, false).replace(/\S+$/, '5m'); // AGE is relative to now
    expect(table.split('\n')).toEqual([
      'NAMESPACE   NAME    MODEL                              ENGINE        PHASE      READY   UPDATED   ENDPOINTS                AGE',
      'team-a      llama   meta-llama/Llama-3.1-8B-Instruct   vllm@0.11.0   Starting   1/2     2         http://127.0.0.1:41001   5m',
    ]);
  });

  it('adds QUEUE, ROLES and GENERATION with -o wide', () => {
    const [header, row] = renderTable([deployment()], deploymentColumns, true).split('\n');
    expect(header).toMatch(/^NAMESPACE\s+NAME\s+MODEL\s+ENGINE\s+QUEUE\s+ROLES\s+PHASE\s+READY\s+UPDATED\s+ENDPOINTS\s+GENERATION\s+AGE$/);
    expect(row).toContain('server 2x(1x)');
  });

  it('shortens long lists and engine names', () => {
    expect(joinSome(['a', 'b', 'c', 'd'], 2)).toBe('a,b,+2');
    expect(joinSome([], 2)).toBe('-');
    expect(engineName({ engine: 'sglang', version: '', mode: '', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} })).toBe('sglang');
  });

  it('describes the spec, conditions and one row per replica', () => {
    const text = describeDeployment(deployment(), NOW);
    expect(text).toContain('Model:         meta-llama/Llama-3.1-8B-Instruct   (served as "llama-3.1-8b")');
    expect(text).toContain('Engine:        vllm@0.11.0, mode latency');
    expect(text).toContain('Engine args:   --max-model-len 8192');
    expect(text).toContain('Phase:         Starting   1/2 ready, 2 updated');
    expect(text).toContain('  server: 2 replica(s) x 1 pod(s), each 1x 8c 65536Mi');
    expect(text).toMatch(/Conditions:\n {2}TYPE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE\n {2}Available\s+True\s+ReplicaReady\s+30s\s+1 of 2 replicas ready/);
    expect(text).toMatch(/Replicas:\n {2}ROLE\s+ORDINAL\s+STATE\s+NODE\s+ENDPOINT\s+DEVICES\s+RESTARTS\s+MESSAGE\n/);
    expect(text).toMatch(/ {2}server\s+0\s+Ready\s+h100-0\s+http:\/\/127.0.0.1:41001\s+0\s+0\n {2}server\s+1\s+Pending\s+-\s+-\s+-\s+0\s+Quota: ExceedsQuota$/);
  });

  it('names the artifact and shows WeightsReady while a node downloads', () => {
    const d = deployment();
    d.spec!.artifact = 'llama-weights';
    d.status!.conditions.push({ type: 'WeightsReady', status: false, reason: 'Downloading', message: 'server 1 on h100-0: waiting for weights: Downloading 45%', lastTransition: new Date(NOW - 10_000) });
    const text = describeDeployment(d, NOW);
    expect(text).toContain("Artifact:      llama-weights   (each node's verified copy; gpufleet describe artifact llama-weights -n team-a)");
    expect(text).toMatch(/ {2}WeightsReady\s+False\s+Downloading\s+10s\s+server 1 on h100-0: waiting for weights: Downloading 45%/);
    expect(describeDeployment(deployment(), NOW)).not.toContain('Artifact:');
  });

  it('shows the sizing, each role’s memory estimate and the MemoryFits condition', () => {
    const d = deployment();
    const GiB = 1024 ** 3;
    d.spec!.artifact = 'llama-70b';
    d.spec!.sizing = { contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9, kvCacheDtype: '', autoTensorParallel: true };
    d.status!.memory = [
      {
        role: 'server',
        instanceType: 'h100-80gb-hbm3-x86-64.4x',
        tensorParallelSize: 4,
        weightsBytes: 32.9 * GiB,
        kvCacheBytes: 10 * GiB,
        activationsBytes: 1.2 * GiB,
        cudaGraphsBytes: 0.5 * GiB,
        totalBytes: 49.6 * GiB,
        gpuMemoryBytes: 81_559 * 1024 * 1024,
        contextLength: 32768,
        concurrency: 4,
        gpuMemoryUtilization: 0.9,
        kvCacheBytesPerToken: 327_680,
        fits: true,
        message: '',
      },
    ];
    d.status!.conditions.push({ type: 'MemoryFits', status: true, reason: 'Fits', message: 'server on h100-80gb-hbm3-x86-64.4x: 49.6 of 79.6 GiB per GPU at tensor-parallel 4', lastTransition: new Date(NOW - 5_000) });
    const text = describeDeployment(d, NOW);
    expect(text).toContain('Sizing:        context 32768, 4 sequence(s), utilisation 0.9, KV cache auto, auto tensor parallel');
    expect(text).toContain('Memory:        server on h100-80gb-hbm3-x86-64.4x: tensor-parallel 4, 32768 tokens x 4 sequences, 0.9 utilisation, fits 79.6 GiB GPUs');
    expect(text).toContain('               weights 32.9 GiB + KV cache 10.0 GiB + activations 1.2 GiB + CUDA graphs 0.5 GiB = 49.6 GiB per GPU (after the utilisation share)');
    expect(text).toMatch(/ {2}MemoryFits\s+True\s+Fits\s+5s\s+server on h100-80gb-hbm3-x86-64\.4x: 49\.6 of 79\.6 GiB per GPU at tensor-parallel 4/);
    // Held back: no estimate yet, the condition says why.
    d.status!.memory = [];
    d.status!.conditions[1] = { type: 'MemoryFits', status: false, reason: 'EstimatePending', message: 'artifact llama-70b is being resolved: replicas wait for the memory estimate', lastTransition: new Date(NOW - 5_000) };
    const pending = describeDeployment(d, NOW);
    expect(pending).not.toContain('Memory:');
    expect(pending).toMatch(/MemoryFits\s+False\s+EstimatePending\s+5s\s+artifact llama-70b is being resolved/);
    expect(describeDeployment(deployment(), NOW)).not.toContain('Sizing:');
    expect(sizingLine({ contextLength: 0, concurrency: 0, gpuMemoryUtilization: 0, kvCacheDtype: 'fp8', autoTensorParallel: false })).toBe("context the model's own, 1 sequence(s), utilisation the preset's, KV cache fp8");
  });

  it('sums up progress with the replicas that are not Ready', () => {
    expect(deploymentProgress(deployment())).toBe('Starting, 1/2 ready; server/1 Pending: Quota: ExceedsQuota');
  });
});
