import * as path from 'node:path';
import { parsePortRate, parsePortState, readRdmaNics } from './rdma';
import { RdmaProvider } from './rdma-provider';

const fixture = (name: string) => path.join(__dirname, '__fixtures__', name);

describe('reading RDMA NICs from /sys/class/infiniband', () => {
  it('reads an 8× ConnectX-7 NDR InfiniBand node with PCI address, NUMA node and IPoIB netdev', async () => {
    const nics = await readRdmaNics(fixture('epyc-9654-ndr'));
    expect(nics).toHaveLength(8);
    expect(nics[0]).toEqual({
      name: 'mlx5_0',
      port: 1,
      linkLayer: 'InfiniBand',
      state: 'ACTIVE',
      rateGbps: 400,
      numaNode: 0,
      pciBusId: '0000:01:00.0',
      netdev: 'ibp1s0',
    });
    expect(nics.map((n) => n.numaNode)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(nics[7]).toMatchObject({ name: 'mlx5_7', pciBusId: '0000:e1:00.0', netdev: 'ibp225s0' });
  });

  it('reads RoCE ports (Ethernet link layer) through sysfs device symlinks', async () => {
    const nics = await readRdmaNics(fixture('grace-roce'));
    expect(nics).toEqual([
      {
        name: 'mlx5_0',
        port: 1,
        linkLayer: 'Ethernet',
        state: 'ACTIVE',
        rateGbps: 200,
        numaNode: 0,
        pciBusId: '0002:01:00.0',
        netdev: 'enP2p1s0f0np0',
      },
      {
        name: 'mlx5_1',
        port: 1,
        linkLayer: 'Ethernet',
        state: 'ACTIVE',
        rateGbps: 200,
        numaNode: 0,
        pciBusId: '0002:01:00.1',
        netdev: 'enP2p1s0f1np1',
      },
    ]);
  });

  it('reports a DOWN port as DOWN and leaves an unknown NUMA node (-1) and a missing netdev absent', async () => {
    const nics = await readRdmaNics(fixture('ib-down-port'));
    expect(nics.map((n) => `${n.name}:${n.state}`)).toEqual(['mlx5_0:ACTIVE', 'mlx5_1:DOWN']);
    expect(nics[1]).toEqual({
      name: 'mlx5_1',
      port: 1,
      linkLayer: 'InfiniBand',
      state: 'DOWN',
      rateGbps: 10,
      pciBusId: '0000:25:00.1',
    });
    expect(nics[0].numaNode).toBeUndefined();
  });

  it('finds no NICs on a node without /sys/class/infiniband', async () => {
    expect(await readRdmaNics(fixture('no-infiniband'))).toEqual([]);
  });

  it('parses port state and rate strings as sysfs prints them', () => {
    expect(parsePortState('4: ACTIVE\n')).toBe('ACTIVE');
    expect(parsePortState('3: ARMED')).toBe('ARMED');
    expect(parsePortRate('400 Gb/sec (4X NDR)')).toBe(400);
    expect(parsePortRate('2.5 Gb/sec (1X SDR)')).toBe(3);
    expect(parsePortRate('garbage')).toBeUndefined();
  });
});

describe('RdmaProvider', () => {
  it('returns the NICs as its detection result', async () => {
    const provider = new RdmaProvider(fixture('grace-roce'));
    expect(provider.name).toBe('rdma');
    expect(await provider.available()).toBe(true);
    expect((await provider.detect()).nics).toHaveLength(2);
  });

  it('says "nothing here" (an empty list, not an error) when the node has no RDMA devices', async () => {
    expect(await new RdmaProvider(fixture('no-infiniband')).detect()).toEqual({ nics: [] });
  });
});
