/**
 * A bandwidth cap shared by every stream of a cache: a stream that received `n` bytes waits
 * here before it reads more, so the socket's own flow control slows the sender.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  /** bytesPerSecond > 0; burst: bytes that may pass at once (default one second's worth) */
  constructor(private readonly bytesPerSecond: number, private readonly burst = bytesPerSecond, private readonly now = () => Date.now()) {
    if (!(bytesPerSecond > 0)) throw new RangeError(`bytesPerSecond: expected a positive number, got ${bytesPerSecond}`);
    if (!(burst > 0)) throw new RangeError(`burst: expected a positive number, got ${burst}`);
    this.tokens = burst;
    this.last = now();
  }

  /** How long (ms) a taker of `n` bytes must wait; the bytes are debited at once, so the debt is shared fairly. */
  debit(n: number): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.bytesPerSecond) / 1000);
    this.last = t;
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.bytesPerSecond);
  }

  async take(n: number, signal?: AbortSignal): Promise<void> {
    const wait = this.debit(n);
    if (wait > 0) await sleep(wait, signal);
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
