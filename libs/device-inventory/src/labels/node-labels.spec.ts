import { AcceleratorVendor, type Accelerator, type Nic } from '@gpufleet/contracts';
import { isValidLabelValue, toLabelValue } from './label-value';
import { computeNodeLabels, type LabelSource } from './node-labels';

function gpu(index: number, overrides: Partial<Accelerator> = {}): Accelerator {
  return {
    id: `nvidia-${index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index,
    uuid: `GPU-${index}`,
    product: 'NVIDIA H100 80GB HBM3',
    family: 'hopper',
    memoryMib: 81559,
    computeCapability: '9.0',
    migCapable: true,
    migEnabled: false,
    migDevices: [],
    ...overrides,
  };
}

function nic(name: string, state: string, linkLayer = 'InfiniBand'): Nic {
  return { name, port: 1, linkLayer, state, rateGbps: 400 };
}

function node(overrides: Partial<LabelSource> = {}): LabelSource {
  return {
    accelerators: [],
    nics: [],
    cpu: {
      vendor: 'AuthenticAMD',
      model: 'AMD EPYC 9654 96-Core Processor',
      architecture: 'x86_64',
      sockets: 2,
      cores: 192,
      logicalCpus: 384,
      numaNodes: 2,
    },
    os: 'linux/ubuntu-22.04',
    kernel: '5.15.0-105-generic',
    topology: undefined,
    ...overrides,
  };
}

describe('labels for an 8× H100 node', () => {
  const labels = computeNodeLabels(
    node({
      accelerators: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => gpu(i)),
      driverVersion: '535.129.03',
      runtimeVersion: '12.2',
      topology: { zone: 'us-east-1a', rack: 'rack 07', nvlinkDomain: 'h100-0' },
    }),
  );

  it('carries the GPU Feature Discovery product, memory, count, family and compute labels', () => {
    expect(labels).toMatchObject({
      'nvidia.com/gpu.present': 'true',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.memory': '81559',
      'nvidia.com/gpu.count': '8',
      'nvidia.com/gpu.family': 'hopper',
      'nvidia.com/gpu.compute.major': '9',
      'nvidia.com/gpu.compute.minor': '0',
      'nvidia.com/mig.capable': 'true',
    });
    expect(labels['nvidia.com/mig.strategy']).toBeUndefined();
  });

  it('splits driver and CUDA versions, keeping the revision as printed', () => {
    expect(labels).toMatchObject({
      'nvidia.com/cuda.driver.major': '535',
      'nvidia.com/cuda.driver.minor': '129',
      'nvidia.com/cuda.driver.rev': '03',
      'nvidia.com/cuda.runtime.major': '12',
      'nvidia.com/cuda.runtime.minor': '2',
    });
  });

  it('labels topology, architecture and OS the way Kubernetes and NFD name them', () => {
    expect(labels).toMatchObject({
      'gpufleet.io/zone': 'us-east-1a',
      'gpufleet.io/rack': 'rack-07',
      'gpufleet.io/nvlink-domain': 'h100-0',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'feature.node.kubernetes.io/system-os_release.ID': 'ubuntu',
      'feature.node.kubernetes.io/system-os_release.VERSION_ID': '22.04',
      'feature.node.kubernetes.io/kernel-version.full': '5.15.0-105-generic',
      'feature.node.kubernetes.io/kernel-version.major': '5',
      'feature.node.kubernetes.io/kernel-version.minor': '15',
      'feature.node.kubernetes.io/kernel-version.revision': '0',
    });
  });

  it('produces only valid label values', () => {
    for (const value of Object.values(labels)) expect(isValidLabelValue(value)).toBe(true);
  });
});

describe('labels for a MIG-partitioned A100 node', () => {
  it('uses the mixed strategy with one label set per partition type', () => {
    const mig = (profile: string, index: number, memoryMib: number) => ({ uuid: `MIG-${index}`, profile, index, memoryMib });
    const labels = computeNodeLabels(
      node({
        accelerators: [
          gpu(0, {
            product: 'NVIDIA A100-SXM4-80GB',
            migEnabled: true,
            migDevices: [mig('3g.40gb', 0, 40192), mig('2g.20gb', 1, 19968), mig('1g.10gb', 2, 9728), mig('1g.10gb', 3, 9728)],
          }),
          gpu(1, { product: 'NVIDIA A100-SXM4-80GB', migEnabled: true, migDevices: [mig('1g.10gb+me', 0, 9728)] }),
        ],
      }),
    );
    expect(labels).toMatchObject({
      'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB',
      'nvidia.com/mig.capable': 'true',
      'nvidia.com/mig.strategy': 'mixed',
      'nvidia.com/mig-1g.10gb.count': '2',
      'nvidia.com/mig-1g.10gb.memory': '9728',
      'nvidia.com/mig-1g.10gb.slices.gi': '1',
      'nvidia.com/mig-3g.40gb.count': '1',
      'nvidia.com/mig-3g.40gb.slices.ci': '3',
      'nvidia.com/mig-1g.10gb.me.count': '1',
    });
  });

  it('says mig.capable=false for GPUs without MIG', () => {
    const labels = computeNodeLabels(node({ accelerators: [gpu(0, { product: 'NVIDIA L40S', migCapable: false })] }));
    expect(labels['nvidia.com/mig.capable']).toBe('false');
  });
});

describe('labels for AMD and Ascend nodes', () => {
  it('uses the AMD labeller names, underscores in the product and VRAM in G', () => {
    const labels = computeNodeLabels(
      node({
        accelerators: [
          gpu(0, {
            id: 'amd-0',
            vendor: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
            product: 'AMD Instinct MI300X OAM',
            family: 'cdna3',
            memoryMib: 196608,
            computeCapability: 'gfx942',
            migCapable: false,
          }),
        ],
        driverVersion: '6.7.0',
      }),
    );
    expect(labels).toMatchObject({
      'amd.com/gpu.present': 'true',
      'amd.com/gpu.count': '1',
      'amd.com/gpu.product-name': 'AMD_Instinct_MI300X_OAM',
      'amd.com/gpu.family': 'cdna3',
      'amd.com/gpu.vram': '192G',
      'amd.com/gpu.driver-version': '6.7.0',
    });
    expect(Object.keys(labels).some((k) => k.startsWith('nvidia.com/'))).toBe(false);
  });

  it('labels Ascend NPUs under huawei.com/npu and the chip name as Ascend tools do', () => {
    const labels = computeNodeLabels(
      node({
        accelerators: [0, 1].map((i) =>
          gpu(i, {
            id: `ascend-${i}`,
            vendor: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
            product: 'Ascend910B3',
            family: 'ascend910',
            memoryMib: 65536,
            migCapable: false,
          }),
        ),
      }),
    );
    expect(labels).toMatchObject({
      'huawei.com/npu.present': 'true',
      'huawei.com/npu.count': '2',
      'huawei.com/npu.product': 'Ascend910B3',
      'huawei.com/npu.memory': '65536',
      'node.kubernetes.io/npu.chip.name': '910B3',
    });
  });
});

describe('RDMA labels', () => {
  it('says capable and available when an ACTIVE port exists, with its link layer', () => {
    const labels = computeNodeLabels(node({ nics: [nic('mlx5_0', 'ACTIVE', 'Ethernet'), nic('mlx5_1', 'DOWN')] }));
    expect(labels).toMatchObject({
      'feature.node.kubernetes.io/rdma.capable': 'true',
      'feature.node.kubernetes.io/rdma.available': 'true',
      'gpufleet.io/rdma.link-layer': 'Ethernet',
    });
  });

  it('says capable but not available when every port is down', () => {
    const labels = computeNodeLabels(node({ nics: [nic('mlx5_0', 'DOWN')] }));
    expect(labels['feature.node.kubernetes.io/rdma.capable']).toBe('true');
    expect(labels['feature.node.kubernetes.io/rdma.available']).toBeUndefined();
  });

  it('adds no GPU or RDMA labels to a CPU-only node, only system ones', () => {
    const labels = computeNodeLabels(node({ cpu: { ...node().cpu!, architecture: 'aarch64' } }));
    expect(Object.keys(labels).filter((k) => /nvidia|amd\.com|huawei|rdma/.test(k))).toEqual([]);
    expect(labels['kubernetes.io/arch']).toBe('arm64');
  });
});

describe('label values', () => {
  it('replaces spaces and invalid characters, and trims to 63 characters with alphanumeric ends', () => {
    expect(toLabelValue('NVIDIA H100 80GB HBM3')).toBe('NVIDIA-H100-80GB-HBM3');
    expect(toLabelValue('Intel(R) Xeon(R) Platinum 8480+')).toBe('Intel-R-Xeon-R-Platinum-8480');
    const long = toLabelValue(`${'a'.repeat(62)} b`);
    expect(long).toHaveLength(62);
    expect(isValidLabelValue(long)).toBe(true);
    expect(isValidLabelValue('-bad')).toBe(false);
  });
});
