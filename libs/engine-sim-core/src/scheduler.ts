/**
 * The simulated engine's scheduler: at most `maxNumSeqs` requests run at once, the rest wait in
 * arrival order (FCFS, like vLLM's default policy). A request is admitted when a slot is free and
 * the KV cache can hold its blocks (prompt plus planned output); a waiting head that does not fit
 * holds back those behind it. Admitted requests prefill (minus prefix-cache hits, and minus the KV
 * a disaggregated decode pulls from its prefill engine) and then emit tokens at the inter-token
 * latency, both slowed by the current batch size (`LatencyModel`).
 *
 * Time comes from a `Clock`, so tests run the whole thing on a `ManualClock`.
 */
import type { KvCacheEvent } from '@gpufleet/contracts';
import type { Clock, TimerHandle } from './clock';
import { LatencyModel, type LatencySettings } from './latency';
import { blockHashes, PrefixCache, type BlockAllocation } from './prefix-cache';

export interface EngineSettings extends LatencySettings {
  readonly blockSize: number;
  readonly kvCacheBlocks: number;
  readonly enablePrefixCaching: boolean;
  readonly seed: number;
}

export interface SequenceSpec {
  readonly promptTokenIds: ArrayLike<number>;
  /** Tokens to generate: the longest of the request's choices (≥ 1). */
  readonly outputTokens: number;
  /** Sequences decoding from the shared prompt (a request's `n`); default 1. */
  readonly parallel?: number;
  /** `token`: `onToken` for every token (streaming); `final`: only `onFinish`, with no per-token timers. */
  readonly granularity: 'token' | 'final';
  /**
   * Disaggregated decode: leading prompt tokens whose KV a remote prefill engine computed
   * (`transferableTokens`). Those not in the local prefix cache are pulled, at the latency
   * model's KV transfer cost per block, instead of prefilled; the last prompt token is still
   * computed, as in vLLM.
   */
  readonly remoteTokens?: number;
}

export interface AdmissionInfo {
  readonly promptTokens: number;
  /** Prompt tokens found in the prefix cache. */
  readonly cachedTokens: number;
  /** Prompt tokens looked up in the prefix cache (0 with caching off). */
  readonly queriedTokens: number;
  /** Prompt tokens pulled from a remote prefill engine (`remoteTokens` less local hits). */
  readonly externalTokens: number;
  /** KV blocks pulled from a remote prefill engine. */
  readonly transferredBlocks: number;
  readonly queuedMs: number;
}

export interface SequenceResult extends AdmissionInfo {
  /** Output tokens generated (fewer than planned when aborted). */
  readonly outputTokens: number;
  readonly prefillMs: number;
  /** From the first token to the last. */
  readonly decodeMs: number;
  /** From arrival to the first token; NaN when aborted before it. */
  readonly ttftMs: number;
  readonly e2eMs: number;
  readonly aborted: boolean;
  /** Clock time of each token with `token` granularity; empty with `final`. */
  readonly tokenTimesMs: readonly number[];
}

export interface SequenceObserver {
  /** Admitted to the running batch. */
  onAdmitted?(info: AdmissionInfo): void;
  /** Token `index` (0 = first) is out; `token` granularity only. */
  onToken?(index: number): void;
  /** Finished or aborted; always called exactly once. */
  onFinish(result: SequenceResult): void;
}

export interface SequenceHandle {
  /** Aborts the request (client gone): frees its slot and blocks; `onFinish` reports `aborted`. */
  cancel(): void;
}

/** The request can never fit: more blocks than the whole KV cache. */
export class KvCapacityError extends Error {
  constructor(
    readonly neededBlocks: number,
    readonly totalBlocks: number,
    readonly blockSize: number,
  ) {
    super(
      `KV_CACHE_TOO_SMALL: the request needs ${neededBlocks} KV blocks of ${blockSize} tokens, ` +
        `the cache holds ${totalBlocks}; shorten the prompt or max_tokens`,
    );
    this.name = 'KvCapacityError';
  }
}

type State = 'waiting' | 'running' | 'done';

const NO_TIMES: number[] = [];

class Sequence implements SequenceHandle {
  state: State = 'waiting';
  hashes: number[] = [];
  maxHitBlocks = 0;
  privateBlocks = 0;
  allocation?: BlockAllocation;
  admitted?: AdmissionInfo;
  admittedAt = 0;
  prefillMs = 0;
  firstDue = 0;
  firstTokenAt = NaN;
  nextDue = 0;
  emitted = 0;
  timer?: TimerHandle;
  /** Token times, with `token` granularity only. */
  tokenTimes: number[] = NO_TIMES;

  constructor(
    readonly scheduler: EngineScheduler,
    readonly spec: SequenceSpec,
    readonly observer: SequenceObserver,
    readonly arrivedAt: number,
  ) {}

  cancel(): void {
    this.scheduler.abort(this);
  }
}

export class EngineScheduler {
  readonly cache: PrefixCache;
  readonly latency: LatencyModel;
  private readonly waitingQueue: Sequence[] = [];
  private waitingHead = 0;
  private waitingCount = 0;
  private readonly runningSet = new Set<Sequence>();
  private idleWaiters: (() => void)[] = [];
  private admitting = false;

  constructor(
    readonly settings: EngineSettings,
    private readonly clock: Clock,
    onKvEvent?: (event: KvCacheEvent) => void,
  ) {
    if (!Number.isInteger(settings.maxNumSeqs) || settings.maxNumSeqs < 1) throw new Error('EngineScheduler: maxNumSeqs must be an integer >= 1');
    this.cache = new PrefixCache({
      totalBlocks: settings.kvCacheBlocks,
      blockSize: settings.blockSize,
      enabled: settings.enablePrefixCaching,
      onEvent: onKvEvent,
    });
    this.latency = new LatencyModel(settings, settings.seed);
  }

  get running(): number {
    return this.runningSet.size;
  }

  get waiting(): number {
    return this.waitingCount;
  }

  /** 0-1, see PrefixCache.usage. */
  get kvUsage(): number {
    return this.cache.usage;
  }

  /** KV blocks a request needs: its full prompt blocks plus private blocks for the rest. */
  blocksNeeded(spec: Pick<SequenceSpec, 'promptTokenIds' | 'outputTokens' | 'parallel'>): { fullBlocks: number; privateBlocks: number } {
    const bs = this.settings.blockSize;
    const prompt = spec.promptTokenIds.length;
    const fullBlocks = Math.floor(prompt / bs);
    const tail = prompt - fullBlocks * bs;
    const privateBlocks = (spec.parallel ?? 1) * Math.ceil((tail + Math.max(1, spec.outputTokens)) / bs);
    return { fullBlocks, privateBlocks };
  }

  /**
   * Queues a request. Throws KvCapacityError when it could never fit. `onAdmitted` may run
   * inside `submit` (a free slot admits at once); `onToken` and `onFinish` run later, from clock
   * callbacks, or inside `cancel`.
   */
  submit(spec: SequenceSpec, observer: SequenceObserver): SequenceHandle {
    const { fullBlocks, privateBlocks } = this.blocksNeeded(spec);
    if (fullBlocks + privateBlocks > this.settings.kvCacheBlocks) {
      throw new KvCapacityError(fullBlocks + privateBlocks, this.settings.kvCacheBlocks, this.settings.blockSize);
    }
    const seq = new Sequence(this, spec, observer, this.clock.now());
    seq.privateBlocks = privateBlocks;
    if (this.settings.enablePrefixCaching) {
      seq.hashes = blockHashes(spec.promptTokenIds, this.settings.blockSize);
      // The last prompt token is always computed (it yields the first output token), so a
      // prompt made only of cached blocks still recomputes its last block.
      seq.maxHitBlocks = Math.floor((spec.promptTokenIds.length - 1) / this.settings.blockSize);
    } else {
      seq.privateBlocks += fullBlocks;
    }
    this.waitingQueue.push(seq);
    this.waitingCount++;
    this.admit();
    return seq;
  }

  /** Resolves when nothing runs or waits (for draining). */
  idle(): Promise<void> {
    if (this.running === 0 && this.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops unused cached blocks (vLLM's /reset_prefix_cache); false while requests hold cached blocks. */
  resetPrefixCache(): boolean {
    return this.cache.reset();
  }

  /** @internal */
  abort(seq: Sequence): void {
    if (seq.state === 'done') return;
    if (seq.state === 'waiting') {
      seq.state = 'done';
      this.waitingCount--;
      this.compactWaiting();
      seq.observer.onFinish(this.result(seq, true));
      this.admit();
      this.notifyIdle();
      return;
    }
    this.finish(seq, true);
  }

  private admit(): void {
    if (this.admitting) return;
    this.admitting = true;
    try {
      while (this.waitingCount > 0 && this.runningSet.size < this.settings.maxNumSeqs) {
        const head = this.waitingQueue[this.waitingHead];
        if (head.state === 'done') {
          this.waitingHead++;
          continue;
        }
        const allocation = this.cache.allocate(head.hashes, head.spec.promptTokenIds, head.privateBlocks, head.maxHitBlocks);
        if (!allocation) break;
        this.waitingHead++;
        this.waitingCount--;
        this.start(head, allocation);
      }
      this.compactWaiting();
    } finally {
      this.admitting = false;
    }
  }

  private compactWaiting(): void {
    while (this.waitingHead < this.waitingQueue.length && this.waitingQueue[this.waitingHead].state === 'done') this.waitingHead++;
    if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waitingQueue.length) {
      this.waitingQueue.splice(0, this.waitingHead);
      this.waitingHead = 0;
    }
    if (this.waitingCount === 0) {
      this.waitingQueue.length = 0;
      this.waitingHead = 0;
    }
  }

  private start(seq: Sequence, allocation: BlockAllocation): void {
    const now = this.clock.now();
    seq.state = 'running';
    seq.allocation = allocation;
    seq.admittedAt = now;
    this.runningSet.add(seq);
    const promptTokens = seq.spec.promptTokenIds.length;
    const blockSize = this.settings.blockSize;
    const cachedTokens = allocation.hitBlocks * blockSize;
    let externalTokens = 0;
    let transferredBlocks = 0;
    const remote = seq.spec.remoteTokens;
    if (remote !== undefined && remote > 0) {
      // Pull what the local cache lacks; the last prompt token is computed here (it yields the
      // first output token), so at most promptTokens - 1 come from the remote engine.
      externalTokens = Math.max(0, Math.min(remote, promptTokens - 1) - cachedTokens);
      if (externalTokens > 0) transferredBlocks = Math.ceil(Math.min(remote, promptTokens) / blockSize) - allocation.hitBlocks;
    }
    seq.admitted = {
      promptTokens,
      cachedTokens,
      queriedTokens: this.settings.enablePrefixCaching ? promptTokens : 0,
      externalTokens,
      transferredBlocks,
      queuedMs: now - seq.arrivedAt,
    };
    seq.prefillMs = this.latency.prefillMs(promptTokens - cachedTokens - externalTokens, this.runningSet.size) + this.latency.kvTransferMs(transferredBlocks);
    seq.firstDue = now + seq.prefillMs;
    seq.observer.onAdmitted?.(seq.admitted);
    seq.timer = this.clock.schedule(seq.prefillMs, () => this.step(seq));
  }

  /** Emits what is due for `seq` and schedules its next step. */
  private step(seq: Sequence): void {
    if (seq.state !== 'running') return;
    const now = this.clock.now();
    const output = Math.max(1, seq.spec.outputTokens);

    if (seq.emitted === 0) {
      seq.firstTokenAt = now;
      seq.emitted = 1;
      if (seq.spec.granularity === 'token') {
        seq.tokenTimes = [now];
        seq.observer.onToken?.(0);
        if (seq.state !== 'running') return;
      }
      if (seq.spec.granularity === 'final') {
        // One timer for the whole decode: the inter-token latency of every remaining token
        // at the batch size of now.
        let decode = 0;
        for (let i = 1; i < output; i++) decode += this.latency.interTokenMs(this.runningSet.size);
        seq.emitted = output;
        seq.nextDue = seq.firstDue + decode;
      } else {
        seq.nextDue = seq.firstDue + this.latency.interTokenMs(this.runningSet.size);
      }
    }

    if (seq.spec.granularity === 'token') {
      while (seq.emitted < output && seq.nextDue <= now) {
        seq.tokenTimes.push(now);
        seq.observer.onToken?.(seq.emitted++);
        if (seq.state !== 'running') return;
        if (seq.emitted < output) seq.nextDue += this.latency.interTokenMs(this.runningSet.size);
      }
      if (seq.emitted >= output) {
        this.finish(seq, false);
        return;
      }
    } else if (seq.nextDue <= now) {
      this.finish(seq, false);
      return;
    }
    seq.timer = this.clock.schedule(seq.nextDue - now, () => this.step(seq));
  }

  private finish(seq: Sequence, aborted: boolean): void {
    if (seq.timer !== undefined) this.clock.cancel(seq.timer);
    seq.timer = undefined;
    seq.state = 'done';
    this.runningSet.delete(seq);
    if (seq.allocation) this.cache.release(seq.allocation);
    const result = this.result(seq, aborted);
    seq.observer.onFinish(result);
    this.admit();
    this.notifyIdle();
  }

  private result(seq: Sequence, aborted: boolean): SequenceResult {
    const now = this.clock.now();
    const admitted = seq.admitted;
    const started = !Number.isNaN(seq.firstTokenAt);
    const outputTokens = aborted && seq.spec.granularity === 'final' ? (started ? 1 : 0) : Math.min(seq.emitted, seq.spec.outputTokens);
    return {
      promptTokens: seq.spec.promptTokenIds.length,
      cachedTokens: admitted ? admitted.cachedTokens : 0,
      queriedTokens: admitted ? admitted.queriedTokens : 0,
      externalTokens: admitted ? admitted.externalTokens : 0,
      transferredBlocks: admitted ? admitted.transferredBlocks : 0,
      queuedMs: admitted ? admitted.queuedMs : now - seq.arrivedAt,
      outputTokens,
      prefillMs: admitted ? seq.prefillMs : 0,
      decodeMs: started ? now - seq.firstTokenAt : 0,
      ttftMs: started ? seq.firstTokenAt - seq.arrivedAt : NaN,
      e2eMs: now - seq.arrivedAt,
      aborted,
      tokenTimesMs: seq.tokenTimes,
    };
  }

  private notifyIdle(): void {
    if (this.idleWaiters.length === 0 || this.running > 0 || this.waiting > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
