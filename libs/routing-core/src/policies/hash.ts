/**
 * 32-bit string hash: FNV-1a over UTF-16 code units, then murmur3's finaliser. FNV-1a alone
 * mixes its low bits poorly, which rendezvous hashing would turn into uneven shares.
 */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix32(h);
}

/** murmur3 fmix32: a bijection on 32-bit integers in which every input bit flips each output bit about half the time. */
export function mix32(value: number): number {
  let h = value;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
