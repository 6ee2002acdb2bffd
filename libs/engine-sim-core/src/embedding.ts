/**
 * Deterministic embeddings: the unit-length sum of one pseudo-random vector per token id, so
 * equal texts embed equally, texts sharing many tokens point in similar directions, and the
 * same engine seed gives the same vectors in every process.
 */
import { hash53, Rng } from './hash';

/** Token ids beyond this many are ignored: the cost of an embedding stays bounded. */
export const MAX_EMBEDDED_TOKENS = 2048;

export function embedTokens(tokenIds: ArrayLike<number>, dimensions: number, seed = 0): Float32Array {
  const vector = new Float32Array(dimensions);
  const count = Math.min(tokenIds.length, MAX_EMBEDDED_TOKENS);
  for (let t = 0; t < count; t++) {
    const rng = new Rng(hash53([tokenIds[t]], seed));
    for (let d = 0; d < dimensions; d++) vector[d] += rng.float() * 2 - 1;
  }
  let norm = 0;
  for (let d = 0; d < dimensions; d++) norm += vector[d] * vector[d];
  norm = Math.sqrt(norm);
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  for (let d = 0; d < dimensions; d++) vector[d] /= norm;
  return vector;
}
