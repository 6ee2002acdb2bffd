/**
 * A deterministic tokenizer approximation: no vocabulary file, same answer in every process.
 *
 * A token is one of, scanning left to right (like GPT-2's pre-tokenizer, with long words cut):
 * - an optional leading space and 1-6 letters (longer words become several tokens: " intern",
 *   "ationa", "l");
 * - an optional leading space and 1-3 digits;
 * - an optional leading space and one other non-space character (punctuation, symbols, emoji);
 * - a run of whitespace (a single space before a word belongs to the word).
 * English prose comes out at about 4-5 characters per token, close to BPE tokenizers.
 *
 * A token's id is the 32-bit FNV-1a hash of its UTF-16 text, mapped into
 * [FIRST_ORDINARY_ID, VOCAB_SIZE); ids below FIRST_ORDINARY_ID are special tokens. Different
 * texts can share an id (a hash collision), which only matters for prefix caching, where it is
 * as harmless as in a real tokenizer with merges.
 */

/** Ids 0-15 are special tokens. */
export const SPECIAL_TOKENS = {
  BOS: 1,
  EOS: 2,
  /** Opens a chat message: `<|im_start|>role\n`. */
  IM_START: 3,
  /** Closes a chat message. */
  IM_END: 4,
  /** One image patch of a multimodal content part. */
  IMAGE: 5,
} as const;

export const FIRST_ORDINARY_ID = 16;
export const VOCAB_SIZE = 32_000;
/** Tokens one image content part costs in a prompt. */
export const IMAGE_TOKENS = 64;

const PIECE = / ?[\p{L}\p{M}]{1,6}| ?\p{N}{1,3}| ?[^\s\p{L}\p{M}\p{N}]|\s+(?!\S)|\s+/gu;

/** The 32-bit FNV-1a hash of a string's UTF-16 code units. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The id of one token's text. */
export function tokenId(piece: string): number {
  return FIRST_ORDINARY_ID + (fnv1a32(piece) % (VOCAB_SIZE - FIRST_ORDINARY_ID));
}

/** The text of each token of `text`; joining them gives `text` back. */
export function tokenize(text: string): string[] {
  return text.match(PIECE) ?? [];
}

/** The token ids of `text`, appended to `into` when given. */
export function encode(text: string, into: number[] = []): number[] {
  PIECE.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = PIECE.exec(text)) !== null) into.push(tokenId(match[0]));
  return into;
}

/** How many tokens `text` is. */
export function countTokens(text: string): number {
  PIECE.lastIndex = 0;
  let count = 0;
  while (PIECE.exec(text) !== null) count++;
  return count;
}
