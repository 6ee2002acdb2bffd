import { WorkloadPhase } from '@gpufleet/contracts';
import { desiredPods, type DesiredPod } from './desired-pods';
import { resolveEngineMode } from './engine-mode';
import { planPod, type EnginePodPlan, type InstancePodPlan, type PlanContext } from './pod-plan';
import { accelerator, engineTemplate, instanceTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';
import type { PodPlacement, PodTemplate } from '@gpufleet/contracts';

const STATE = '/var/lib/gpufleet/node-runtime/h100-0';
const ctx = (extra: Partial<PlanContext> = {}): PlanContext => ({
  inventory: inventory(),
  stateDir: STATE,
  engineMode: 'simulated',
  engineSim: { command: 'node', args: ['-r', '@swc-node/register', '/repo/apps/engine-sim/src/main.ts'], cwd: '/repo' },
  stopGraceMs: 30_000,
  ...extra,
});

function pod(template: PodTemplate, where: Partial<PodPlacement> = { acceleratorIds: ['nvidia-1', 'nvidia-2'] }): DesiredPod {
  const [one] = desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement(where) }]), workloadMap(workload('llama', template, WorkloadPhase.WORKLOAD_PHASE_ADMITTED)));
  return one;
}

describe('planPod: engines', () => {
  it('runs engine-sim on a simulated node, with the vLLM flags, the port and the devices', () => {
    const plan = planPod(pod(engineTemplate()), 18_000, ctx()) as EnginePodPlan;
    expect(plan.kind).toBe('engine');
    expect(plan.process).toMatchObject({
      id: 'team-a/llama/server/0/0',
      command: 'node',
      args: [
        '-r', '@swc-node/register', '/repo/apps/engine-sim/src/main.ts',
        'serve', '/models/llama-3-8b', '--served-model-name', 'llama-3-8b', '--host', '0.0.0.0', '--port', '18000',
        '--tensor-parallel-size', '2', '--max-num-seqs', '32',
      ],
      cwd: '/repo',
      logFile: `${STATE}/pods/team-a/llama/server/0/0/pod.log`,
      health: { probe: { kind: 'http', url: 'http://127.0.0.1:18000/health' } },
      restart: 'always',
      stopGraceMs: 30_000,
    });
    expect(plan.process.env).toEqual({
      CUDA_VISIBLE_DEVICES: '1,2',
      NVIDIA_VISIBLE_DEVICES: '1,2',
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      GPUFLEET_POD: 'team-a/llama/server/0/0',
      GPUFLEET_TEMPLATE_HASH: 'tpl-1',
      REPLICA_NAME: 'team-a-llama-server-0-0',
    });
    expect(plan).toMatchObject({ port: 18_000, templateHash: 'tpl-1', devicesEnv: { CUDA_VISIBLE_DEVICES: '1,2' } });
  });

  it('runs the real engine in the pod directory otherwise', () => {
    const plan = planPod(pod(engineTemplate()), 18_000, ctx({ engineMode: 'real' })) as EnginePodPlan;
    expect(plan.process.command).toBe('vllm');
    expect(plan.process.args).toEqual(expect.arrayContaining(['serve', '/models/llama-3-8b', '--port', '18000', '--tensor-parallel-size', '2']));
    expect(plan.process.cwd).toBe(`${STATE}/pods/team-a/llama/server/0/0`);
    expect(plan.process.env).not.toHaveProperty('REPLICA_NAME');
  });

  it('binds the engine where it is told (loopback on a local stack), real or simulated', () => {
    for (const engineMode of ['real', 'simulated'] as const) {
      const plan = planPod(pod(engineTemplate()), 18_000, ctx({ engineMode, engineListenAddress: '127.0.0.1' })) as EnginePodPlan;
      const args = plan.process.args ?? [];
      expect(args[args.indexOf('--host') + 1]).toBe('127.0.0.1');
    }
  });

  it('gives an engine on a MIG partition the MIG device and its memory', () => {
    const plan = planPod(pod(engineTemplate(), { partition: { acceleratorId: 'nvidia-3', profile: '1g.10gb', start: 0 } }), 18_000, ctx({ engineMode: 'real' })) as EnginePodPlan;
    expect(plan.process.env).toMatchObject({ CUDA_VISIBLE_DEVICES: 'MIG-66666666-7777-8888-9999-000000000000' });
    // A card of 24 GiB or less gets the capped memory fraction.
    expect(plan.process.args).toEqual(expect.arrayContaining(['--gpu-memory-utilization', '0.85', '--tensor-parallel-size', '1']));
  });

  it('keeps CUDA_VISIBLE_DEVICES away from an engine on AMD GPUs', () => {
    const amd = inventory({ accelerators: [accelerator('amd', 0), accelerator('amd', 1)] });
    const plan = planPod(pod(engineTemplate(), { acceleratorIds: ['amd-1'] }), 18_000, ctx({ inventory: amd, engineMode: 'real' })) as EnginePodPlan;
    expect(plan.process.env).toMatchObject({ ROCR_VISIBLE_DEVICES: '1', HIP_VISIBLE_DEVICES: '0' });
    expect(plan.process.env).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
  });

  it('fails a pod whose engine spec is refused, with the presets library words', () => {
    const plan = planPod(pod(engineTemplate({ engine: 'tgi' })), 18_000, ctx());
    expect(plan).toMatchObject({ kind: 'failed', port: 18_000, templateHash: 'tpl-1', message: 'INVALID_ENGINE_SPEC: engine: expected one of vllm | sglang | trtllm | llama-cpp | custom, got "tgi"' });
    const reserved = planPod(pod(engineTemplate({ env: { CUDA_VISIBLE_DEVICES: '0' } })), 18_000, ctx());
    expect(reserved).toMatchObject({ kind: 'failed', message: expect.stringContaining('env.CUDA_VISIBLE_DEVICES: set from acceleratorIds') });
  });

  it('fails a pod placed on an accelerator the node does not have, and a CPU-only engine', () => {
    expect(planPod(pod(engineTemplate(), { acceleratorIds: ['nvidia-9'] }), 18_000, ctx())).toMatchObject({ kind: 'failed', message: expect.stringMatching(/^UNKNOWN_ACCELERATOR: accelerator nvidia-9/) });
    expect(planPod(pod(engineTemplate(), { vcpu: 8 }), 18_000, ctx())).toMatchObject({ kind: 'failed', message: expect.stringContaining('acceleratorsPerPod: expected a positive integer, got 0') });
  });

  it('changes its launch when the template, the devices or the port change, and only then', () => {
    const launch = (template: PodTemplate, port = 18_000, where?: Partial<PodPlacement>) => (planPod(pod(template, where), port, ctx()) as EnginePodPlan).launch;
    const base = launch(engineTemplate());
    expect(launch(engineTemplate())).toBe(base);
    expect(launch(engineTemplate({ templateHash: 'tpl-2' }))).not.toBe(base);
    expect(launch(engineTemplate(), 18_001)).not.toBe(base);
    expect(launch(engineTemplate(), 18_000, { acceleratorIds: ['nvidia-0', 'nvidia-1'] })).not.toBe(base);
  });
});

describe('planPod: instances', () => {
  it('gives the sshd the devices plus the instance environment, and the command the same', () => {
    const plan = planPod(pod(instanceTemplate({ command: 'jupyter lab --port 8888' }), { acceleratorIds: ['nvidia-0'] }), 2222, ctx()) as InstancePodPlan;
    expect(plan.kind).toBe('instance');
    expect(plan.sshd).toEqual({
      name: 'team-a.llama.server.0.0',
      baseDir: `${STATE}/instances`,
      workDir: `${STATE}/instances/team-a.llama.server.0.0/work`,
      authorizedKeys: [instanceTemplate().instance!.sshPublicKeys[0]],
      env: { CUDA_VISIBLE_DEVICES: '0', NVIDIA_VISIBLE_DEVICES: '0', CUDA_DEVICE_ORDER: 'PCI_BUS_ID', NOTEBOOK: '1', GPUFLEET_POD: 'team-a/llama/server/0/0' },
      logFile: `${STATE}/pods/team-a/llama/server/0/0/sshd.log`,
      listenAddress: '127.0.0.1',
    });
    expect(plan.command).toMatchObject({
      id: 'team-a/llama/server/0/0/command',
      command: '/bin/sh',
      args: ['-c', 'jupyter lab --port 8888'],
      env: plan.sshd.env,
      cwd: plan.sshd.workDir,
      logFile: `${STATE}/pods/team-a/llama/server/0/0/pod.log`,
      restart: 'always',
    });
  });

  it('runs no command when the instance has none', () => {
    expect((planPod(pod(instanceTemplate()), 2222, ctx()) as InstancePodPlan).command).toBeUndefined();
  });

  it('fails an instance without keys or that sets a device variable itself', () => {
    expect(planPod(pod(instanceTemplate({ keys: [] })), 2222, ctx())).toMatchObject({ kind: 'failed', message: 'INVALID_INSTANCE: instance alice-dev has no SSH public key; logins are by key only' });
    expect(planPod(pod(instanceTemplate({ env: { CUDA_VISIBLE_DEVICES: 'all' } })), 2222, ctx())).toMatchObject({
      kind: 'failed',
      message: 'INVALID_INSTANCE: env.CUDA_VISIBLE_DEVICES: set by the node runtime from the allocated devices; remove it from the instance',
    });
  });

  it('has a launch that does not depend on the order of the environment', () => {
    const a = planPod(pod(instanceTemplate({ env: { A: '1', B: '2' } })), 2222, ctx()) as InstancePodPlan;
    const b = planPod(pod(instanceTemplate({ env: { B: '2', A: '1' } })), 2222, ctx()) as InstancePodPlan;
    const c = planPod(pod(instanceTemplate({ env: { A: '1', B: '3' } })), 2222, ctx()) as InstancePodPlan;
    expect(a.launch).toBe(b.launch);
    expect(c.launch).not.toBe(a.launch);
  });
});

describe('resolveEngineMode', () => {
  it('simulates engines on a node of the simulated provider when auto, and obeys an explicit choice', () => {
    expect(resolveEngineMode('auto', inventory())).toBe('simulated');
    const real = inventory({ providers: [{ provider: 'nvidia', ok: true, error: '', lastSuccess: undefined, lastAttempt: undefined }] });
    expect(resolveEngineMode('auto', real)).toBe('real');
    expect(resolveEngineMode('simulated', real)).toBe('simulated');
    expect(resolveEngineMode('real', inventory())).toBe('real');
  });
});
