/**
 * Deterministic hashing and pseudo-random numbers: the same inputs give the same outputs in
 * every process and on every machine, so replicas started with the same seed answer alike and
 * a router can recompute block hashes from token ids.
 */

const TWO_32 = 0x1_0000_0000;

/**
 * A 53-bit hash (a safe JSON integer) of 32-bit integers, seeded with another 53-bit value.
 * Two 32-bit multiply-xorshift lanes (the cyrb53 construction) over each value, finalised with
 * cross-mixing. Values are taken modulo 2^32.
 */
export function hash53(values: ArrayLike<number>, seed = 0, start = 0, end: number = values.length): number {
  const seedLo = seed >>> 0;
  const seedHi = Math.floor(seed / TWO_32) >>> 0;
  let h1 = 0xdeadbeef ^ seedLo;
  let h2 = 0x41c6ce57 ^ seedHi;
  for (let i = start; i < end; i++) {
    const v = values[i] | 0;
    h1 = Math.imul(h1 ^ v, 2654435761);
    h2 = Math.imul(h2 ^ v, 1597334677);
  }
  const count = end - start;
  h1 = Math.imul(h1 ^ count, 2654435761);
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 & 0x1fffff) * TWO_32 + (h1 >>> 0);
}

/** hash53 of a string's UTF-16 code units. */
export function hashString53(text: string, seed = 0): number {
  const units = new Array<number>(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return hash53(units, seed);
}

/** A seeded pseudo-random generator (SplitMix32); not for cryptography. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    // Fold a 53-bit seed into 32 bits without losing its high part.
    this.state = (seed >>> 0) ^ Math.imul(Math.floor(seed / TWO_32) >>> 0, 0x9e3779b1);
  }

  /** A uniform 32-bit unsigned integer. */
  nextUint32(): number {
    this.state = (this.state + 0x9e3779b9) | 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.nextUint32() / TWO_32;
  }

  /** Uniform integer in [0, bound). */
  int(bound: number): number {
    return Math.floor(this.float() * bound);
  }
}
