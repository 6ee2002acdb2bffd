import type { ProcessStatus } from '@gpufleet/process-spec';
import { desiredPods } from './desired-pods';
import { planPod, type PlanContext } from './pod-plan';
import { podRuntimeStatus, type PodStatusInput } from './pod-status';
import { engineTemplate, instanceTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';
import type { PodTemplate } from '@gpufleet/contracts';

const ctx: PlanContext = { inventory: inventory(), stateDir: '/state', engineMode: 'simulated', engineSim: { command: 'node', args: ['sim.ts'], cwd: '/repo' }, stopGraceMs: 1_000 };
const now = new Date('2025-06-01T10:00:00.000Z');

function planOf(template: PodTemplate, ids = ['nvidia-1']) {
  const [pod] = desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement({ acceleratorIds: ids }) }]), workloadMap(workload('llama', template)));
  return planPod(pod, 18_000, ctx);
}

const proc = (extra: Partial<ProcessStatus>): ProcessStatus => ({ id: 'p', state: 'Ready', restarts: 0, consecutiveFailures: 0, adopted: false, ...extra });
const input = (extra: Partial<PodStatusInput> & Pick<PodStatusInput, 'plan'>): PodStatusInput => ({
  node: NODE,
  processes: [],
  host: '10.0.0.5',
  runtimeUrl: 'http://10.0.0.5:8088',
  now,
  ...extra,
});

describe('podRuntimeStatus', () => {
  it('reports a ready engine: pid, port, devices, template hash, where its logs are served', () => {
    const status = podRuntimeStatus(input({ plan: planOf(engineTemplate()), processes: [{ role: 'engine', status: proc({ pid: 4242, startedAt: now.getTime() - 5_000, restarts: 1 }) }] }));
    expect(status).toEqual({
      node: NODE,
      namespace: 'team-a',
      workload: 'llama',
      podSet: 'server',
      replica: 0,
      pod: 0,
      state: 'Ready',
      pid: 4242,
      host: '10.0.0.5',
      port: 18_000,
      restarts: 1,
      lastExit: '',
      startedAt: new Date('2025-06-01T09:59:55.000Z'),
      updatedAt: now,
      runtimeUrl: 'http://10.0.0.5:8088',
      templateHash: 'tpl-1',
      devicesEnv: { CUDA_VISIBLE_DEVICES: '1', NVIDIA_VISIBLE_DEVICES: '1', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' },
      sshHostKey: '',
      sshUser: '',
      sandbox: '',
      groupRole: '',
      groupPort: 0,
      message: '',
    });
  });

  it('says when a crashed engine restarts and why it exited', () => {
    const lastExit = { code: null, signal: 'SIGKILL' as const, at: now.getTime(), ranMs: 10, reason: 'killed by SIGKILL' };
    const status = podRuntimeStatus(input({ plan: planOf(engineTemplate()), processes: [{ role: 'engine', status: proc({ state: 'Backoff', lastExit, consecutiveFailures: 2, nextRestartAt: now.getTime() + 2_000 }) }] }));
    expect(status).toMatchObject({
      state: 'Backoff',
      pid: 0,
      lastExit: 'killed by SIGKILL',
      message: 'restarting at 2025-06-01T10:00:02.000Z (last exit: killed by SIGKILL; failure 2 in a row)',
    });
  });

  it('reports a pod that cannot start as Failed with the reason', () => {
    const status = podRuntimeStatus(input({ plan: planOf(engineTemplate(), ['nvidia-9']) }));
    expect(status).toMatchObject({ state: 'Failed', port: 18_000, message: expect.stringMatching(/^UNKNOWN_ACCELERATOR: /) });
  });

  it('gives an instance the state of its least healthy process, the sshd pid and the restarts of both', () => {
    const status = podRuntimeStatus(
      input({
        plan: planOf(instanceTemplate({ command: 'sleep 1000' })),
        processes: [
          { role: 'sshd', status: proc({ pid: 100, restarts: 1 }) },
          { role: 'command', status: proc({ pid: 101, state: 'Running', healthy: undefined, restarts: 2 }) },
        ],
        sshHostKey: 'ssh-ed25519 AAAA host',
        sshUser: 'root',
      }),
    );
    expect(status).toMatchObject({ state: 'Running', pid: 100, port: 18_000, restarts: 3, sshHostKey: 'ssh-ed25519 AAAA host', sshUser: 'root', templateHash: '' });
    expect(status.message).toBe('command: alive, waiting for its health probe to pass');
  });

  it('carries the restarts and start time of an earlier runtime over to a process it adopted', () => {
    const status = podRuntimeStatus(
      input({
        plan: planOf(engineTemplate()),
        processes: [{ role: 'engine', status: proc({ pid: 7, adopted: true, startedAt: now.getTime() }) }],
        restartsBefore: 2,
        startedAt: new Date('2025-06-01T08:00:00.000Z'),
      }),
    );
    expect(status).toMatchObject({ restarts: 2, startedAt: new Date('2025-06-01T08:00:00.000Z') });
  });
});
