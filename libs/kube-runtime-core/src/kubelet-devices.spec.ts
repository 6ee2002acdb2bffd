import { KubeletDevices, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { migDevice, node } from '@gpufleet/testing';
import { kubeletPodDevicesOf, ledgerCorrectionsOf, placementFromKubelet, withheldAccelerators } from './kubelet-devices';

const inventory = node('gpu-0', { gpus: 4 });
const place = (overrides: Partial<PodPlacement>): PodPlacement =>
  PodPlacement.fromPartial({ podSet: 'server', replica: 0, pod: 0, node: 'gpu-0', vcpu: 2, memoryMib: 4096, ...overrides });
const report = (overrides: Partial<KubeletDevices>): KubeletDevices => KubeletDevices.fromPartial({ node: 'gpu-0', ...overrides });

describe('placementFromKubelet', () => {
  it('takes the cards the kubelet gave a whole pod, by UUID, in index order', () => {
    const result = placementFromKubelet(place({ acceleratorIds: ['nvidia-0', 'nvidia-1'] }), { resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-3', 'GPU-2'] }, inventory);
    expect(result).toEqual({ ok: true, changed: true, placement: expect.objectContaining({ acceleratorIds: ['nvidia-2', 'nvidia-3'] }) });
  });

  it('changes nothing when the kubelet agrees, in whatever order it lists them', () => {
    const placement = place({ acceleratorIds: ['nvidia-0', 'nvidia-1'] });
    expect(placementFromKubelet(placement, { resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-1', 'GPU-0'] }, inventory)).toEqual({ ok: true, changed: false, placement });
  });

  it('moves shared tokens and a slice to the card of the units the kubelet gave', () => {
    const shared = placementFromKubelet(place({ acceleratorIds: ['nvidia-0'], sharedTokens: 2 }), { resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-2::0', 'GPU-2::5'] }, inventory);
    expect(shared).toMatchObject({ ok: true, changed: true, placement: { acceleratorIds: ['nvidia-2'], sharedTokens: 2 } });
    const slice = placementFromKubelet(place({ acceleratorIds: ['nvidia-1'], sliceMemoryMib: 20_480, sliceCoresPercent: 25 }), { resource: 'gpufleet.io/nvidia-gpu-slice', deviceIds: ['GPU-3::1'] }, inventory);
    expect(slice).toMatchObject({ ok: true, changed: true, placement: { acceleratorIds: ['nvidia-3'], sliceMemoryMib: 20_480 } });
  });

  it('takes the MIG device the kubelet gave as the partition of its card, profile and start', () => {
    const mig = node('gpu-0', { gpus: 2, mig: { 0: [migDevice('3g.40gb', 0, 4)], 1: [migDevice('3g.40gb', 4, 4)] } });
    const placement = place({ partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 0 } });
    expect(placementFromKubelet(placement, { resource: 'gpufleet.io/nvidia-mig-3g.40gb', deviceIds: ['MIG-3g.40gb-4'] }, mig)).toMatchObject({
      ok: true,
      changed: true,
      placement: { partition: { acceleratorId: 'nvidia-1', profile: '3g.40gb', start: 4 } },
    });
  });

  it('refuses what the ledger cannot hold, and says why', () => {
    const whole = place({ acceleratorIds: ['nvidia-0'] });
    expect(placementFromKubelet(whole, { resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-9'] }, inventory)).toEqual({ ok: false, message: 'device GPU-9 of gpufleet.io/nvidia-gpu is not in the inventory of node gpu-0' });
    expect(placementFromKubelet(whole, { resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-1', 'GPU-2'] }, inventory)).toEqual({ ok: false, message: 'the kubelet assigned 2 devices of gpufleet.io/nvidia-gpu, the ledger holds 1' });
    expect(placementFromKubelet(whole, { resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-1::0'] }, inventory)).toEqual({ ok: false, message: 'the kubelet assigned gpufleet.io/nvidia-gpu-shared, but the pod asks for gpufleet.io/nvidia-gpu' });
    const shared = place({ acceleratorIds: ['nvidia-0'], sharedTokens: 2 });
    expect(placementFromKubelet(shared, { resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-1::0', 'GPU-2::0'] }, inventory)).toEqual({
      ok: false,
      message: 'the kubelet spread the pod\'s gpufleet.io/nvidia-gpu-shared units over 2 cards (nvidia-1, nvidia-2); the ledger holds them on one accelerator',
    });
  });
});

describe('ledgerCorrectionsOf', () => {
  const ledger: NodeLedger = {
    node: 'gpu-0',
    entries: [
      { workload: 'default/a', pod: place({ acceleratorIds: ['nvidia-0'] }) },
      { workload: 'default/b', pod: place({ acceleratorIds: ['nvidia-1'] }) },
      { workload: 'default/c', pod: place({ acceleratorIds: ['nvidia-2'] }) },
      { workload: 'default/cpu', pod: place({}) },
    ],
  };
  const pods: Record<string, string> = { 'default/a/server/0/0': 'gpufleet/default-a', 'default/b/server/0/0': 'gpufleet/default-b', 'default/cpu/server/0/0': 'gpufleet/default-cpu' };
  const assigned = [
    { namespace: 'gpufleet', pod: 'default-a', container: 'engine', resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-3'] },
    { namespace: 'gpufleet', pod: 'default-b', container: 'engine', resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-1'] },
  ];

  it('corrects the entries whose Pod the kubelet gave other devices, and only those', () => {
    const check = ledgerCorrectionsOf({ ledger, inventory, report: report({ assigned }), kubePodOf: (id) => pods[id] });
    expect(check.problems).toEqual([]);
    expect(check.corrections).toEqual([
      { workload: 'default/a', kubePod: 'gpufleet/default-a', resource: 'gpufleet.io/nvidia-gpu', before: ledger.entries[0].pod, after: { ...ledger.entries[0].pod, acceleratorIds: ['nvidia-3'] } },
    ]);
  });

  it('leaves entries alone whose Pod the kubelet lists no devices for, or that have no Pod', () => {
    expect(ledgerCorrectionsOf({ ledger, inventory, report: report({}), kubePodOf: (id) => pods[id] })).toEqual({ corrections: [], problems: [] });
    expect(ledgerCorrectionsOf({ ledger, inventory, report: report({ assigned }), kubePodOf: () => undefined })).toEqual({ corrections: [], problems: [] });
  });

  it('reports a Pod holding two gpufleet resources instead of guessing', () => {
    const both = [...assigned, { namespace: 'gpufleet', pod: 'default-b', container: 'side', resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-1::0'] }];
    expect(ledgerCorrectionsOf({ ledger, inventory, report: report({ assigned: both }), kubePodOf: (id) => pods[id] }).problems).toEqual([
      { workload: 'default/b', kubePod: 'gpufleet/default-b', message: 'the kubelet assigned several gpufleet resources (gpufleet.io/nvidia-gpu, gpufleet.io/nvidia-gpu-shared); a pod holds one' },
    ]);
  });

  it('joins the containers of one Pod', () => {
    const split = kubeletPodDevicesOf(report({ assigned: [assigned[0], { ...assigned[0], container: 'second', deviceIds: ['GPU-0', 'GPU-3'] }] }));
    expect(split.get('gpufleet/default-a')).toEqual([{ resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-3', 'GPU-0'] }]);
  });
});

describe('withheldAccelerators', () => {
  it('withholds the cards none of whose devices the kubelet may allocate', () => {
    const allocatable = [
      { resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-0', 'GPU-2'] },
      { resource: 'gpufleet.io/nvidia-gpu-shared', deviceIds: ['GPU-1::0', 'GPU-1::1'] },
    ];
    expect([...withheldAccelerators(inventory, report({ allocatable }))]).toEqual(['nvidia-3']);
  });

  it('counts a MIG card allocatable through its MIG devices', () => {
    const mig = node('gpu-0', { gpus: 2, mig: { 0: [migDevice('3g.40gb', 0, 4)] } });
    expect([...withheldAccelerators(mig, report({ allocatable: [{ resource: 'gpufleet.io/nvidia-mig-3g.40gb', deviceIds: ['MIG-3g.40gb-0'] }] }))]).toEqual(['nvidia-1']);
  });

  it('withholds nothing without a report, or when the kubelet lists no gpufleet resource yet', () => {
    expect(withheldAccelerators(inventory, undefined).size).toBe(0);
    expect(withheldAccelerators(inventory, report({})).size).toBe(0);
  });
});
