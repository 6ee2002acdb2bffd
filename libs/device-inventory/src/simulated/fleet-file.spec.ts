import * as path from 'node:path';
import { AcceleratorVendor } from '@gpufleet/contracts';
import { FleetFileError } from './field-reader';
import { loadFleetFile, parseFleet } from './fleet-file';

const DEV_FLEET = path.resolve(__dirname, '../../../../examples/fleets/dev.yaml');
const FLEET_1000 = path.resolve(__dirname, '../../../../examples/fleets/fleet-1000.yaml');

function issuesOf(text: string): string[] {
  try {
    parseFleet(text);
  } catch (error) {
    if (error instanceof FleetFileError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  throw new Error('expected the fleet file to be rejected');
}

describe('the 1,000-node example fleet', () => {
  it('has 500 H100, 300 L40S, 150 A100 (30 with MIG) and 50 CPU nodes: 6,400 accelerators', async () => {
    const fleet = await loadFleetFile(FLEET_1000);
    expect(fleet.cluster).toBe('dev');
    expect(fleet.nodes).toHaveLength(1000);
    expect(new Set(fleet.nodes.map((n) => n.name)).size).toBe(1000);
    const nodes = (prefix: RegExp) => fleet.nodes.filter((n) => prefix.test(n.name));
    expect([/^h100-\d+$/, /^l40s-\d+$/, /^a100-\d+$/, /^a100-mig-\d+$/, /^cpu-\d+$/].map((p) => nodes(p).length)).toEqual([500, 300, 120, 30, 50]);
    expect(fleet.nodes.reduce((sum, n) => sum + (n.accelerators?.count ?? 0), 0)).toBe(6400);
    expect(nodes(/^a100-mig-/).every((n) => n.accelerators!.migLayouts.every((layout) => layout.map((p) => p.profile).sort().join() === '2g.20gb,2g.20gb,3g.40gb'))).toBe(true);
    expect(nodes(/^cpu-/).every((n) => n.accelerators === undefined)).toBe(true);
  });
});

describe('the dev fleet', () => {
  it('has 5 nodes: 16 H100, 4 L40S, 8 A100 with MIG enabled, and a CPU-only node', async () => {
    const fleet = await loadFleetFile(DEV_FLEET);
    expect(fleet.cluster).toBe('dev');
    expect(fleet.nodes.map((n) => n.name)).toEqual(['h100-0', 'h100-1', 'l40s-0', 'a100-mig-0', 'cpu-0']);
    const count = (product: string) =>
      fleet.nodes.filter((n) => n.accelerators?.product === product).reduce((sum, n) => sum + n.accelerators!.count, 0);
    expect(count('NVIDIA H100 80GB HBM3')).toBe(16);
    expect(count('NVIDIA L40S')).toBe(4);
    expect(count('NVIDIA A100-SXM4-80GB')).toBe(8);
    const a100 = fleet.nodes.find((n) => n.name === 'a100-mig-0')!.accelerators!;
    expect(a100.migEnabled).toBe(true);
    expect(a100.migLayouts.every((layout) => layout.length > 0)).toBe(true);
    expect(fleet.nodes.find((n) => n.name === 'cpu-0')!.accelerators).toBeUndefined();
  });

  it('gives the H100 nodes 2 × Xeon 8480+, 2 TiB, 8 × 400G InfiniBand and their own NVLink domain', async () => {
    const h100 = (await loadFleetFile(DEV_FLEET)).nodes[1];
    expect(h100.cpu).toEqual({
      vendor: 'GenuineIntel',
      model: 'Intel(R) Xeon(R) Platinum 8480+',
      architecture: 'x86_64',
      sockets: 2,
      cores: 112,
      logicalCpus: 224,
      numaNodes: 2,
    });
    expect(h100.memory.totalMib).toBe(2048 * 1024);
    expect(h100.nics).toEqual({ count: 8, rateGbps: 400, linkLayer: 'InfiniBand', namePrefix: 'mlx5_', down: [] });
    expect(h100.topology).toEqual({ zone: 'dev-a', rack: 'rack-1', nvlinkDomain: 'h100-1' });
    expect(h100.accelerators).toMatchObject({ interconnect: 'nvlink', nvlinks: 18, memoryMib: 81559, computeCapability: '9.0' });
    expect(h100.labels).toEqual({ 'gpufleet.io/node-class': 'training' });
  });
});

describe('a short fleet file', () => {
  it('fills vendor, memory, compute capability, family, NVLink and versions from the product', () => {
    const fleet = parseFleet('cluster: lab\nnodes:\n  - name: n0\n    accelerators: { product: NVIDIA H100 80GB HBM3, count: 8 }\n');
    const node = fleet.nodes[0];
    expect(node.accelerators).toMatchObject({
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      family: 'hopper',
      memoryMib: 81559,
      computeCapability: '9.0',
      interconnect: 'nvlink',
      nvlinks: 18,
      migCapable: true,
      migEnabled: false,
    });
    expect(node).toMatchObject({ driverVersion: '550.54.15', runtimeVersion: '12.4', os: 'linux/ubuntu-22.04' });
    expect(node.cpu).toMatchObject({ sockets: 2, cores: 112, logicalCpus: 224 });
    expect(node.topology.nvlinkDomain).toBe('n0');
  });

  it('keeps versions and compute capabilities as written, not as YAML numbers', () => {
    const fleet = parseFleet(
      'cluster: lab\nnodes:\n  - name: n0\n    runtimeVersion: 12.10\n    accelerators: { product: Acme X1, vendor: nvidia, memoryGib: 48, computeCapability: 10.0, count: 1 }\n',
    );
    expect(fleet.nodes[0].runtimeVersion).toBe('12.10');
    expect(fleet.nodes[0].accelerators).toMatchObject({ computeCapability: '10.0', memoryMib: 49152, interconnect: 'pcie' });
  });

  it('infers cores from the model name and uses one socket and no SMT for Arm', () => {
    const fleet = parseFleet(
      'cluster: lab\nnodes:\n  - name: epyc\n    cpu: { model: AMD EPYC 9654 96-Core Processor }\n  - name: grace\n    cpu: { model: Neoverse-V2 }\n',
    );
    expect(fleet.nodes[0].cpu).toMatchObject({ vendor: 'AuthenticAMD', sockets: 2, cores: 192, logicalCpus: 384 });
    expect(fleet.nodes[1].cpu).toMatchObject({ vendor: 'ARM', architecture: 'aarch64', sockets: 1, cores: 72, logicalCpus: 72 });
  });

  it('merges defaults under each node, field by field', () => {
    const fleet = parseFleet(
      'cluster: lab\ndefaults:\n  topology: { zone: z1, rack: "rack-{index}" }\n  labels: { team: a, host: "node-{name}" }\n  nics: { count: 2, linkLayer: roce }\nnodes:\n  - name: n-{0..1}\n    labels: { tier: gold }\n    nics: { rateGbps: 100 }\n',
    );
    expect(fleet.nodes.map((n) => n.topology.rack)).toEqual(['rack-0', 'rack-1']);
    expect(fleet.nodes[1].labels).toEqual({ team: 'a', host: 'node-n-1', tier: 'gold' });
    expect(fleet.nodes[0].nics).toMatchObject({ count: 2, rateGbps: 100, linkLayer: 'Ethernet' });
  });
});

describe('node names', () => {
  it('expands a range pattern, keeping zero padding', () => {
    const fleet = parseFleet('cluster: lab\nnodes:\n  - name: gpu-{08..10}\n');
    expect(fleet.nodes.map((n) => n.name)).toEqual(['gpu-08', 'gpu-09', 'gpu-10']);
  });

  it('numbers namePrefix nodes from 0', () => {
    const fleet = parseFleet('cluster: lab\nnodes:\n  - namePrefix: cpu-\n    count: 3\n');
    expect(fleet.nodes.map((n) => `${n.name}#${n.ordinal}`)).toEqual(['cpu-0#0', 'cpu-1#1', 'cpu-2#2']);
  });
});

describe('fleet file validation', () => {
  it('names the field and the expectation: a count that is not a number', () => {
    expect(
      issuesOf('cluster: dev\nnodes:\n  - name: a\n  - name: b\n  - name: c\n    accelerators: { product: NVIDIA H100 80GB HBM3, count: eight }\n'),
    ).toEqual(['nodes[2].accelerators.count: expected a positive integer, got "eight"']);
  });

  it('reports every problem at once, each with its path', () => {
    const issues = issuesOf(
      [
        'cluster: Dev_Cluster',
        'nodes:',
        '  - name: n0',
        '    acelerators: {}',
        '    memoryGib: -4',
        '    cpu: { sockets: two }',
        '    labels: { "team": "has spaces" }',
        '    nics: { count: 2, down: [5], linkLayer: token-ring }',
      ].join('\n'),
    );
    expect(issues).toEqual([
      'cluster: expected a cluster name of lower-case letters, digits and "-" (at most 63), got "Dev_Cluster"',
      expect.stringMatching(/^nodes\[0\]\.acelerators: unknown field; expected one of name, namePrefix, count, accelerators, /),
      'nodes[0].cpu.sockets: expected a positive integer, got "two"',
      'nodes[0].memoryGib: expected a positive integer, got -4',
      'nodes[0].labels.team: expected a label value (up to 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends), got "has spaces"',
      'nodes[0].nics.linkLayer: expected one of infiniband, ib, ethernet, roce, got "token-ring"',
      'nodes[0].nics.down[0]: expected a NIC index from 0 to 1, got 5',
    ]);
  });

  it('requires the cluster, the nodes and a name for each', () => {
    expect(issuesOf('nodes:\n  - count: 2\n')).toEqual([
      'cluster: expected a cluster name such as "dev", got nothing',
      'nodes[0].name: expected a node name or a pattern such as "h100-{0..1}" (or namePrefix with count), got nothing',
    ]);
  });

  it('asks for vendor and memory of a product outside the catalog', () => {
    expect(issuesOf('cluster: x\nnodes:\n  - name: n\n    accelerators: { product: Acme X1, count: 2 }\n')).toEqual([
      'nodes[0].accelerators.vendor: expected one of nvidia, amd, ascend ("Acme X1" is not in the built-in catalog), got nothing',
      'nodes[0].accelerators.memoryMib: expected a positive integer (MiB per accelerator; "Acme X1" is not in the built-in catalog), got nothing',
    ]);
  });

  it('rejects a name pattern whose count disagrees, and duplicate node names', () => {
    expect(issuesOf('cluster: x\nnodes:\n  - name: h-{0..1}\n    count: 3\n  - name: h-1\n')).toEqual([
      'nodes[0].count: expected 2 ("h-{0..1}" names 2 nodes), got 3',
      'nodes[1].name: node name "h-1" is already used by nodes[0]',
    ]);
  });

  it('rejects MIG on a GPU without MIG', () => {
    expect(
      issuesOf('cluster: x\nnodes:\n  - name: n\n    accelerators: { product: NVIDIA L40S, count: 4, mig: { partitions: [1g.10gb] } }\n'),
    ).toEqual(['nodes[0].accelerators.mig.enabled: "NVIDIA L40S" does not support MIG (set mig.capable: true if it does)']);
  });

  it('rejects an unknown MIG profile, listing the ones the GPU has', () => {
    expect(
      issuesOf('cluster: x\nnodes:\n  - name: n\n    accelerators: { product: NVIDIA A100-SXM4-80GB, count: 1, mig: { partitions: [3g.40gb, 1g.5gb] } }\n'),
    ).toEqual([
      'nodes[0].accelerators.mig.partitions[1].profile: expected one of 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb (MIG profiles of a 80 GB GPU), got "1g.5gb"',
    ]);
  });

  it('rejects MIG layouts that exceed the GPU or overlap, naming the GPU', () => {
    const mig = (m: string) => `cluster: x\nnodes:\n  - name: n\n    accelerators: { product: NVIDIA H100 80GB HBM3, count: 2, mig: ${m} }\n`;
    expect(issuesOf(mig('{ partitions: [7g.80gb, 1g.10gb] }'))).toEqual([
      'nodes[0].accelerators.mig.partitions[1]: 1g.10gb does not fit on each GPU: the partitions so far need 8 compute slices, a 80 GB GPU has 7',
    ]);
    expect(issuesOf(mig('{ gpus: { 1: [3g.40gb@4, 4g.40gb@0, 2g.20gb@4] } }'))).toEqual([
      'nodes[0].accelerators.mig.gpus.1[2]: 2g.20gb does not fit on GPU 1: the partitions so far need 9 compute slices, a 80 GB GPU has 7',
    ]);
    expect(issuesOf(mig('{ gpus: { 0: [3g.40gb@4, 2g.20gb@4] } }'))).toEqual([
      'nodes[0].accelerators.mig.gpus.0[1]: 2g.20gb at start 4 overlaps 3g.40gb@4 on GPU 0 (memory slices 4-5)',
    ]);
    expect(issuesOf(mig('{ partitions: [3g.40gb@2] }'))).toEqual([
      'nodes[0].accelerators.mig.partitions[0].start: expected one of 0, 4 for 3g.40gb, got 2',
    ]);
    expect(issuesOf(mig('{ gpus: { 2: [] } }'))).toEqual([
      'nodes[0].accelerators.mig.gpus.2: expected a GPU index from 0 to 1, got "2"',
    ]);
  });

  it('points at the line of a YAML syntax error', () => {
    expect(issuesOf('cluster: x\nnodes:\n  - name: [unclosed\n')[0]).toMatch(/^line \d+, column \d+: /);
  });

  it('puts the file name and a reason code in the error message', async () => {
    await expect(loadFleetFile('/no/such/fleet.yaml')).rejects.toThrow('cannot read fleet file /no/such/fleet.yaml');
    expect(() => parseFleet('cluster: x\n', 'fleets/x.yaml')).toThrow(/^INVALID_FLEET_FILE: fleets\/x\.yaml has 1 problem/);
  });
});
