/**
 * Disaggregated prefill/decode in the simulated engine, after vLLM's NixlConnector: the block ids
 * a prefill engine hands out for a prompt, and how much of a decode request's prompt they cover.
 *
 * The simulator has no physical block numbers, so a block's id is its content: the chained hash
 * of `blockHashes` for every full block, and the same chain over the remaining tokens for a
 * partial last block. A decode engine computes the ids of its own prompt and loads the leading
 * blocks whose ids match, so a request whose prompt differs from the prefilled one loads only the
 * prefix they share (a real engine would load the wrong KV without noticing).
 */
import { hash53 } from './hash';
import { blockHashes, ROOT_BLOCK_HASH } from './prefix-cache';

/** Ids of the KV blocks holding `tokenIds`: ceil(length / blockSize) of them, in prompt order. */
export function kvBlockIds(tokenIds: ArrayLike<number>, blockSize: number): number[] {
  const ids = blockHashes(tokenIds, blockSize);
  const covered = ids.length * blockSize;
  if (covered < tokenIds.length) ids.push(hash53(tokenIds, ids.length > 0 ? ids[ids.length - 1] : ROOT_BLOCK_HASH, covered, tokenIds.length));
  return ids;
}

/**
 * Leading tokens of `tokenIds` whose KV `remoteBlockIds` hold: whole matching blocks (the partial
 * last block included), up to the prompt's length.
 */
export function transferableTokens(tokenIds: ArrayLike<number>, blockSize: number, remoteBlockIds: readonly number[]): number {
  if (remoteBlockIds.length === 0 || tokenIds.length === 0) return 0;
  const own = kvBlockIds(tokenIds, blockSize);
  let matching = 0;
  while (matching < own.length && matching < remoteBlockIds.length && own[matching] === remoteBlockIds[matching]) matching++;
  return Math.min(tokenIds.length, matching * blockSize);
}
