import { DeploymentPhase, GPUInstance, InstancePhase, ModelDeployment, ModelDeploymentStatus } from '@gpufleet/contracts';
import { deploymentWaitVerdict } from './deployments';
import { instanceWaitVerdict } from './instances';
import { waitWithProgress } from './wait';

describe('deploymentWaitVerdict', () => {
  const d = (status: ModelDeploymentStatus, extra: Partial<ModelDeployment> = {}): ModelDeployment => ({
    ...ModelDeployment.fromPartial({ spec: { name: 'llama', namespace: 'default' }, generation: 1 }),
    status,
    ...extra,
  });
  const S = ModelDeploymentStatus.fromPartial;

  it('is done when every desired replica is Ready', () => {
    expect(deploymentWaitVerdict(d(S({ phase: DeploymentPhase.DEPLOYMENT_PHASE_READY, desiredReplicas: 2, readyReplicas: 2, observedGeneration: 1 })))).toBe(true);
    expect(deploymentWaitVerdict(d(S({ phase: DeploymentPhase.DEPLOYMENT_PHASE_STARTING, desiredReplicas: 2, readyReplicas: 1 })))).toBe(false);
  });

  it('waits while the status is of an older generation', () => {
    expect(deploymentWaitVerdict(d(S({ phase: DeploymentPhase.DEPLOYMENT_PHASE_READY, desiredReplicas: 1, readyReplicas: 1, observedGeneration: 1 }), { generation: 2 }))).toBe(false);
  });

  it('gives up on a Failed replica, pointing at its log', () => {
    const verdict = deploymentWaitVerdict(d(S({ phase: DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED, replicas: [{ role: 'server', ordinal: 1, state: 'Failed', message: 'exited with code 1' }] })));
    expect(verdict).toBe('FAILED: replica server/1 of deployment default/llama failed: exited with code 1; see `gpufleet logs llama --replica 1`');
  });
});

describe('instanceWaitVerdict', () => {
  const i = (phase: InstancePhase, message = '', stop = false) => GPUInstance.fromPartial({ spec: { name: 'dev', namespace: 'default', stop }, status: { phase, message } });

  it('is done when Running and gives up when Failed or stopped', () => {
    expect(instanceWaitVerdict(i(InstancePhase.INSTANCE_PHASE_RUNNING))).toBe(true);
    expect(instanceWaitVerdict(i(InstancePhase.INSTANCE_PHASE_STARTING))).toBe(false);
    expect(instanceWaitVerdict(i(InstancePhase.INSTANCE_PHASE_STOPPED))).toBe(false);
    expect(instanceWaitVerdict(i(InstancePhase.INSTANCE_PHASE_STOPPED, '', true))).toBe('ABORTED: instance default/dev was stopped');
    expect(instanceWaitVerdict(i(InstancePhase.INSTANCE_PHASE_FAILED, 'sshd: address in use'))).toBe('FAILED: instance default/dev failed: sshd: address in use');
  });
});

describe('waitWithProgress', () => {
  it('prints each change of progress once and returns when done', async () => {
    const states = ['Pending', 'Pending', 'Starting', 'Ready'];
    const lines: string[] = [];
    const result = await waitWithProgress({
      what: 'x',
      read: async () => states.shift() ?? 'Ready',
      done: (s) => s === 'Ready',
      progress: (s) => s,
      timeoutS: 10,
      out: (t) => lines.push(t.trim().replace(/^\d+s\s+/, '')),
      intervalMs: 1,
    });
    expect(result).toBe('Ready');
    expect(lines).toEqual(['Pending', 'Starting', 'Ready']);
  });

  it('ends with a reason, or after --timeout', async () => {
    const base = { what: 'deployment default/x to be Ready', progress: () => 'Starting', out: () => undefined, intervalMs: 1 };
    await expect(waitWithProgress({ ...base, read: async () => 1, done: () => 'FAILED: boom', timeoutS: 10 })).rejects.toThrow('FAILED: boom');
    await expect(waitWithProgress({ ...base, read: async () => 1, done: () => false, timeoutS: 0 })).rejects.toThrow(
      'DEADLINE_EXCEEDED: waited --timeout 0s for deployment default/x to be Ready; it is still Starting',
    );
  });
});
