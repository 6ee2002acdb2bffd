import type { ReplicaView } from '../../replica';

/** Replicas r0..r(n-1), idle and healthy unless overridden by index. */
export function replicas(n: number, overrides: Record<number, Partial<ReplicaView>> = {}): ReplicaView[] {
  return Array.from({ length: n }, (_, i) => ({ id: `r${i}`, inFlight: 0, ejected: false, ...overrides[i] }));
}

// Jest runs specs in a vm context, where every global lookup (`Math`) goes through an
// interceptor and costs ~0.4 µs; simulations call these millions of times, so bind them once.
const imul = Math.imul;

/** Seeded PRNG (mulberry32): simulations replay exactly from a fast-check seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [0, n). */
export function randomInt(random: () => number, n: number): number {
  return (random() * n) | 0;
}

export function randomText(random: () => number, length: number, alphabet = 'abcd'): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(random, alphabet.length)];
  return text;
}
