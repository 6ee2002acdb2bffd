import type { ReplicaView } from '../replica';
import { effectiveLoad, kvSaturated } from './engine-load';

const replica = (inFlight: number, engineLoad?: ReplicaView['engineLoad']): ReplicaView => ({ id: 'r', inFlight, ejected: false, engineLoad });

describe('effectiveLoad', () => {
  it('is the in-flight count without an engine sample', () => {
    expect(effectiveLoad(replica(3))).toBe(3);
  });

  it('adds the requests of other routers: the engine’s running and waiting beyond this router’s own at the sample', () => {
    // The engine held 8; 2 of them were this router's. Since then this router sent one more.
    expect(effectiveLoad(replica(3, { running: 6, waiting: 2, inFlightAtSample: 2 }))).toBe(3 + 6);
  });

  it('never counts this router’s own requests twice, nor below its live count', () => {
    expect(effectiveLoad(replica(2, { running: 2, waiting: 0, inFlightAtSample: 2 }))).toBe(2);
    // The engine had not seen two of them yet (still connecting, or in a prefill step).
    expect(effectiveLoad(replica(4, { running: 1, waiting: 0, inFlightAtSample: 3 }))).toBe(4);
  });
});

describe('kvSaturated', () => {
  it('holds from 98 % KV cache usage', () => {
    expect(kvSaturated(replica(0, { running: 1, waiting: 0, kvCacheUsage: 0.98, inFlightAtSample: 0 }))).toBe(true);
    expect(kvSaturated(replica(0, { running: 1, waiting: 0, kvCacheUsage: 0.97, inFlightAtSample: 0 }))).toBe(false);
    expect(kvSaturated(replica(0, { running: 1, waiting: 0, inFlightAtSample: 0 }))).toBe(false);
    expect(kvSaturated(replica(0))).toBe(false);
  });
});
