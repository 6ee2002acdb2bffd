/**
 * Deterministic text generation: what a seeded engine "says". The same seed and prompt give the
 * same answer in every process, so replicas started with the same `--seed` are interchangeable.
 *
 * Output is English-looking sentences of short words. Every word is at most six letters, so
 * each generated piece (" word", ".", a capitalised first word) is exactly one token of the
 * protocol library's tokenizer: `completion_tokens` equals the token count of the text.
 *
 * Length: a request that does not hit max_tokens "stops" after a natural length drawn uniformly
 * from 1…2×meanOutputTokens−1 (at least min_tokens); with `ignore_eos` it always runs to
 * max_tokens. A stop string cuts the text before it (finish_reason `stop`, stop_reason the
 * string); the token that completed it still counts as generated.
 */
import { hash53, Rng } from './hash';

const WORDS = [
  'the', 'of', 'and', 'to', 'in', 'is', 'that', 'for', 'it', 'as', 'with', 'was', 'on', 'be', 'by', 'this', 'are', 'or',
  'from', 'at', 'an', 'which', 'but', 'not', 'have', 'has', 'can', 'all', 'its', 'more', 'one', 'will', 'each', 'other',
  'model', 'token', 'cache', 'block', 'prefix', 'batch', 'queue', 'node', 'pool', 'memory', 'server', 'engine', 'kernel',
  'tensor', 'layer', 'weight', 'router', 'replica', 'cluster', 'fleet', 'device', 'stream', 'request', 'latency', 'shard',
  'decode', 'prefill', 'sample', 'value', 'vector', 'signal', 'result', 'answer', 'system', 'data', 'time', 'step', 'rate',
  'fast', 'slow', 'large', 'small', 'warm', 'cold', 'ready', 'free', 'busy', 'new', 'old', 'next', 'first', 'last', 'same',
  'runs', 'holds', 'keeps', 'moves', 'sends', 'reads', 'writes', 'finds', 'makes', 'takes', 'gives', 'shows', 'uses',
].filter((word) => word.length <= 6);

export interface TokenAlternative {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface GeneratedToken extends TokenAlternative {
  top_logprobs: TokenAlternative[];
}

export interface GenerationParams {
  /** The request's generation seed (see `generationSeed`). */
  readonly seed: number;
  /** Upper bound on generated tokens. */
  readonly maxTokens: number;
  readonly minTokens?: number;
  readonly ignoreEos?: boolean;
  readonly stop?: readonly string[];
  /** Mean natural length of an answer that is not cut by max_tokens. */
  readonly meanOutputTokens: number;
  /** Alternatives per token when log-probabilities are wanted; undefined: none. */
  readonly topLogprobs?: number;
  /** The text continues a prompt (text completions): the first word gets a leading space. */
  readonly continuation?: boolean;
}

export interface GeneratedText {
  /** One entry per generated token; joined they are `text` (the last may be cut by a stop string). */
  readonly pieces: string[];
  readonly text: string;
  /** Tokens generated (= pieces.length). */
  readonly tokens: number;
  readonly finishReason: 'stop' | 'length';
  readonly stopReason: string | null;
  readonly logprobs?: GeneratedToken[];
}

/** The seed of one request: the engine's `--seed` with the request's `seed`, or else its prompt. */
export function generationSeed(engineSeed: number, requestSeed: number | undefined, promptTokenIds: ArrayLike<number>): number {
  const basis = requestSeed !== undefined ? [requestSeed | 0, Math.floor(requestSeed / 0x1_0000_0000) | 0, 1] : [hash53(promptTokenIds) | 0, 0, 2];
  return hash53(basis, engineSeed);
}

function utf8Bytes(text: string): number[] {
  return Array.from(Buffer.from(text, 'utf8'));
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** Generates one choice. Choice `i` of a request with n > 1 uses `seed + i`. */
export function generateText(params: GenerationParams): GeneratedText {
  const rng = new Rng(params.seed);
  const maxTokens = Math.max(1, Math.floor(params.maxTokens));
  const mean = Math.max(1, params.meanOutputTokens);
  let natural = 1 + rng.int(2 * mean - 1);
  natural = Math.max(natural, params.minTokens ?? 0);
  const target = params.ignoreEos ? maxTokens : Math.min(natural, maxTokens);
  let finishReason: 'stop' | 'length' = !params.ignoreEos && natural <= maxTokens ? 'stop' : 'length';
  let stopReason: string | null = null;

  const stops = params.stop ?? [];
  const longestStop = stops.reduce((max, s) => Math.max(max, s.length), 0);
  const pieces: string[] = [];
  const wantLogprobs = params.topLogprobs !== undefined;
  const logprobs: GeneratedToken[] | undefined = wantLogprobs ? [] : undefined;
  let text = '';
  let sentenceLeft = 0;

  for (let i = 0; i < target; i++) {
    let piece: string;
    if (sentenceLeft === 0 && i > 0) {
      piece = '.';
      sentenceLeft = -1;
    } else {
      const word = WORDS[rng.int(WORDS.length)];
      if (sentenceLeft <= 0) {
        piece = i === 0 && !params.continuation ? capitalise(word) : ` ${capitalise(word)}`;
        sentenceLeft = 5 + rng.int(10);
      } else {
        piece = ` ${word}`;
      }
      sentenceLeft--;
    }
    pieces.push(piece);
    text += piece;
    if (logprobs) logprobs.push(tokenLogprob(piece, rng, params.topLogprobs ?? 0));

    if (longestStop > 0) {
      // Only the text this piece could have completed a stop string in needs searching.
      const from = Math.max(0, text.length - piece.length - longestStop + 1);
      let cut = -1;
      for (const stop of stops) {
        const at = text.indexOf(stop, from);
        if (at >= 0 && (cut < 0 || at < cut)) {
          cut = at;
          stopReason = stop;
        }
      }
      if (cut >= 0) {
        const excess = text.length - cut;
        text = text.slice(0, cut);
        trimPieces(pieces, excess);
        finishReason = 'stop';
        break;
      }
    }
  }
  return { pieces, text, tokens: pieces.length, finishReason, stopReason, logprobs };
}

/** Removes `excess` characters from the end of the joined pieces, keeping one entry per token. */
function trimPieces(pieces: string[], excess: number): void {
  let left = excess;
  for (let i = pieces.length - 1; i >= 0 && left > 0; i--) {
    const cut = Math.min(left, pieces[i].length);
    pieces[i] = pieces[i].slice(0, pieces[i].length - cut);
    left -= cut;
  }
}

function round4(value: number): number {
  return Math.round(value * 1e4) / 1e4;
}

function tokenLogprob(piece: string, rng: Rng, top: number): GeneratedToken {
  const logprob = round4(-rng.float() * 2);
  const alternatives: TokenAlternative[] = [];
  let floor = logprob;
  for (let k = 0; k < top; k++) {
    floor = round4(floor - 0.1 - rng.float() * 2);
    const token = ` ${WORDS[rng.int(WORDS.length)]}`;
    alternatives.push({ token, logprob: floor, bytes: utf8Bytes(token) });
  }
  return { token: piece, logprob, bytes: utf8Bytes(piece), top_logprobs: top > 0 ? [{ token: piece, logprob, bytes: utf8Bytes(piece) }, ...alternatives].slice(0, top) : [] };
}
