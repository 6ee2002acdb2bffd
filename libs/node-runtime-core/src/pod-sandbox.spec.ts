import { WorkloadPhase } from '@gpufleet/contracts';
import { desiredPods } from './desired-pods';
import { planPod, type EnginePodPlan, type InstancePodPlan, type PlanContext } from './pod-plan';
import { deviceNodes } from './pod-devices';
import { engineTemplate, instanceTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';
import type { PodPlacement, PodTemplate } from '@gpufleet/contracts';

const STATE = '/var/lib/gpufleet/node-runtime/h100-0';
const POD = `${STATE}/pods/team-a/llama/server/0/0`;
const sandbox = { uidBase: 200_000, deviceRoot: '/dev', hidden: [STATE] };
const ctx = (extra: Partial<PlanContext> = {}): PlanContext => ({
  inventory: inventory(),
  stateDir: STATE,
  engineMode: 'real',
  engineSim: { command: 'node', args: [], cwd: '/repo' },
  stopGraceMs: 30_000,
  sandbox,
  ...extra,
});

function pod(template: PodTemplate, where: Partial<PodPlacement> = { acceleratorIds: ['nvidia-1', 'nvidia-2'] }) {
  return desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement(where) }]), workloadMap(workload('llama', template, WorkloadPhase.WORKLOAD_PHASE_ADMITTED)))[0];
}

describe('pod sandboxes', () => {
  it('runs an engine as uid base+port, writing only its work directory, with its two GPUs and the control nodes', () => {
    const plan = planPod(pod(engineTemplate()), 18_000, ctx()) as EnginePodPlan;
    expect(plan.identity).toEqual({ name: 'gpufleet-218000', uid: 218_000, gid: 218_000, home: `${POD}/work` });
    expect(plan.process.cwd).toBe(`${POD}/work`);
    expect(plan.process.env).toMatchObject({ HOME: `${POD}/work`, CUDA_VISIBLE_DEVICES: '1,2' });
    expect(plan.process.sandbox).toEqual({
      uid: 218_000,
      gid: 218_000,
      writable: [`${POD}/work`],
      hidden: [STATE],
      devices: ['nvidia1', 'nvidia2', 'nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia-modeset'].map((n) => ({ source: `/dev/${n}`, target: `/dev/${n}` })),
      readOnly: [
        { source: `${POD}/passwd`, target: '/etc/passwd' },
        { source: `${POD}/group`, target: '/etc/group' },
      ],
    });
  });

  it("binds a simulated node's placeholders at /dev", () => {
    const plan = planPod(pod(engineTemplate()), 18_000, ctx({ engineMode: 'simulated', sandbox: { ...sandbox, deviceRoot: `${STATE}/dev` } })) as EnginePodPlan;
    expect(plan.process.sandbox?.devices[0]).toEqual({ source: `${STATE}/dev/nvidia1`, target: '/dev/nvidia1' });
    expect(plan.process.cwd).toBe('/repo');
  });

  it("runs an instance's sshd and command as the pod's user, who is the login", () => {
    const plan = planPod(pod(instanceTemplate({ command: 'jupyter lab' }), { acceleratorIds: ['nvidia-3'] }), 22_000, ctx()) as InstancePodPlan;
    const work = `${STATE}/instances/team-a.llama.server.0.0/work`;
    expect(plan.sshd.sandbox).toMatchObject({ uid: 222_000, user: 'gpufleet-222000', hidden: [STATE] });
    expect(plan.sshd.sandbox?.devices.map((d) => d.target)).toContain('/dev/nvidia3');
    expect(plan.command?.sandbox).toMatchObject({ uid: 222_000, writable: [work] });
    expect(plan.command?.env).toMatchObject({ HOME: work });
  });

  it('leaves pods unconfined without a sandbox context', () => {
    const plan = planPod(pod(engineTemplate()), 18_000, ctx({ sandbox: undefined })) as EnginePodPlan;
    expect(plan.identity).toBeUndefined();
    expect(plan.process.sandbox).toBeUndefined();
    expect(plan.process.cwd).toBe(POD);
    expect(plan.process.env).not.toHaveProperty('HOME');
  });
});

describe('deviceNodes', () => {
  it('names each vendor’s device and control nodes', () => {
    expect(deviceNodes('nvidia', [0], true)).toEqual(['nvidia0', 'nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia-modeset', 'nvidia-caps']);
    expect(deviceNodes('amd', [0, 1])).toEqual(['kfd', 'dri/renderD128', 'dri/renderD129']);
    expect(deviceNodes('ascend', [2])).toEqual(['davinci2', 'davinci_manager', 'devmm_svm', 'hisi_hdc']);
  });
});
