// A deterministic multi-turn chat workload with shared prefixes: a few long system prompts,
// many users, each user holding conversations whose history grows turn by turn. The same seed
// gives the same system prompts and, for each user, the same conversations in the same order,
// whatever runs them; with engines that answer deterministically (engine-sim with one --seed),
// the histories, and so every request, are the same too.
import { hash53, Rng } from '@gpufleet/engine-sim-core';
import { countTokens } from '@gpufleet/openai-protocol';

/** Inclusive range of integers. */
export interface Range {
  readonly min: number;
  readonly max: number;
}

export interface SharedPrefixWorkloadOptions {
  readonly seed: number;
  /** How many distinct system prompts the users share. */
  readonly systemPrompts: number;
  /** Tokens per system prompt. */
  readonly systemPromptTokens: Range;
  /** Turns per conversation. */
  readonly turns: Range;
  /** Tokens per user message. */
  readonly userMessageTokens: Range;
  /** `max_tokens` per turn (sent with `ignore_eos`, so answers are exactly this long). */
  readonly answerTokens: Range;
  /** Milliseconds a user waits after an answer before the next turn (reading, typing). */
  readonly thinkMs: Range;
}

export interface Turn {
  readonly userMessage: string;
  readonly maxTokens: number;
  /** Pause after the answer, ms. */
  readonly thinkMs: number;
}

export interface Conversation {
  /** Index into `SharedPrefixWorkload.systemPrompts`. */
  readonly systemPrompt: number;
  readonly turns: readonly Turn[];
}

// Words of at most six letters: with a leading space each is exactly one token of the simulated
// tokenizer (libs/openai-protocol), so token counts are known when the text is made.
const WORDS = (
  'the of and to in is it you that he was for on are as with his they at be this have from or ' +
  'one had by word but not what all were we when your can said there use an each which she do ' +
  'how their if will up other about out many then them these so some her would make like him ' +
  'into time has look two more write go see number no way could people my than first water ' +
  'been call who oil its now find long down day did get come made may part over new sound take ' +
  'only little work know place year live me back give most very after thing our just name good ' +
  'man think say great where help through much before line right too mean old any same tell ' +
  'boy follow came want show also around form three small set put end does large must big even ' +
  'such turn here why ask went men read need land home us move try kind hand picture again ' +
  'change off play spell air away animal house point page letter mother answer found study ' +
  'still learn should world high every near add food below plant last school father keep tree ' +
  'never start city earth eye light though head under story saw left few while along might ' +
  'close night real life north open seem next hard walk white sea began grow took river four ' +
  'carry state once book hear stop second later miss idea enough eat face watch far really ' +
  'almost let above girl sure become top ship across today during short better best however ' +
  'low hours black yellow fleet node cache model serve token route queue batch memory'
).split(' ');

function seeded(seed: number, ...path: number[]): Rng {
  return new Rng(hash53([seed, ...path]));
}

function between(rng: Rng, range: Range): number {
  return range.min + rng.int(range.max - range.min + 1);
}

/** Sentences of short words, exactly `tokens` tokens long (a word or a full stop is one token). */
function prose(rng: Rng, tokens: number, opening = ''): string {
  let text = opening;
  let used = opening === '' ? 0 : countTokens(opening);
  let sentence = 0;
  while (used < tokens) {
    const endSentence = sentence >= 6 && (rng.int(8) === 0 || sentence >= 16);
    if (endSentence && used + 1 <= tokens) {
      text += '.';
      sentence = 0;
    } else {
      text += (text === '' ? '' : ' ') + WORDS[rng.int(WORDS.length)];
      sentence++;
    }
    used++;
  }
  return text;
}

export class SharedPrefixWorkload {
  readonly systemPrompts: readonly string[];

  constructor(readonly options: SharedPrefixWorkloadOptions) {
    const prompts: string[] = [];
    for (let i = 0; i < options.systemPrompts; i++) {
      const rng = seeded(options.seed, 1, i);
      // A distinct opening, so prompts part ways at their first token (and KV block).
      prompts.push(prose(rng, between(rng, options.systemPromptTokens), `You are assistant ${i} of team ${rng.int(1000)}.`));
    }
    this.systemPrompts = prompts;
  }

  /** Characters per token of the system prompts (to size the router's prefix memory like a KV cache). */
  get charsPerToken(): number {
    let chars = 0;
    let tokens = 0;
    for (const prompt of this.systemPrompts) {
      chars += prompt.length;
      tokens += countTokens(prompt);
    }
    return chars / tokens;
  }

  /** User `user`'s conversations, in order, without end. */
  *conversations(user: number): Generator<Conversation, never> {
    const rng = seeded(this.options.seed, 2, user);
    for (;;) {
      const systemPrompt = rng.int(this.options.systemPrompts);
      const turns: Turn[] = [];
      const count = between(rng, this.options.turns);
      for (let t = 0; t < count; t++) {
        const userMessage = prose(rng, between(rng, this.options.userMessageTokens));
        turns.push({ userMessage, maxTokens: between(rng, this.options.answerTokens), thinkMs: between(rng, this.options.thinkMs) });
      }
      yield { systemPrompt, turns };
    }
  }
}
