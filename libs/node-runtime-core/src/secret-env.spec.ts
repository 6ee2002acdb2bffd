import { WorkloadPhase, type PodPlacement, type PodTemplate } from '@gpufleet/contracts';
import { desiredPods, type DesiredPod } from './desired-pods';
import { planPod, type EnginePodPlan, type FailedPodPlan, type InstancePodPlan, type PlanContext } from './pod-plan';
import { podRuntimeStatus } from './pod-status';
import { resolveSecretEnv, type SecretLookup } from './secret-env';
import { engineTemplate, instanceTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';

const VALUE = 'hf_s3cr3t_value';
const store = new Map<string, Record<string, string>>([['team-a/hf-token', { token: VALUE }]]);
const secrets: SecretLookup = { get: (namespace, name) => store.get(`${namespace}/${name}`) };
const ctx = (extra: Partial<PlanContext> = {}): PlanContext => ({
  inventory: inventory(),
  stateDir: '/var/lib/gpufleet/node-runtime/h100-0',
  engineMode: 'simulated',
  engineSim: { command: 'node', args: ['/repo/apps/engine-sim/src/main.ts'], cwd: '/repo' },
  stopGraceMs: 30_000,
  secrets,
  ...extra,
});

function pod(template: PodTemplate, where: Partial<PodPlacement> = { acceleratorIds: ['nvidia-1'] }): DesiredPod {
  const [one] = desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement(where) }]), workloadMap(workload('llama', template, WorkloadPhase.WORKLOAD_PHASE_ADMITTED)));
  return one;
}

describe('resolveSecretEnv', () => {
  it('reads each reference from a Secret of the pod’s namespace', () => {
    expect(resolveSecretEnv('team-a', { HF_TOKEN: { name: 'hf-token', key: 'token' } }, secrets)).toEqual({ HF_TOKEN: VALUE });
  });

  it('names every missing Secret and key, and how to create it', () => {
    expect(() => resolveSecretEnv('team-a', { A: { name: 'hf-token', key: 'nope' }, B: { name: 'absent', key: 'k' } }, secrets)).toThrow(
      'SECRET_NOT_FOUND: secret team-a/hf-token has no key nope (env A); secret team-a/absent does not exist (env B); create it with `gpufleet create secret NAME -n team-a --from-literal KEY=VALUE`, and the pod starts',
    );
  });

  it('never reads another namespace’s Secret', () => {
    expect(() => resolveSecretEnv('team-b', { HF_TOKEN: { name: 'hf-token', key: 'token' } }, secrets)).toThrow('secret team-b/hf-token does not exist');
  });
});

describe('planPod with env_from_secret', () => {
  it('puts the value into the engine’s environment only, not into what is reported', () => {
    const plan = planPod(pod(engineTemplate({ env: { A: '1' }, envFromSecret: { API_KEY: { name: 'hf-token', key: 'token' } } })), 18_000, ctx()) as EnginePodPlan;
    expect(plan.kind).toBe('engine');
    expect(plan.process.env).toMatchObject({ A: '1', API_KEY: VALUE });
    const status = podRuntimeStatus({ node: NODE, plan, processes: [], host: '127.0.0.1', runtimeUrl: 'http://127.0.0.1:1', now: new Date(0) });
    expect(JSON.stringify(status)).not.toContain(VALUE);
    expect(plan.launch).not.toContain(VALUE);
  });

  it('puts the value into an instance’s login environment and command', () => {
    const plan = planPod(pod(instanceTemplate({ command: 'sleep 1', envFromSecret: { HF_TOKEN: { name: 'hf-token', key: 'token' } } })), 2222, ctx()) as InstancePodPlan;
    expect(plan.sshd.env.HF_TOKEN).toBe(VALUE);
    expect(plan.command?.env?.HF_TOKEN).toBe(VALUE);
  });

  it('fails the pod with SECRET_NOT_FOUND while the Secret is missing, and plans it once it exists', () => {
    const template = engineTemplate({ envFromSecret: { HF_TOKEN: { name: 'later', key: 'token' } } });
    const failed = planPod(pod(template), 18_000, ctx()) as FailedPodPlan;
    expect(failed).toMatchObject({ kind: 'failed', reason: 'SECRET_NOT_FOUND' });
    expect(failed.message).toMatch(/^SECRET_NOT_FOUND: secret team-a\/later does not exist \(env HF_TOKEN\)/);
    expect(podRuntimeStatus({ node: NODE, plan: failed, processes: [], host: 'h', runtimeUrl: 'u', now: new Date(0) })).toMatchObject({ state: 'Failed', message: failed.message });
    store.set('team-a/later', { token: 'x' });
    try {
      expect(planPod(pod(template), 18_000, ctx()).kind).toBe('engine');
    } finally {
      store.delete('team-a/later');
    }
  });

  it('changes the launch when the value changes, so the pod restarts with the new one', () => {
    const template = engineTemplate({ envFromSecret: { HF_TOKEN: { name: 'hf-token', key: 'token' } } });
    const before = (planPod(pod(template), 18_000, ctx()) as EnginePodPlan).launch;
    const rotated: SecretLookup = { get: () => ({ token: 'rotated' }) };
    expect((planPod(pod(template), 18_000, ctx({ secrets: rotated })) as EnginePodPlan).launch).not.toBe(before);
  });

  it('never lets a Secret set the device visibility variables', () => {
    const plan = planPod(pod(engineTemplate({ envFromSecret: { CUDA_VISIBLE_DEVICES: { name: 'hf-token', key: 'token' } } })), 18_000, ctx()) as EnginePodPlan;
    expect(plan.process.env?.CUDA_VISIBLE_DEVICES).toBe('1');
  });
});
