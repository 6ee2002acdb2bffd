/**
 * Token usage as engines report it (`usage` of a response or of a stream's last chunk), read
 * without re-parsing whole response bodies, and the router's own estimate when it is missing.
 */
import { countTokens, type ChatCompletionRequest, type CompletionRequest, type EmbeddingRequest } from '@gpufleet/openai-protocol';

export interface TokenUsage {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

/** An OpenAI `usage` object as counts; undefined when it is not one. */
export function usageFromObject(value: unknown): TokenUsage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const u = value as Record<string, unknown>;
  if (typeof u.prompt_tokens !== 'number' && typeof u.total_tokens !== 'number') return undefined;
  const details = u.prompt_tokens_details;
  const cached = typeof details === 'object' && details !== null ? count((details as Record<string, unknown>).cached_tokens) : 0;
  const prompt = count(u.prompt_tokens);
  const completion = typeof u.completion_tokens === 'number' ? count(u.completion_tokens) : Math.max(0, count(u.total_tokens) - prompt);
  return { promptTokens: prompt, cachedTokens: Math.min(cached, prompt), completionTokens: completion };
}

const USAGE_KEY = '"usage"';
const USAGE_KEY_BYTES = Buffer.from(USAGE_KEY);

/**
 * The JSON text of the last `"usage": {…}` member in `text`, found by matching braces (strings
 * respected), or undefined. Engines write usage last, so the tail of a body is enough.
 */
export function lastUsageJson(text: string): string | undefined {
  let at = text.lastIndexOf(USAGE_KEY);
  while (at >= 0) {
    let i = at + USAGE_KEY.length;
    while (i < text.length && (text[i] === ' ' || text[i] === ':' || text[i] === '\n' || text[i] === '\t' || text[i] === '\r')) i++;
    if (text[i] === '{') {
      const end = matchingBrace(text, i);
      if (end > 0) return text.slice(i, end + 1);
    }
    at = at === 0 ? -1 : text.lastIndexOf(USAGE_KEY, at - 1);
  }
  return undefined;
}

function matchingBrace(text: string, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */) depth++;
    else if (c === 125 /* } */ && --depth === 0) return i;
  }
  return -1;
}

/** Usage in a JSON text (a response body or its tail); undefined when absent or unreadable. */
export function usageInJson(text: string): TokenUsage | undefined {
  const json = lastUsageJson(text);
  if (json === undefined) return undefined;
  const scanned = scanUsage(json);
  if (scanned !== null) return scanned;
  try {
    return usageFromObject(JSON.parse(json));
  } catch {
    return undefined;
  }
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/**
 * The plain integer after `"key":` in `json` from `from` on: -1 when the key is absent, NaN when
 * its value is anything else (null, a float, a string), which sends the caller to JSON.parse.
 */
function integerAfter(json: string, key: string, from = 0, before = json.length): number {
  const at = json.indexOf(key, from);
  if (at < 0 || at >= before) return -1;
  let i = at + key.length;
  while (isSpace(json.charCodeAt(i))) i++;
  if (json.charCodeAt(i) !== 58 /* : */) return NaN;
  i++;
  while (isSpace(json.charCodeAt(i))) i++;
  const start = i;
  let n = 0;
  for (let c = json.charCodeAt(i); c >= 48 && c <= 57; c = json.charCodeAt(++i)) n = n * 10 + (c - 48);
  if (i === start || i - start > 15) return NaN;
  const next = json.charCodeAt(i);
  return next === 46 /* . */ || next === 101 /* e */ || next === 69 /* E */ ? NaN : n;
}

/**
 * `usageFromObject(JSON.parse(json))` for the usual shape of a usage object (plain integer
 * counts), without building the object: this runs once per proxied request. Null when the
 * object looks any different; the caller then parses it.
 */
function scanUsage(json: string): TokenUsage | undefined | null {
  const prompt = integerAfter(json, '"prompt_tokens"');
  const total = integerAfter(json, '"total_tokens"');
  const completion = integerAfter(json, '"completion_tokens"');
  if (Number.isNaN(prompt) || Number.isNaN(total) || Number.isNaN(completion)) return null;
  if (prompt < 0 && total < 0) return undefined;
  let cached = 0;
  const details = json.indexOf('"prompt_tokens_details"');
  if (details >= 0) {
    // Only a cached_tokens inside prompt_tokens_details counts; `null` there means none.
    const close = json.indexOf('}', details);
    const value = integerAfter(json, '"cached_tokens"', details, close < 0 ? json.length : close);
    if (Number.isNaN(value)) return null;
    cached = Math.max(0, value);
  }
  const promptTokens = Math.max(0, prompt);
  return {
    promptTokens,
    cachedTokens: Math.min(cached, promptTokens),
    completionTokens: completion >= 0 ? completion : Math.max(0, Math.max(0, total) - promptTokens),
  };
}

/** Bytes of a body's end kept for reading its usage; whole bodies are kept up to WHOLE_BODY_BYTES. */
const TAIL_BYTES = 2048;
const WHOLE_BODY_BYTES = 64 * 1024;

/**
 * Keeps the end of a non-streamed response passing through (references to its chunks, no
 * copies) so its `usage` can be read once it is complete.
 */
export class BodyTail {
  private chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.kept += chunk.length;
    this.total += chunk.length;
    if (this.total <= WHOLE_BODY_BYTES) return;
    while (this.chunks.length > 1 && this.kept - this.chunks[0].length >= TAIL_BYTES) this.kept -= (this.chunks.shift() as Buffer).length;
  }

  get bytes(): number {
    return this.total;
  }

  /** The whole body, when it was small enough to keep (WHOLE_BODY_BYTES). */
  wholeText(): string | undefined {
    if (this.total > WHOLE_BODY_BYTES) return undefined;
    return this.chunks.length === 1 ? this.chunks[0].toString('utf8') : Buffer.concat(this.chunks, this.kept).toString('utf8');
  }

  usage(): TokenUsage | undefined {
    if (this.chunks.length === 0) return undefined;
    const bytes = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.kept);
    // Decode from the last `"usage"` on: engines write it last, and the rest need not become a string.
    const at = bytes.lastIndexOf(USAGE_KEY_BYTES);
    if (at < 0) return undefined;
    return usageInJson(bytes.toString('utf8', at)) ?? (at > 0 ? usageInJson(bytes.toString('utf8')) : undefined);
  }
}

// ---------------------------------------------------------------- estimates

type ParsedRequest = ChatCompletionRequest | CompletionRequest | EmbeddingRequest;

/** The prompt tokens of a request by the router's approximate tokenizer. */
export function estimatePromptTokens(request: ParsedRequest): number {
  if ('messages' in request) {
    let tokens = 3; // the assistant cue
    for (const message of request.messages) {
      tokens += 4; // turn markers and role
      if (typeof message.content === 'string') tokens += countTokens(message.content);
      else if (message.content) for (const part of message.content) tokens += part.type === 'text' ? countTokens(part.text) : 64;
    }
    return tokens;
  }
  const prompts = 'prompts' in request ? request.prompts : request.inputs;
  let tokens = 0;
  for (const prompt of prompts) tokens += 'text' in prompt ? countTokens(prompt.text) : prompt.tokenIds.length;
  return tokens;
}

/**
 * Completion tokens of a non-streamed answer without usage: the tokens of its choices' text when
 * the body was kept whole, else a quarter of its bytes.
 */
export function estimateCompletionTokens(tail: BodyTail): number {
  const text = tail.wholeText();
  if (text !== undefined) {
    try {
      const body = JSON.parse(text) as { choices?: { message?: { content?: unknown }; text?: unknown }[] };
      if (Array.isArray(body.choices)) {
        let tokens = 0;
        for (const choice of body.choices) {
          const content = choice.message?.content ?? choice.text;
          if (typeof content === 'string') tokens += countTokens(content);
        }
        return tokens;
      }
    } catch {
      // fall through to the byte estimate
    }
  }
  return Math.ceil(tail.bytes / 4);
}

/** Tokens a request may add: its `max_tokens` (or `fallback`) times `n` and the prompts. */
export function completionBudget(request: ParsedRequest, fallback: number): number {
  if (!('n' in request)) return 0;
  const prompts = 'prompts' in request ? request.prompts.length : 1;
  return (request.max_tokens ?? fallback) * request.n * prompts;
}
