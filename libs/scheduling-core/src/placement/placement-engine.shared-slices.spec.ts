import { admit, engineWith, node, request, shared, slice, where, whole } from './__fixtures__/fleet';

describe('PlacementEngine: shared tokens', () => {
  it('binpack puts tokens on the most used accelerator that still fits', () => {
    const engine = engineWith(node('n1', { gpus: 4 }));
    const [seven] = admit(engine, request('a/seven', [shared(7)]));
    const [four] = admit(engine, request('a/four', [shared(4)])); // 3 free beside "seven": a fresh one
    expect(four.acceleratorIds).not.toEqual(seven.acceleratorIds);
    expect(admit(engine, request('b/three', [shared(3)]))[0].acceleratorIds).toEqual(seven.acceleratorIds);
    expect(admit(engine, request('b/five', [shared(5)]))[0].acceleratorIds).toEqual(four.acceleratorIds);
  });

  it('spread puts tokens on the least used accelerator, on the node with the most free', () => {
    const engine = engineWith(node('busy', { gpus: 2 }), node('idle', { gpus: 4 }));
    const first = admit(engine, request('a/one', [shared(2)], 'spread'));
    const second = admit(engine, request('a/two', [shared(2)], 'spread'));
    expect(where(first)[0]).toMatch(/^idle:/);
    expect(where(second)[0]).toMatch(/^idle:/);
    expect(second[0].acceleratorIds).not.toEqual(first[0].acceleratorIds);
  });

  it('binpack fills a fresh accelerator on the fullest node first', () => {
    const engine = engineWith(node('roomy', { gpus: 8 }), node('tight', { gpus: 2 }));
    expect(where(admit(engine, request('a/one', [shared(2)])))[0]).toMatch(/^tight:/);
  });

  it('never hands out more than 10 tokens of one accelerator', () => {
    const engine = engineWith(node('n1', { gpus: 1 }));
    admit(engine, request('a/six', [shared(6)]));
    expect(engine.tryPlace(request('a/five', [shared(5)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    admit(engine, request('a/four', [shared(4)]));
    expect(engine.tryPlace(request('a/one', [shared(1)]))).toMatchObject({ ok: false });
  });

  it('several shared pods of one workload are packed together without overbooking', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    const placements = admit(engine, request('a/many', [shared(3, { count: 6 })]));
    const perAccelerator = new Map<string, number>();
    for (const p of placements) perAccelerator.set(p.acceleratorIds[0], (perAccelerator.get(p.acceleratorIds[0]) ?? 0) + p.sharedTokens);
    expect([...perAccelerator.values()].sort()).toEqual([9, 9]);
  });
});

describe('PlacementEngine: slices', () => {
  it('a slice in MiB holds that memory and compute of one accelerator', () => {
    const engine = engineWith(node('n1', { gpus: 1 }));
    const [pod] = admit(engine, request('a/s', [slice({ memoryMib: 20_000, coresPercent: 30 })]));
    expect(pod).toMatchObject({ node: 'n1', acceleratorIds: ['nvidia-0'], sliceMemoryMib: 20_000, sliceCoresPercent: 30 });
  });

  it('a slice in percent is converted to MiB of the chosen accelerator, rounded up', () => {
    const engine = engineWith(node('n1', { gpus: 1, memoryMib: 81_559 }));
    const [pod] = admit(engine, request('a/s', [slice({ memoryPercent: 25, coresPercent: 25 })]));
    expect(pod.sliceMemoryMib).toBe(Math.ceil(81_559 / 4));
  });

  it('slices stop at the accelerator memory and at 100 % compute', () => {
    const engine = engineWith(node('n1', { gpus: 1, memoryMib: 80_000 }));
    admit(engine, request('a/big', [slice({ memoryMib: 60_000, coresPercent: 20 })]));
    expect(engine.tryPlace(request('b/memory', [slice({ memoryMib: 30_000, coresPercent: 10 })]))).toMatchObject({ ok: false });
    admit(engine, request('b/cores', [slice({ memoryMib: 1_000, coresPercent: 80 })]));
    expect(engine.tryPlace(request('c/cores', [slice({ memoryMib: 1_000, coresPercent: 1 })]))).toMatchObject({ ok: false });
  });

  it('binpack puts a slice on the most used accelerator that fits; spread on the least used', () => {
    const engine = engineWith(node('n1', { gpus: 3 }));
    const [half] = admit(engine, request('a/half', [slice({ memoryPercent: 50, coresPercent: 50 })]));
    const [packed] = admit(engine, request('b/packed', [slice({ memoryPercent: 10, coresPercent: 10 })]));
    expect(packed.acceleratorIds).toEqual(half.acceleratorIds);
    const [spread] = admit(engine, request('c/spread', [slice({ memoryPercent: 10, coresPercent: 10 })], 'spread'));
    expect(spread.acceleratorIds).not.toEqual(half.acceleratorIds);
  });

  it('shared tokens and slices never mix on one accelerator, nor with whole use', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    const [tokens] = admit(engine, request('a/tokens', [shared(1)]));
    const [sliced] = admit(engine, request('a/slice', [slice({ memoryMib: 1_000, coresPercent: 1 })]));
    expect(sliced.acceleratorIds).not.toEqual(tokens.acceleratorIds);
    expect(engine.tryPlace(request('b/whole', [whole(1)]))).toMatchObject({ ok: false });
    expect(admit(engine, request('b/tokens', [shared(9)]))[0].acceleratorIds).toEqual(tokens.acceleratorIds);
    expect(engine.tryPlace(request('c/tokens', [shared(1)]))).toMatchObject({ ok: false });
  });

  it('a fully used accelerator goes back to whole use once its slices are released', () => {
    const engine = engineWith(node('n1', { gpus: 1 }));
    admit(engine, request('a/s1', [slice({ memoryMib: 1_000, coresPercent: 50 })]));
    admit(engine, request('a/s2', [slice({ memoryMib: 1_000, coresPercent: 50 })]));
    engine.release('a/s1');
    expect(engine.tryPlace(request('b/whole', [whole(1)]))).toMatchObject({ ok: false });
    engine.release('a/s2');
    expect(where(admit(engine, request('b/whole', [whole(1)])))).toEqual(['n1:nvidia-0']);
  });
});
