import type { AcceleratorVendor, Cpu, Memory, TopologyPlacement } from '@gpufleet/contracts';
import type { Interconnect } from '../catalog';

export type RdmaLinkLayer = 'InfiniBand' | 'Ethernet';

/** One MIG partition with its resolved placement on the GPU's memory slices. */
export interface MigPartition {
  /** e.g. "3g.40gb" */
  profile: string;
  /** First memory slice. */
  start: number;
  /** Memory slices occupied. */
  size: number;
  computeSlices: number;
  /** MiB */
  memoryMib: number;
}

export interface FleetAccelerators {
  vendor: AcceleratorVendor;
  /** As the vendor tool prints it, e.g. "NVIDIA H100 80GB HBM3". */
  product: string;
  family: string;
  /** MiB per accelerator */
  memoryMib: number;
  computeCapability?: string;
  count: number;
  interconnect: Interconnect;
  /** Bonded NVLinks between every pair (interconnect "nvlink"). */
  nvlinks?: number;
  /** GPUs behind one PCIe switch (interconnect "pcie"): such pairs are PIX, others NODE/SYS. */
  gpusPerPcieSwitch: number;
  powerLimitWatts?: number;
  migCapable: boolean;
  migEnabled: boolean;
  /** Partitions per GPU index, sorted by placement; empty lists when MIG is off. */
  migLayouts: MigPartition[][];
}

export interface FleetNics {
  count: number;
  /** Gb/s */
  rateGbps: number;
  linkLayer: RdmaLinkLayer;
  /** Device name prefix, "mlx5_" → mlx5_0, mlx5_1, ... */
  namePrefix: string;
  /** NIC indices whose port is DOWN. */
  down: number[];
}

/** One simulated node, with every default applied. */
export interface FleetNode {
  name: string;
  /** Index of the `nodes` entry that produced it, and its ordinal within that entry. */
  group: number;
  ordinal: number;
  cpu: Cpu;
  memory: Memory;
  /** GiB */
  localStorageGib: number;
  os: string;
  kernel: string;
  driverVersion?: string;
  runtimeVersion?: string;
  topology: TopologyPlacement;
  /** The node's own labels (operator-set), merged over the computed ones by the agent. */
  labels: Record<string, string>;
  /** Absent on CPU-only nodes. */
  accelerators?: FleetAccelerators;
  /** Absent on nodes without RDMA. */
  nics?: FleetNics;
}

export interface Fleet {
  cluster: string;
  nodes: FleetNode[];
}
