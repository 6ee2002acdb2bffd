import { kvBlockIds, transferableTokens } from './kv-transfer';
import { blockHashes } from './prefix-cache';

const prompt = (length: number, from = 1000): number[] => Array.from({ length }, (_, i) => from + i);

describe('kvBlockIds', () => {
  it('names every block of a prompt: the chained hashes of the full blocks, then the partial last block', () => {
    const ids = kvBlockIds(prompt(40), 16);
    expect(ids).toHaveLength(3);
    expect(ids.slice(0, 2)).toEqual(blockHashes(prompt(40), 16));
    expect(ids.every((id) => Number.isSafeInteger(id) && id >= 0)).toBe(true);
    expect(new Set(ids).size).toBe(3);
    expect(kvBlockIds(prompt(32), 16)).toEqual(blockHashes(prompt(32), 16));
    expect(kvBlockIds(prompt(5), 16)).toHaveLength(1);
    expect(kvBlockIds([], 16)).toEqual([]);
  });

  it('gives a partial block another id than the full block it grows into', () => {
    expect(kvBlockIds(prompt(20), 16)[1]).not.toBe(kvBlockIds(prompt(32), 16)[1]);
  });
});

describe('transferableTokens', () => {
  it('covers the whole prompt the blocks were made for', () => {
    const ids = kvBlockIds(prompt(40), 16);
    expect(transferableTokens(prompt(40), 16, ids)).toBe(40);
  });

  it('covers only the leading blocks a different prompt shares', () => {
    const ids = kvBlockIds(prompt(40), 16);
    const other = [...prompt(20), ...prompt(20, 5000)];
    expect(transferableTokens(other, 16, ids)).toBe(16);
    expect(transferableTokens(prompt(40, 7), 16, ids)).toBe(0);
    // A longer prompt: the shared full blocks (the partial one was different).
    expect(transferableTokens(prompt(64), 16, ids)).toBe(32);
    expect(transferableTokens(prompt(40), 16, [])).toBe(0);
  });
});
