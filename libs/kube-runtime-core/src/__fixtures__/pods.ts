import { AcceleratorVendor, NodeInventory, PodPlacement, podId, podStoreKey, type EngineRun, type InstanceRun, type PodRef } from '@gpufleet/contracts';
import type { KubeDesiredPod, KubePodContext } from '../pod-manifest';

export function inventory(node = 'h100-0', options: { simulated?: boolean; mig?: boolean } = {}): NodeInventory {
  return NodeInventory.fromPartial({
    nodeName: node,
    providers: options.simulated ? [{ provider: 'simulated' }] : [{ provider: 'nvidia' }],
    accelerators: [0, 1, 2, 3].map((index) => ({
      id: `nvidia-${index}`,
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      index,
      uuid: `GPU-0000000${index}-aaaa-bbbb-cccc-dddddddddddd`,
      product: 'NVIDIA H100 80GB HBM3',
      memoryMib: 81559,
      migDevices:
        options.mig && index === 0
          ? [{ uuid: 'MIG-d9a47cfb-d1f2-d08c-b40e-0812b597ae69', profile: '3g.40gb', index: 0, memoryMib: 40192, placementStart: 4 }]
          : [],
    })),
  });
}

export function context(overrides: Partial<KubePodContext> = {}, inv: NodeInventory = inventory()): KubePodContext {
  return { inventoryOf: (node) => (node === inv.nodeName ? inv : undefined), ...overrides };
}

export function engineRun(overrides: Partial<EngineRun> = {}): EngineRun {
  return {
    deployment: 'llama',
    role: 'server',
    ordinal: 0,
    model: '/models/llama-3.1-8b',
    servedModelName: 'llama',
    engine: { engine: 'vllm', version: '', mode: 'throughput', customCommand: '', multiNode: '', extraArgs: [], env: { VLLM_LOGGING_LEVEL: 'INFO' }, speculative: undefined, kvOffload: undefined, envFromSecret: { HF_TOKEN: { name: 'hf-token', key: 'token' } } },
    templateHash: 'abc123',
    artifact: '',
    gpuMemoryUtilization: 0,
    ...overrides,
  };
}

export function instanceRun(overrides: Partial<InstanceRun> = {}): InstanceRun {
  return { instance: 'dev-box', sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4 alice@laptop'], env: { PROJECT: 'x' }, command: '', envFromSecret: { WANDB_API_KEY: { name: 'wandb', key: 'key' } }, ...overrides };
}

export function placement(overrides: Partial<PodPlacement> = {}): PodPlacement {
  return PodPlacement.fromPartial({ podSet: 'server', replica: 0, pod: 0, node: 'h100-0', acceleratorIds: ['nvidia-1', 'nvidia-2'], vcpu: 16, memoryMib: 65536, ...overrides });
}

export function enginePod(overrides: { run?: Partial<EngineRun>; placement?: Partial<PodPlacement>; ref?: Partial<PodRef>; labels?: Record<string, string> } = {}): KubeDesiredPod {
  const ref: PodRef = { node: 'h100-0', namespace: 'team-a', workload: 'llama-s0-bcdfg', podSet: 'server', replica: 0, pod: 0, ...overrides.ref };
  return {
    key: podStoreKey(ref),
    ref,
    id: podId(ref),
    template: { engine: engineRun(overrides.run), instance: undefined },
    placement: placement({ podSet: ref.podSet, replica: ref.replica, pod: ref.pod, node: ref.node, ...overrides.placement }),
    workloadLabels: { 'gpufleet.io/deployment': 'llama', 'gpufleet.io/role': 'server', 'gpufleet.io/ordinal': '0', 'gpufleet.io/owner-uid': 'uid-llama', ...overrides.labels },
  };
}

export function instancePod(overrides: { run?: Partial<InstanceRun>; placement?: Partial<PodPlacement>; image?: string } = {}): KubeDesiredPod {
  const ref: PodRef = { node: 'h100-0', namespace: 'team-a', workload: 'dev-box-kx7qz', podSet: 'instance', replica: 0, pod: 0 };
  return {
    key: podStoreKey(ref),
    ref,
    id: podId(ref),
    template: { engine: undefined, instance: instanceRun(overrides.run) },
    placement: placement({ podSet: 'instance', acceleratorIds: ['nvidia-3'], vcpu: 8, memoryMib: 32768, ...overrides.placement }),
    workloadLabels: { 'gpufleet.io/instance': 'dev-box', 'gpufleet.io/owner-uid': 'uid-box' },
    ...(overrides.image ? { image: overrides.image } : {}),
  };
}
