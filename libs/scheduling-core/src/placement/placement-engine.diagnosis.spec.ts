import { A100, admit, engineWith, migDevice, node, partition, POOL, request, shared, slice, whole, hostOnly } from './__fixtures__/fleet';

describe('PlacementEngine: why a workload does not fit', () => {
  it('PoolUnavailable for a pool without nodes, or without Ready ones', () => {
    const engine = engineWith(node('n1'));
    expect(engine.tryPlace(request('a/x', [whole(1)], 'binpack', 'h200'))).toEqual({
      ok: false,
      reason: 'PoolUnavailable',
      message: "pool h200 has no nodes (is the ClusterQueue's pool name right?)",
      largestFreeBlock: 'nothing: no Ready node',
    });
    engine.upsertNode(node('n1'), false, POOL);
    expect(engine.tryPlace(request('a/x', [whole(1)]))).toMatchObject({
      reason: 'PoolUnavailable',
      message: 'pool h100 has 1 node, none of them Ready',
    });
  });

  it('NoFit for whole accelerators names the largest free block and where it is', () => {
    const engine = engineWith(node('h100-1'), node('h100-3'));
    admit(engine, request('a/x', [whole(8)]));
    admit(engine, request('a/y', [whole(6)]));
    expect(engine.tryPlace(request('b/x', [whole(4)]))).toEqual({
      ok: false,
      reason: 'NoFit',
      message: expect.stringMatching(/^pod set "main": no Ready node of pool h100 has 4 free whole accelerators \(largest free block: 2 on h100-[13]\)$/),
      largestFreeBlock: expect.stringMatching(/^2 whole accelerators on one node \(h100-[13]\)$/),
    });
  });

  it('NoFit when the accelerators are free but the vCPU or memory beside them is not', () => {
    const engine = engineWith(node('n1', { logicalCpus: 16 }));
    expect(engine.tryPlace(request('a/x', [whole(1, { vcpu: 32 })]))).toMatchObject({
      reason: 'NoFit',
      message: 'pod set "main": pool h100 has 1 whole accelerator free, but not on a node that also has 32 vCPU and 0 MiB memory free',
    });
  });

  it('NoFit when one pod fits but not all of them, with the room there is', () => {
    const engine = engineWith(node('n1'), node('n2'));
    expect(engine.tryPlace(request('a/x', [whole(8, { count: 3 })]))).toMatchObject({
      reason: 'NoFit',
      message: expect.stringContaining('pool h100 cannot hold all 3 pods of pod set "main" (8 whole accelerators each); it has room for 2 such pods'),
    });
  });

  it('NoFit for shared tokens, slices, partitions and CPU-only pods, each in its own terms', () => {
    const engine = engineWith(node('n1', { gpus: 1 }));
    admit(engine, request('a/tokens', [shared(7)]));
    expect(engine.tryPlace(request('b/tokens', [shared(5)]))).toMatchObject({
      message: 'pod set "main": no accelerator in pool h100 has 5 free shared tokens (largest free block: 3 tokens on n1/nvidia-0)',
      largestFreeBlock: '3 shared tokens on one accelerator (n1/nvidia-0)',
    });
    expect(engine.tryPlace(request('b/slice', [slice({ memoryMib: 1000, coresPercent: 10 })]))).toMatchObject({
      message: 'pod set "main": no accelerator in pool h100 has a slice of 1000 MiB and 10% compute free (largest free block: no slice)',
    });

    const mig = engineWith(node('m1', { gpus: 1, product: A100, mig: { 0: [migDevice('4g.40gb', 0, 4)] } }));
    admit(mig, request('a/four', [partition('4g.40gb')]));
    expect(mig.tryPlace(request('b/seven', [partition('7g.80gb')]))).toMatchObject({
      message: 'pod set "main": no MIG-enabled accelerator in pool h100 can hold a 7g.80gb MIG partition (largest free block: 3g.40gb on m1/nvidia-0)',
    });

    expect(engine.tryPlace(request('c/cpu', [hostOnly({ vcpu: 500 })]))).toMatchObject({
      message: 'pod set "main": no Ready node of pool h100 has 500 vCPU and 0 MiB memory free (largest free block: 224 vCPU and 2000000 MiB on n1)',
    });
  });

  it('requests no accelerator could ever satisfy are refused with what is allowed', () => {
    const engine = engineWith(node('n1'));
    expect(engine.tryPlace(request('a/x', [shared(11)]))).toMatchObject({
      reason: 'NoFit',
      message: 'pod set "main" asks 11 shared tokens; one accelerator offers 1 to 10',
    });
    expect(engine.tryPlace(request('a/y', [slice({ coresPercent: 0 })]))).toMatchObject({
      message: 'pod set "main" asks an empty slice (no memory, no compute)',
    });
  });
});
