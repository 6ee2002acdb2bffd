import {
  Accelerator,
  AcceleratorVendor,
  keyOfSpec,
  NodeInventory,
  NodeLedger,
  PodPlacement,
  storeKey,
  Workload,
  WorkloadPhase,
  type PodTemplate,
  type SecretKeyRef,
} from '@gpufleet/contracts';

export const NODE = 'h100-0';

export function accelerator(vendor: 'nvidia' | 'amd' | 'ascend', index: number, extra: Partial<Accelerator> = {}): Accelerator {
  const enumOf = { nvidia: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, amd: AcceleratorVendor.ACCELERATOR_VENDOR_AMD, ascend: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND };
  return {
    ...Accelerator.fromJSON({}),
    id: `${vendor}-${index}`,
    vendor: enumOf[vendor],
    index,
    uuid: `GPU-0000000${index}-aaaa-bbbb-cccc-00000000000${index}`,
    memoryMib: 81_559,
    ...extra,
  };
}

/** Four H100s; nvidia-3 is MIG-enabled with a 3g.40gb at start 4 and a 1g.10gb at start 0. */
export function inventory(extra: Partial<NodeInventory> = {}): NodeInventory {
  return {
    ...NodeInventory.fromJSON({}),
    nodeName: NODE,
    cluster: 'dev',
    accelerators: [
      accelerator('nvidia', 0),
      accelerator('nvidia', 1),
      accelerator('nvidia', 2),
      accelerator('nvidia', 3, {
        migEnabled: true,
        migDevices: [
          { uuid: 'MIG-11111111-2222-3333-4444-555555555555', profile: '3g.40gb', index: 0, placementStart: 4, placementSize: 4, memoryMib: 40_192 },
          { uuid: 'MIG-66666666-7777-8888-9999-000000000000', profile: '1g.10gb', index: 1, placementStart: 0, placementSize: 1, memoryMib: 9_856 },
        ],
      }),
    ],
    providers: [{ provider: 'simulated', ok: true, error: '', lastSuccess: undefined, lastAttempt: undefined }],
    ...extra,
  };
}

export function placement(extra: Partial<PodPlacement> = {}): PodPlacement {
  return { ...PodPlacement.fromJSON({}), podSet: 'server', replica: 0, pod: 0, node: NODE, ...extra };
}

export const engineTemplate = (extra: { engine?: string; templateHash?: string; artifact?: string; env?: Record<string, string>; envFromSecret?: Record<string, SecretKeyRef> } = {}): PodTemplate => ({
  engine: {
    deployment: 'llama',
    role: 'server',
    ordinal: 0,
    model: '/models/llama-3-8b',
    servedModelName: 'llama-3-8b',
    engine: {
      engine: extra.engine ?? 'vllm',
      version: '',
      mode: 'latency',
      customCommand: '',
      multiNode: '',
      extraArgs: [],
      env: extra.env ?? {},
      speculative: undefined,
      kvOffload: undefined,
      envFromSecret: extra.envFromSecret ?? {},
    },
    templateHash: extra.templateHash ?? 'tpl-1',
    artifact: extra.artifact ?? '',
    gpuMemoryUtilization: 0,
  },
});

export const instanceTemplate = (extra: { keys?: string[]; env?: Record<string, string>; envFromSecret?: Record<string, SecretKeyRef>; command?: string } = {}): PodTemplate => ({
  instance: {
    instance: 'alice-dev',
    sshPublicKeys: extra.keys ?? ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk2Yf7pXb1nG7dGZ9T0x4pD4b3mC8gI0rVq7m1QGQxU alice@laptop'],
    env: extra.env ?? { NOTEBOOK: '1' },
    envFromSecret: extra.envFromSecret ?? {},
    command: extra.command ?? '',
  },
});

export function workload(name: string, template: PodTemplate | undefined, phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED, namespace = 'team-a'): Workload {
  const w = Workload.fromJSON({ spec: { name, namespace }, status: {} });
  w.spec!.template = template;
  w.status!.phase = phase;
  return w;
}

export function ledger(entries: Array<{ workload: string; pod: PodPlacement }>): NodeLedger {
  return { node: NODE, entries };
}

/** The workloads bucket's shape: keyed "<namespace>.<name>". */
export function workloadMap(...workloads: Workload[]): Map<string, Workload> {
  return new Map(workloads.map((w) => [storeKey(keyOfSpec(w.spec!)), w]));
}
