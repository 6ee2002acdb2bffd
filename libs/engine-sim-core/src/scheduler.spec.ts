import type { KvCacheEvent } from '@gpufleet/contracts';
import { ManualClock } from './clock';
import { EngineScheduler, KvCapacityError, type EngineSettings, type SequenceResult, type SequenceSpec } from './scheduler';

const settings = (overrides: Partial<EngineSettings> = {}): EngineSettings => ({
  maxNumSeqs: 4,
  blockSize: 16,
  kvCacheBlocks: 1000,
  enablePrefixCaching: true,
  prefillUsPerToken: 100, // 0.1 ms per prompt token
  itlMs: 10,
  loadSlowdown: 0,
  latencyJitter: 0,
  seed: 1,
  ...overrides,
});

const prompt = (length: number, from = 1000): number[] => Array.from({ length }, (_, i) => from + i);

interface Recorded {
  tokens: number[];
  tokenAt: number[];
  result?: SequenceResult;
  admittedAt?: number;
}

function submit(scheduler: EngineScheduler, clock: ManualClock, spec: SequenceSpec): { rec: Recorded; cancel: () => void } {
  const rec: Recorded = { tokens: [], tokenAt: [] };
  const handle = scheduler.submit(spec, {
    onAdmitted: () => (rec.admittedAt = clock.now()),
    onToken: (i) => {
      rec.tokens.push(i);
      rec.tokenAt.push(clock.now());
    },
    onFinish: (result) => (rec.result = result),
  });
  return { rec, cancel: () => handle.cancel() };
}

describe('EngineScheduler timing (fake clock)', () => {
  it('delivers the first token after prefill and the rest one ITL apart', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings(), clock);
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 4, granularity: 'token' });
    clock.advance(9.99);
    expect(rec.tokens).toEqual([]);
    clock.advance(0.01);
    expect(rec.tokenAt).toEqual([10]);
    clock.advance(100);
    expect(rec.tokenAt).toEqual([10, 20, 30, 40]);
    expect(rec.result).toMatchObject({ ttftMs: 10, prefillMs: 10, decodeMs: 30, e2eMs: 40, outputTokens: 4, promptTokens: 100, cachedTokens: 0, aborted: false });
    expect(rec.result!.tokenTimesMs).toEqual([10, 20, 30, 40]);
    expect(scheduler.running).toBe(0);
  });

  it('finishes a non-streamed request with one timer and the same timing', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings(), clock);
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 4, granularity: 'final' });
    clock.advance(39.9);
    expect(rec.result).toBeUndefined();
    clock.advance(0.1);
    expect(rec.result).toMatchObject({ ttftMs: 10, decodeMs: 30, e2eMs: 40, outputTokens: 4, tokenTimesMs: [] });
    expect(rec.tokens).toEqual([]);
  });

  it('answers on the next turn with zero latency', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ prefillUsPerToken: 0, itlMs: 0 }), clock);
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(10), outputTokens: 16, granularity: 'token' });
    expect(rec.result).toBeUndefined();
    clock.flush();
    expect(rec.tokens).toHaveLength(16);
    expect(rec.result).toMatchObject({ e2eMs: 0, outputTokens: 16 });
  });

  it('skips the prefill of cached prefix blocks, keeping the last prompt token computed', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ itlMs: 0 }), clock);
    const first = submit(scheduler, clock, { promptTokenIds: prompt(160), outputTokens: 1, granularity: 'final' });
    clock.advance(100);
    expect(first.rec.result).toMatchObject({ ttftMs: 16, cachedTokens: 0, queriedTokens: 160 });
    const again = submit(scheduler, clock, { promptTokenIds: prompt(160), outputTokens: 1, granularity: 'final' });
    clock.advance(100);
    // 160 tokens = 10 full blocks; at most 9 may hit so that the last token is recomputed.
    expect(again.rec.result).toMatchObject({ cachedTokens: 144 });
    expect(again.rec.result!.ttftMs).toBeCloseTo(1.6);
    const extended = submit(scheduler, clock, { promptTokenIds: prompt(200), outputTokens: 1, granularity: 'final' });
    clock.advance(100);
    expect(extended.rec.result).toMatchObject({ cachedTokens: 160 });
    expect(extended.rec.result!.ttftMs).toBeCloseTo(4);
  });

  it('slows prefill and decode with the batch size', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ loadSlowdown: 0.5, maxNumSeqs: 3, enablePrefixCaching: false }), clock);
    expect(scheduler.latency.loadFactor(1)).toBe(1);
    expect(scheduler.latency.loadFactor(2)).toBe(1.25);
    expect(scheduler.latency.loadFactor(3)).toBe(1.5);
    const a = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 2, granularity: 'token' });
    const b = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 2, granularity: 'token' });
    const c = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 2, granularity: 'token' });
    clock.advance(1000);
    expect(a.rec.result!.ttftMs).toBe(10);
    expect(b.rec.result!.ttftMs).toBe(12.5);
    expect(c.rec.result!.ttftMs).toBe(15);
    // c's second token comes at the full-batch ITL.
    expect(c.rec.tokenAt[1] - c.rec.tokenAt[0]).toBe(15);
  });

  it('jitters deterministically for a seed', () => {
    const run = (seed: number): number[] => {
      const clock = new ManualClock();
      const scheduler = new EngineScheduler(settings({ latencyJitter: 0.2, seed }), clock);
      const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 5, granularity: 'token' });
      clock.advance(1000);
      return rec.tokenAt;
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
    for (const t of run(7)) expect(t).toBeGreaterThan(0);
  });
});

describe('EngineScheduler admission', () => {
  it('runs at most maxNumSeqs and queues the rest FCFS', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ maxNumSeqs: 2, prefillUsPerToken: 0 }), clock);
    const recs = [0, 1, 2, 3].map(() => submit(scheduler, clock, { promptTokenIds: prompt(10), outputTokens: 3, granularity: 'token' }).rec);
    expect(scheduler.running).toBe(2);
    expect(scheduler.waiting).toBe(2);
    clock.advance(20);
    expect(recs[0].result).toBeDefined();
    expect(recs[2].admittedAt).toBe(20);
    expect(recs[3].admittedAt).toBe(20);
    clock.advance(100);
    expect(recs[2].result!.queuedMs).toBe(20);
    expect(scheduler.running + scheduler.waiting).toBe(0);
  });

  it('holds the queue while the KV cache has no room for its head', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ kvCacheBlocks: 4, blockSize: 4, prefillUsPerToken: 0 }), clock);
    // 8 prompt tokens + 4 output: 2 cached blocks + 1 private = 3 of 4 blocks.
    const a = submit(scheduler, clock, { promptTokenIds: prompt(8, 0), outputTokens: 4, granularity: 'token' }).rec;
    const b = submit(scheduler, clock, { promptTokenIds: prompt(8, 100), outputTokens: 4, granularity: 'token' }).rec;
    expect(scheduler.running).toBe(1);
    expect(scheduler.waiting).toBe(1);
    expect(scheduler.kvUsage).toBe(0.75);
    clock.advance(30);
    expect(a.result).toBeDefined();
    expect(b.admittedAt).toBe(30);
  });

  it('rejects up front what could never fit', () => {
    const scheduler = new EngineScheduler(settings({ kvCacheBlocks: 4, blockSize: 4 }), new ManualClock());
    expect(() => scheduler.submit({ promptTokenIds: prompt(16), outputTokens: 4, granularity: 'final' }, { onFinish: () => undefined })).toThrow(KvCapacityError);
    expect(() => scheduler.submit({ promptTokenIds: prompt(16), outputTokens: 4, granularity: 'final' }, { onFinish: () => undefined })).toThrow(
      /needs 5 KV blocks of 4 tokens, the cache holds 4/,
    );
  });

  it('aborts waiting and running requests, freeing their slot', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ maxNumSeqs: 1, prefillUsPerToken: 0 }), clock);
    const running = submit(scheduler, clock, { promptTokenIds: prompt(10), outputTokens: 5, granularity: 'token' });
    const waiting = submit(scheduler, clock, { promptTokenIds: prompt(10, 50), outputTokens: 5, granularity: 'token' });
    const third = submit(scheduler, clock, { promptTokenIds: prompt(10, 90), outputTokens: 1, granularity: 'final' });
    waiting.cancel();
    expect(waiting.rec.result).toMatchObject({ aborted: true, outputTokens: 0 });
    expect(Number.isNaN(waiting.rec.result!.ttftMs)).toBe(true);
    expect(scheduler.waiting).toBe(1);
    clock.advance(15);
    running.cancel();
    expect(running.rec.result).toMatchObject({ aborted: true, outputTokens: 2 });
    expect(third.rec.admittedAt).toBe(15);
    clock.advance(1);
    expect(third.rec.result).toMatchObject({ aborted: false });
    expect(scheduler.kvUsage).toBe(0);
  });

  it('resolves idle() when the last request is done', async () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings(), clock);
    submit(scheduler, clock, { promptTokenIds: prompt(10), outputTokens: 2, granularity: 'final' });
    let idle = false;
    const done = scheduler.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    clock.advance(100);
    await done;
    expect(idle).toBe(true);
  });

  it('publishes KV events for stored prompt blocks', () => {
    const events: KvCacheEvent[] = [];
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings(), clock, (e) => events.push(e));
    submit(scheduler, clock, { promptTokenIds: prompt(40), outputTokens: 1, granularity: 'final' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'BlockStored', parent_block_hash: null, block_size: 16 });
    expect((events[0] as { token_ids: number[] }).token_ids).toEqual(prompt(32));
  });
});

describe('EngineScheduler disaggregated decode (KV pulled from a prefill engine)', () => {
  it('pulls the remote prompt KV at the transfer cost per block instead of prefilling it, computing the last token', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ itlMs: 0, kvTransferUsPerBlock: 500 }), clock);
    // 100 tokens = 7 blocks (6 full, 1 partial): 99 pulled, the last one prefilled (0.1 ms).
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 1, granularity: 'final', remoteTokens: 100 });
    clock.advance(100);
    expect(rec.result).toMatchObject({ cachedTokens: 0, externalTokens: 99, transferredBlocks: 7, promptTokens: 100 });
    expect(rec.result!.prefillMs).toBeCloseTo(0.1 + 3.5);
  });

  it('pulls only what the local prefix cache lacks', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ itlMs: 0, kvTransferUsPerBlock: 500 }), clock);
    submit(scheduler, clock, { promptTokenIds: prompt(64), outputTokens: 1, granularity: 'final' });
    clock.advance(100);
    // 64 of 100 tokens (4 blocks) are cached here: 35 pulled in 3 blocks, the last token computed.
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 1, granularity: 'final', remoteTokens: 100 });
    clock.advance(100);
    expect(rec.result).toMatchObject({ cachedTokens: 64, externalTokens: 35, transferredBlocks: 3 });
    expect(rec.result!.prefillMs).toBeCloseTo(0.1 + 1.5);
  });

  it('prefills what the remote blocks do not cover, and stores the pulled full blocks in the prefix cache', () => {
    const clock = new ManualClock();
    const events: KvCacheEvent[] = [];
    const scheduler = new EngineScheduler(settings({ itlMs: 0, kvTransferUsPerBlock: 0 }), clock, (e) => events.push(e));
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 1, granularity: 'final', remoteTokens: 32 });
    clock.advance(100);
    expect(rec.result).toMatchObject({ externalTokens: 32, transferredBlocks: 2 });
    expect(rec.result!.prefillMs).toBeCloseTo(6.8);
    expect(events).toEqual([expect.objectContaining({ type: 'BlockStored', token_ids: prompt(96) })]);
    // The next request finds them locally.
    const again = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 1, granularity: 'final' });
    clock.advance(100);
    expect(again.rec.result).toMatchObject({ cachedTokens: 96, externalTokens: 0 });
  });

  it('pulls nothing without remote tokens', () => {
    const clock = new ManualClock();
    const scheduler = new EngineScheduler(settings({ itlMs: 0, kvTransferUsPerBlock: 500 }), clock);
    const { rec } = submit(scheduler, clock, { promptTokenIds: prompt(100), outputTokens: 1, granularity: 'final', remoteTokens: 0 });
    clock.advance(100);
    expect(rec.result).toMatchObject({ externalTokens: 0, transferredBlocks: 0, prefillMs: 10 });
  });
});
