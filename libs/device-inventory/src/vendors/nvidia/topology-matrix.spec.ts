import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LinkType, type DeviceLink } from '@gpufleet/contracts';
import { parseNvidiaTopology } from './topology-matrix';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

const linkBetween = (links: DeviceLink[], a: string, b: string): DeviceLink | undefined =>
  links.find((link) => (link.a === a && link.b === b) || (link.a === b && link.b === a));
const isGpu = (end: string): boolean => end.startsWith('nvidia-');

describe('parseNvidiaTopology', () => {
  describe('8×H100 NVLink machine with 8 ConnectX NICs', () => {
    const topology = parseNvidiaTopology(fixture('topo-m-8xh100-nv18-8nic.txt'));

    it('every GPU pair is NV18', () => {
      const gpuPairs = topology.links.filter((link) => isGpu(link.a) && isGpu(link.b));

      expect(gpuPairs).toHaveLength(28); // 8 choose 2, each unordered pair once
      expect(gpuPairs.every((link) => link.type === LinkType.LINK_TYPE_NVLINK && link.nvlinks === 18)).toBe(true);
    });

    it('names NICs from the NIC Legend and keeps their PCIe distance to each GPU', () => {
      expect(linkBetween(topology.links, 'nvidia-0', 'mlx5_0')).toMatchObject({ type: LinkType.LINK_TYPE_PIX });
      expect(linkBetween(topology.links, 'nvidia-1', 'mlx5_0')).toMatchObject({ type: LinkType.LINK_TYPE_NODE });
      expect(linkBetween(topology.links, 'nvidia-4', 'mlx5_0')).toMatchObject({ type: LinkType.LINK_TYPE_SYS });
      expect(linkBetween(topology.links, 'nvidia-6', 'mlx5_7')).toMatchObject({ type: LinkType.LINK_TYPE_PIX });
      expect(topology.links.some((link) => /^NIC\d/.test(link.a) || /^NIC\d/.test(link.b))).toBe(false);
    });

    it('lists each unordered pair once: 28 GPU–GPU, 64 GPU–NIC, 28 NIC–NIC', () => {
      expect(topology.links).toHaveLength(28 + 64 + 28);
      const keys = topology.links.map((link) => [link.a, link.b].sort().join('|'));
      expect(new Set(keys).size).toBe(keys.length);
    });

    it('reads CPU affinity and NUMA node per GPU, with GPU NUMA ID N/A ignored', () => {
      expect(topology.gpus).toHaveLength(8);
      expect(topology.gpus[0]).toEqual({ index: 0, cpuAffinity: '0-47,96-143', numaNode: 0 });
      expect(topology.gpus[7]).toEqual({ index: 7, cpuAffinity: '48-95,144-191', numaNode: 1 });
    });
  });

  it('raw tab-separated 8×H200 output (empty cells, trailing tabs on NIC rows) parses the same way', () => {
    const topology = parseNvidiaTopology(fixture('topo-m-8xh200-nv18-8nic-tabs.txt'));

    expect(topology.links.filter((link) => link.type === LinkType.LINK_TYPE_NVLINK)).toHaveLength(28);
    expect(linkBetween(topology.links, 'nvidia-2', 'mlx5_0')).toMatchObject({ type: LinkType.LINK_TYPE_PIX });
    expect(linkBetween(topology.links, 'nvidia-7', 'mlx5_2')).toMatchObject({ type: LinkType.LINK_TYPE_PIX });
    expect(topology.gpus[4]).toEqual({ index: 4, cpuAffinity: '64-127,192-255', numaNode: 1 });
  });

  it('PCIe-only 8×RTX 4090 machine: no NVLink, SYS between GPUs, PHB and PIX to the NICs', () => {
    const topology = parseNvidiaTopology(fixture('topo-m-8xrtx4090-pcie.txt'));

    expect(topology.links.some((link) => link.type === LinkType.LINK_TYPE_NVLINK)).toBe(false);
    expect(linkBetween(topology.links, 'nvidia-0', 'nvidia-7')).toEqual({
      a: 'nvidia-0',
      b: 'nvidia-7',
      type: LinkType.LINK_TYPE_SYS,
    });
    // No NIC Legend in this capture: the matrix labels stand as names.
    expect(linkBetween(topology.links, 'nvidia-6', 'NIC0')).toMatchObject({ type: LinkType.LINK_TYPE_PHB });
    expect(linkBetween(topology.links, 'NIC0', 'NIC1')).toMatchObject({ type: LinkType.LINK_TYPE_PIX });
    expect(topology.gpus[5]).toEqual({ index: 5, cpuAffinity: '56-111,168-223', numaNode: 1 });
  });

  it('older drivers: NIC names as column titles, NV3 pairs, no GPU NUMA ID column', () => {
    const topology = parseNvidiaTopology(fixture('topo-m-4xv100-nv3-mlx5-columns.txt'));

    expect(linkBetween(topology.links, 'nvidia-0', 'nvidia-1')).toMatchObject({ type: LinkType.LINK_TYPE_NVLINK, nvlinks: 3 });
    expect(linkBetween(topology.links, 'nvidia-0', 'nvidia-2')).toMatchObject({ type: LinkType.LINK_TYPE_SYS });
    expect(linkBetween(topology.links, 'nvidia-3', 'mlx5_3')).toMatchObject({ type: LinkType.LINK_TYPE_NODE });
    expect(topology.gpus[2]).toEqual({ index: 2, cpuAffinity: '64-127', numaNode: 8 });
  });

  it('a GPU whose CPUs a cgroup hides has no CPU affinity, but keeps its NUMA node', () => {
    // Shape of a Slurm step's `srun nvidia-smi topo -m`: the CPU Affinity cell is empty.
    const text = [
      '\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID',
      'GPU0\t X \tNV18\t\t0\t\tN/A',
      'GPU1\tNV18\t X \t56\t1\t\tN/A',
    ].join('\n');

    expect(parseNvidiaTopology(text).gpus).toEqual([
      { index: 0, numaNode: 0 },
      { index: 1, cpuAffinity: '56', numaNode: 1 },
    ]);
  });

  it('N/A affinity is absent, as is a NUMA affinity spanning several nodes', () => {
    const text = ['\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity', 'GPU0\t X \tPHB\tN/A\tN/A', 'GPU1\tPHB\t X \t0-11\t0-1'].join('\n');

    expect(parseNvidiaTopology(text).gpus).toEqual([{ index: 0 }, { index: 1, cpuAffinity: '0-11' }]);
  });

  it('a single GPU has no links, only its placement', () => {
    const text = '\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n';

    expect(parseNvidiaTopology(text)).toEqual({ links: [], gpus: [{ index: 0, cpuAffinity: '0-15', numaNode: 0 }] });
  });

  it('strips the terminal underline escapes around the header', () => {
    const text = '\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \tNV4\t0-7\t0\t\tN/A\nGPU1\tNV4\t X \t0-7\t0\t\tN/A\n';

    expect(parseNvidiaTopology(text).links).toEqual([
      { a: 'nvidia-0', b: 'nvidia-1', type: LinkType.LINK_TYPE_NVLINK, nvlinks: 4 },
    ]);
  });

  it('garbage output throws with the line number', () => {
    const text = ['\tGPU0\tGPU1\tCPU Affinity', 'GPU0\t X \tNV18\t0-7', 'GPU1\tNV18\t X \t0-7', 'GPU2\tNV18\tNV18\t0-7'].join('\n');

    expect(() => parseNvidiaTopology(text)).toThrow(/nvidia-smi topo -m: line 4: row "GPU2" is not a device named in the header/);
  });

  it('an unknown connection code throws, naming the pair', () => {
    const text = ['\tGPU0\tGPU1\tCPU Affinity', 'GPU0\t X \tWARP9\t0-7'].join('\n');

    expect(() => parseNvidiaTopology(text)).toThrow(/line 2: GPU0→GPU1 is "WARP9", not a known connection type/);
  });

  it('a short row throws', () => {
    const text = ['\tGPU0\tGPU1\tGPU2\tCPU Affinity', 'GPU0\t X \tNV18'].join('\n');

    expect(() => parseNvidiaTopology(text)).toThrow(/line 2: row GPU0 has 2 connection cells, the header names 3 devices/);
  });

  it('output without a matrix throws', () => {
    expect(() => parseNvidiaTopology('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.')).toThrow(
      /no matrix header/,
    );
  });
});
