import { AcceleratorVendor, NodeInventory } from '@gpufleet/contracts';
import { validateInventory } from './validate-inventory';

const gpu = (id: string) => ({ id, vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, product: 'NVIDIA H100 80GB HBM3', memoryMib: 81559 });

describe('validateInventory', () => {
  it('accepts a well-formed inventory', () => {
    const inv = NodeInventory.fromPartial({ nodeName: 'h100-0', cluster: 'dev', generation: 1, accelerators: [gpu('nvidia-0'), gpu('nvidia-1')],
      links: [{ a: 'nvidia-0', b: 'nvidia-1' }] });
    expect(validateInventory(inv, 'dev')).toEqual([]);
  });

  it('names every bad field and what was expected', () => {
    const inv = NodeInventory.fromPartial({
      nodeName: 'Bad_Name',
      cluster: 'other',
      generation: 0,
      accelerators: [gpu('nvidia-0'), { ...gpu('nvidia-0'), vendor: AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED, memoryMib: -1 }],
      links: [{ a: 'nvidia-0', b: 'nvidia-9' }],
    });
    expect(validateInventory(inv, 'dev')).toEqual([
      'nodeName: expected a DNS-1123 name, got "Bad_Name"',
      'cluster: expected "dev", got "other"',
      'generation: expected a positive integer, got 0',
      'accelerators[1].id: expected an id unique within the node, got "nvidia-0"',
      'accelerators[1].vendor: expected a known vendor, got "ACCELERATOR_VENDOR_UNSPECIFIED"',
      'accelerators[1].memoryMib: expected a positive MiB value, got -1',
      'links[0].b: expected an accelerator id or NIC name of this node, got "nvidia-9"',
    ]);
  });
});
