import { backoffMs } from './delivery';
import { TokenBucket } from './token-bucket';

describe('TokenBucket', () => {
  it('lets a burst through and makes the rest wait at the configured rate', () => {
    let now = 0;
    const b = new TokenBucket(1000, 1000, () => now);
    expect(b.debit(1000)).toBe(0);
    expect(b.debit(500)).toBe(500); // 500 bytes at 1000 B/s
    now = 1500;
    expect(b.debit(1000)).toBe(0);
  });

  it('refuses a rate that is not positive', () => {
    expect(() => new TokenBucket(0)).toThrow(/bytesPerSecond: expected a positive number, got 0/);
  });
});

describe('backoffMs', () => {
  it('doubles from the initial delay up to the cap, with at most 20 % jitter', () => {
    const b = { initialMs: 60_000, maxMs: 3_600_000 };
    expect([1, 2, 3, 7, 20].map((n) => backoffMs(n, b, () => 0))).toEqual([60_000, 120_000, 240_000, 3_600_000, 3_600_000]);
    expect(backoffMs(1, b, () => 1)).toBe(72_000);
    expect(backoffMs(30, b, () => 1)).toBe(3_600_000);
  });
});
