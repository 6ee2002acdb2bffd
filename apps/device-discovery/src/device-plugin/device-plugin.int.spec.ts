// Device-plugin conformance: the agent's plugins against the kubelet's side of the API
// (@gpufleet/testing's DevicePluginKubelet), real gRPC over unix sockets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { NodeInventory } from '@gpufleet/contracts';
import { parseNvidiaTopology } from '@gpufleet/device-inventory';
import { DevicePluginState } from '@gpufleet/device-plugin-core';
import { createLogger } from '@gpufleet/observability';
import { DevicePluginKubelet, PodResourcesKubelet, REPO_ROOT, grpcError, node, waitFor } from '@gpufleet/testing';
import { DevicePlugins } from './device-plugins';
import { readKubeletDevices } from './pod-resources';

const logger = createLogger({ service: 'device-discovery', level: 'silent' });
const GPU = 'gpufleet.io/nvidia-gpu';

/** An 8×V100 DGX-1 with the NVLink hybrid cube mesh of its `nvidia-smi topo -m`; GPU 0 of a second, MIG node. */
function dgx1(): NodeInventory {
  const text = readFileSync(join(REPO_ROOT, 'libs/device-plugin-core/src/__fixtures__/topo-m-8xv100-dgx1.txt'), 'utf8');
  const inv = node('dgx1-0', { gpus: 8, memoryMib: 32_768, links: parseNvidiaTopology(text).links });
  inv.accelerators = inv.accelerators.map((a) => ({ ...a, uuid: `GPU-v100-${a.index}` }));
  return inv;
}

function withMig(inv: NodeInventory): NodeInventory {
  const accelerators = [...inv.accelerators];
  accelerators[7] = {
    ...accelerators[7],
    migEnabled: true,
    migDevices: [{ uuid: 'MIG-7-1g', profile: '1g.10gb', index: 0, gpuInstanceId: 7, computeInstanceId: 0 }],
  };
  return { ...inv, accelerators };
}

describe('device plugin conformance (kubelet simulator over unix sockets)', () => {
  let kubelet: DevicePluginKubelet;
  let plugins: DevicePlugins | undefined;

  beforeEach(async () => {
    kubelet = await DevicePluginKubelet.start();
  });
  afterEach(async () => {
    await plugins?.stop();
    plugins = undefined;
    await kubelet.stop();
  });

  async function serve(state: DevicePluginState, inventory: NodeInventory): Promise<DevicePlugins> {
    state.update(inventory);
    plugins = new DevicePlugins({ dir: kubelet.dir, state, logger, watchIntervalMs: 50, backoff: { initialMs: 20, maxMs: 200, maxAttempts: 5 } });
    await plugins.start();
    return plugins;
  }

  it('registers each resource with the request fields the kubelet expects, then serves options and the device list', async () => {
    await serve(new DevicePluginState({ settings: { modes: ['whole', 'shared', 'slice'], sharedReplicas: 2, slicesPerCard: 4 } }), withMig(dgx1()));
    await waitFor('four registrations', () => kubelet.registrations.length === 4);
    expect(kubelet.registrations).toEqual(
      expect.arrayContaining([
        {
          version: 'v1beta1',
          endpoint: 'gpufleet-nvidia-gpu.sock',
          resourceName: 'gpufleet.io/nvidia-gpu',
          options: { preStartRequired: false, getPreferredAllocationAvailable: true },
        },
        expect.objectContaining({ endpoint: 'gpufleet-nvidia-gpu-shared.sock', resourceName: 'gpufleet.io/nvidia-gpu-shared' }),
        expect.objectContaining({ endpoint: 'gpufleet-nvidia-gpu-slice.sock', resourceName: 'gpufleet.io/nvidia-gpu-slice' }),
        expect.objectContaining({ endpoint: 'gpufleet-nvidia-mig-1g.10gb.sock', resourceName: 'gpufleet.io/nvidia-mig-1g.10gb' }),
      ]),
    );
    const devices = await kubelet.devices(GPU);
    expect(devices).toHaveLength(7);
    expect(devices[0]).toEqual({ ID: 'GPU-v100-0', health: 'Healthy', topology: { nodes: [{ ID: 0 }] } });
    expect(kubelet.plugin(GPU)?.options).toEqual({ preStartRequired: false, getPreferredAllocationAvailable: true });
    expect(await kubelet.devices('gpufleet.io/nvidia-gpu-shared')).toHaveLength(14);
    expect((await kubelet.devices('gpufleet.io/nvidia-mig-1g.10gb')).map((d) => d.ID)).toEqual(['MIG-7-1g']);
  });

  it('streams a new list on a health change, not on one transient bad reading, and recovers without a restart', async () => {
    const state = new DevicePluginState({ health: { unhealthyAfter: 2, healthyAfter: 2 } });
    const p = await serve(state, dgx1());
    await kubelet.devices(GPU);
    const updates = () => kubelet.plugin(GPU)?.updates ?? 0;
    const before = updates();
    const observe = async (ok: boolean) => p.sync(state.observe('GPU-v100-3', ok ? { ok: true } : { ok: false, reason: 'nvidia-smi probe failed' }));

    await observe(false);
    await new Promise((r) => setTimeout(r, 150));
    expect(updates()).toBe(before);
    await observe(true);
    await observe(false);
    await observe(false);
    const sick = await kubelet.devices(GPU, (ds) => ds.find((d) => d.ID === 'GPU-v100-3')?.health === 'Unhealthy');
    expect(sick.filter((d) => d.health === 'Unhealthy').map((d) => d.ID)).toEqual(['GPU-v100-3']);
    expect(updates()).toBe(before + 1);

    await observe(true);
    await observe(true);
    await kubelet.devices(GPU, (ds) => ds.every((d) => d.health === 'Healthy'));
    expect(updates()).toBe(before + 2);
  });

  it('turns a card Unhealthy at once on a fatal XID', async () => {
    const state = new DevicePluginState({ health: { unhealthyAfter: 5, healthyAfter: 1 } });
    const p = await serve(state, dgx1());
    await kubelet.devices(GPU);
    await p.sync(state.observe('GPU-v100-6', { ok: false, xid: 79 }));
    await kubelet.devices(GPU, (ds) => ds.find((d) => d.ID === 'GPU-v100-6')?.health === 'Unhealthy');
  });

  it('Allocate in every mode returns the visibility env, device nodes and annotations', async () => {
    await serve(new DevicePluginState({ settings: { modes: ['whole', 'shared', 'slice'], sharedReplicas: 2, slicesPerCard: 4 } }), withMig(dgx1()));
    await kubelet.devices(GPU);
    await kubelet.devices('gpufleet.io/nvidia-mig-1g.10gb');

    const [whole, second] = await kubelet.allocate(GPU, ['GPU-v100-0', 'GPU-v100-3'], ['GPU-v100-5']);
    expect(whole.envs).toEqual({ CUDA_VISIBLE_DEVICES: 'GPU-v100-0,GPU-v100-3', NVIDIA_VISIBLE_DEVICES: 'GPU-v100-0,GPU-v100-3', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    expect(whole.devices.map((d) => d.hostPath)).toEqual(['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia0', '/dev/nvidia3']);
    expect(whole.annotations['gpufleet.io/nvidia-gpu.devices']).toBe('GPU-v100-0,GPU-v100-3');
    expect(second.envs.CUDA_VISIBLE_DEVICES).toBe('GPU-v100-5');

    const [shared] = await kubelet.allocate('gpufleet.io/nvidia-gpu-shared', ['GPU-v100-2::1']);
    expect(shared.envs).toMatchObject({ CUDA_VISIBLE_DEVICES: 'GPU-v100-2', GPUFLEET_SHARED_TOKENS: '1' });

    const [slice] = await kubelet.allocate('gpufleet.io/nvidia-gpu-slice', ['GPU-v100-4::0', 'GPU-v100-4::1']);
    expect(slice.envs).toMatchObject({ CUDA_VISIBLE_DEVICES: 'GPU-v100-4', GPUFLEET_MEMORY_LIMIT_MIB: '16384', GPUFLEET_CORES_PERCENT: '50' });

    const [mig] = await kubelet.allocate('gpufleet.io/nvidia-mig-1g.10gb', ['MIG-7-1g']);
    expect(mig.envs).toEqual({ CUDA_VISIBLE_DEVICES: 'MIG-7-1g', NVIDIA_VISIBLE_DEVICES: 'MIG-7-1g' });
    expect(mig.devices.map((d) => d.hostPath)).toEqual(expect.arrayContaining(['/dev/nvidia7', '/dev/nvidia-caps/nvidia-cap1011', '/dev/nvidia-caps/nvidia-cap1012']));
  });

  it('refuses unknown device ids with NOT_FOUND, naming them', async () => {
    await serve(new DevicePluginState(), dgx1());
    await kubelet.devices(GPU);
    const err = (await grpcError(kubelet.allocate(GPU, ['GPU-v100-0', 'GPU-gone']))) as ServiceError;
    expect(err.code).toBe(5);
    expect(err.details).toContain('UNKNOWN_DEVICE: gpufleet.io/nvidia-gpu has no device "GPU-gone"');
  });

  it('GetPreferredAllocation picks NVLink-near GPUs on the 8-GPU DGX-1 and honours must_include_deviceIDs', async () => {
    await serve(new DevicePluginState(), dgx1());
    const all = (await kubelet.devices(GPU)).map((d) => d.ID);
    expect(await kubelet.preferredAllocation(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: [], allocationSize: 4 })).toEqual([
      'GPU-v100-0',
      'GPU-v100-1',
      'GPU-v100-2',
      'GPU-v100-3',
    ]);
    expect(await kubelet.preferredAllocation(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: ['GPU-v100-4'], allocationSize: 2 })).toEqual([
      'GPU-v100-4',
      'GPU-v100-7',
    ]);
    expect(
      await kubelet.preferredAllocation(GPU, { availableDeviceIDs: ['GPU-v100-1', 'GPU-v100-4', 'GPU-v100-5', 'GPU-v100-6'], mustIncludeDeviceIDs: [], allocationSize: 2 }),
    ).toEqual(['GPU-v100-5', 'GPU-v100-6']);
  });

  it('registers again after a kubelet restart (kubelet.sock recreated, plugin sockets deleted)', async () => {
    const p = await serve(new DevicePluginState(), dgx1());
    await kubelet.devices(GPU);
    expect(kubelet.registrations).toHaveLength(1);
    await kubelet.restart();
    expect(kubelet.plugin(GPU)).toBeUndefined();
    await waitFor('a second registration', () => kubelet.registrations.length === 2);
    expect(kubelet.registrations[1]).toEqual(kubelet.registrations[0]);
    expect(await kubelet.devices(GPU)).toHaveLength(8);
    expect(p.status()).toEqual([{ resource: GPU, socket: join(kubelet.dir, 'gpufleet-nvidia-gpu.sock'), registered: true }]);
    const [r] = await kubelet.allocate(GPU, ['GPU-v100-1']);
    expect(r.envs.CUDA_VISIBLE_DEVICES).toBe('GPU-v100-1');
  });

  it('keeps trying to register while the kubelet is not there, and registers once kubelet.sock appears', async () => {
    const dir = kubelet.dir;
    await kubelet.stop();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir, { recursive: true });
    const p = await serve(new DevicePluginState(), dgx1());
    await new Promise((r) => setTimeout(r, 120));
    expect(p.status()[0].registered).toBe(false);
    kubelet = await DevicePluginKubelet.start(dir);
    await waitFor('registration', () => p.status()[0].registered);
    expect(await kubelet.devices(GPU)).toHaveLength(8);
  });
});

describe('pod-resources (kubelet simulator)', () => {
  it('reads which gpufleet device ids the kubelet assigned to which container, and what it can assign', async () => {
    const kubelet = await PodResourcesKubelet.start();
    try {
      kubelet.assign('ml', 'train-0', 'trainer', GPU, ['GPU-v100-0', 'GPU-v100-3']);
      kubelet.assign('ml', 'train-0', 'trainer', 'example.com/fpga', ['fpga-0']);
      kubelet.assign('web', 'chat-1', 'engine', 'gpufleet.io/nvidia-gpu-shared', ['GPU-v100-5::0']);
      kubelet.allocatable = [
        { resourceName: GPU, deviceIds: ['GPU-v100-0', 'GPU-v100-1'], topology: { nodes: [{ ID: 0 }] } },
        { resourceName: GPU, deviceIds: ['GPU-v100-4'], topology: { nodes: [{ ID: 1 }] } },
        { resourceName: 'example.com/fpga', deviceIds: ['fpga-0'], topology: undefined },
      ];
      const seen = await readKubeletDevices(kubelet.socketPath);
      expect(seen.assigned).toEqual([
        { namespace: 'ml', pod: 'train-0', container: 'trainer', resource: GPU, deviceIds: ['GPU-v100-0', 'GPU-v100-3'] },
        { namespace: 'web', pod: 'chat-1', container: 'engine', resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-v100-5::0'] },
      ]);
      expect(seen.allocatable).toEqual({ [GPU]: ['GPU-v100-0', 'GPU-v100-1', 'GPU-v100-4'] });
    } finally {
      await kubelet.stop();
    }
  });
});
