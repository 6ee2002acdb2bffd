import { GPUInstance, InstancePhase } from '@gpufleet/contracts';
import { renderTable } from './format';
import { describeInstance, devicesSummary, instanceColumns, sshAddress } from './instances';

const NOW = Date.parse('2026-01-01T12:00:00Z');

function instance(): GPUInstance {
  return GPUInstance.fromPartial({
    spec: { name: 'dev', namespace: 'default', localQueue: 'default', resources: { accelerator: { whole: 2 }, vcpu: 16, memoryMib: 131072 }, sshPublicKeys: ['ssh-ed25519 AAAA me@laptop'] },
    status: {
      phase: InstancePhase.INSTANCE_PHASE_RUNNING,
      node: 'h100-0',
      sshHost: '127.0.0.1',
      sshPort: 40022,
      sshUser: 'gpufleet',
      sshHostKey: 'ssh-ed25519 BBBB',
      acceleratorIds: ['0', '1'],
      devicesEnv: { CUDA_DEVICE_ORDER: 'PCI_BUS_ID', NVIDIA_VISIBLE_DEVICES: '0,1', CUDA_VISIBLE_DEVICES: '0,1' },
      logsUrl: 'http://127.0.0.1:9000/v1/pods/default/dev/instance/0/0/logs',
    },
    createdAt: new Date(NOW - 90_000),
  });
}

describe('instance output', () => {
  it('lists NAMESPACE NAME PHASE NODE DEVICES SSH AGE', () => {
    const table = renderTable([instance()], instanceColumns, false).replace(/\S+$/, '90s');
    expect(table.split('\n')).toEqual([
      'NAMESPACE   NAME   PHASE     NODE     DEVICES                    SSH                        AGE',
      'default     dev    Running   h100-0   CUDA_VISIBLE_DEVICES=0,1   gpufleet@127.0.0.1:40022   90s',
    ]);
  });

  it('names the visibility variable of the vendor', () => {
    expect(devicesSummary({ ROCR_VISIBLE_DEVICES: '2,3', HIP_VISIBLE_DEVICES: '0,1' })).toBe('ROCR_VISIBLE_DEVICES=2,3');
    expect(devicesSummary({ ASCEND_RT_VISIBLE_DEVICES: '4' })).toBe('ASCEND_RT_VISIBLE_DEVICES=4');
    expect(devicesSummary({ CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: 'none' })).toBe('-');
    expect(devicesSummary({ CUDA_VISIBLE_DEVICES: 'MIG-d9a47cfb' })).toBe('CUDA_VISIBLE_DEVICES=MIG-d9a47cfb');
  });

  it('has no SSH address before the instance runs', () => {
    expect(sshAddress(GPUInstance.fromPartial({ status: { phase: InstancePhase.INSTANCE_PHASE_PENDING } }))).toBe('-');
  });

  it('describes the request, devices, SSH endpoint and how to connect', () => {
    const text = describeInstance(instance(), NOW);
    expect(text).toContain('Request:       2x 16c 131072Mi');
    expect(text).toContain('SSH keys:      me@laptop');
    expect(text).toContain('Devices:       0,1');
    expect(text).toContain('Devices env:   CUDA_DEVICE_ORDER=PCI_BUS_ID NVIDIA_VISIBLE_DEVICES=0,1 CUDA_VISIBLE_DEVICES=0,1');
    expect(text).toContain('SSH:           gpufleet@127.0.0.1:40022   (connect: gpufleet ssh dev)');
    expect(text).toContain('Created:       2026-01-01T11:58:30.000Z (90s ago)');
  });
});
