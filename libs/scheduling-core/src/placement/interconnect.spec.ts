import { DeviceLink, LinkType } from '@gpufleet/contracts';
import { link, nic, node, NodeOptions } from './__fixtures__/fleet';
import { bitsOf, Interconnect } from './interconnect';

const mask = (...bits: number[]): number => bits.reduce((m, b) => m | (1 << b), 0);

/** A PCIe box: NVLink bridges join pairs; PXB within a NUMA node, SYS across. */
function bridgedBox(pairNvlinks: (pair: number) => number = () => 4, options: NodeOptions = {}): Interconnect {
  const links: DeviceLink[] = [];
  for (let a = 0; a < 8; a++) {
    for (let b = a + 1; b < 8; b++) {
      if (b === a + 1 && a % 2 === 0) links.push(link(a, b, LinkType.LINK_TYPE_NVLINK, pairNvlinks(a / 2)));
      else links.push(link(a, b, Math.floor(a / 4) === Math.floor(b / 4) ? LinkType.LINK_TYPE_PXB : LinkType.LINK_TYPE_SYS));
    }
  }
  const inventory = node('pcie-1', { links, ...options });
  return Interconnect.of(inventory, inventory.accelerators);
}

describe('Interconnect', () => {
  it('on an NVSwitch board every set is as good: the lowest free accelerators are taken', () => {
    const inventory = node('hgx-1');
    const model = Interconnect.of(inventory, inventory.accelerators);
    expect(bitsOf(model.bestSet(mask(1, 3, 5, 6, 7), 4))).toEqual([1, 3, 5, 6]);
    expect(model.bestSet(mask(1, 3), 4)).toBe(0);
  });

  it('prefers a pair joined by NVLink over PCIe neighbours', () => {
    const model = bridgedBox();
    expect(bitsOf(model.bestSet(mask(0, 2, 3, 5), 2))).toEqual([2, 3]);
  });

  it('among NVLinked pairs, prefers the one with the most links', () => {
    const model = bridgedBox((pair) => (pair === 1 ? 12 : 4));
    expect(bitsOf(model.bestSet(mask(0, 1, 2, 3), 2))).toEqual([2, 3]);
  });

  it('without a fully NVLinked set, takes the fewest PCIe hops (one NUMA node over two)', () => {
    const model = bridgedBox(() => 4, { nics: [] });
    expect(bitsOf(model.bestSet(0xff, 4))).toEqual([0, 1, 2, 3]);
  });

  it('breaks ties by NUMA affinity to an ACTIVE NIC', () => {
    const model = bridgedBox(() => 4, { nics: [nic('mlx5_0', 0, 'DOWN'), nic('mlx5_1', 1, 'ACTIVE')] });
    expect(bitsOf(model.bestSet(0xff, 4))).toEqual([4, 5, 6, 7]);
  });

  it('a GPU on the same PCIe switch as an ACTIVE NIC beats one that only shares its NUMA node', () => {
    const inventory = node('hgx-2', { nics: [nic('mlx5_0', 0), nic('mlx5_3', 0)] });
    inventory.links.push({ a: 'nvidia-2', b: 'mlx5_3', type: LinkType.LINK_TYPE_PIX });
    const model = Interconnect.of(inventory, inventory.accelerators);
    expect(bitsOf(model.bestSet(0xff, 1))).toEqual([2]);
  });

  it('a shared or sliced pod takes the free GPU least connected to the other free ones', () => {
    const model = bridgedBox();
    // GPU 2's NVLink partner (3) is taken; giving it away keeps the intact pairs whole.
    expect(model.loneFree(mask(0, 1, 2, 4, 5, 6, 7))).toBe(2);
    expect(model.loneFree(0)).toBe(-1);
  });

  it('nodes linked the same way share one model', () => {
    const a = node('hgx-a');
    const b = node('hgx-b');
    expect(Interconnect.of(a, a.accelerators)).toBe(Interconnect.of(b, b.accelerators));
  });

  it('large nodes are searched greedily and still find an NVLinked group', () => {
    const links: DeviceLink[] = [];
    for (let a = 0; a < 24; a++) {
      for (let b = a + 1; b < 24; b++) {
        const sameGroup = Math.floor(a / 8) === Math.floor(b / 8);
        links.push(link(a, b, sameGroup ? LinkType.LINK_TYPE_NVLINK : LinkType.LINK_TYPE_SYS, sameGroup ? 18 : undefined));
      }
    }
    const inventory = node('big', { gpus: 24, links });
    const model = Interconnect.of(inventory, inventory.accelerators);
    const free = (0xffffff & ~mask(0, 1, 2, 8)) >>> 0; // group 2 (16-23) is the only fully free group
    expect(bitsOf(model.bestSet(free, 8))).toEqual([16, 17, 18, 19, 20, 21, 22, 23]);
  });
});
