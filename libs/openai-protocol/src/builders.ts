/**
 * Builders of response objects, shaped as vLLM's OpenAI-compatible server writes them. Plain
 * functions over plain data, cheap enough for the hot path of a server doing thousands of
 * requests a second.
 */
import { randomBytes } from 'node:crypto';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionChunkChoice,
  Completion,
  CompletionChoice,
  CompletionLogprobs,
  Embedding,
  EmbeddingList,
  FinishReason,
  KvTransferParams,
  ModelCard,
  ModelList,
  TokenLogprob,
  Usage,
} from './types';

// Ids are a random per-process prefix and a counter: unique across replicas (64 random bits)
// and in a process, at the cost of a string format instead of a UUID per response.
const ID_PREFIX = randomBytes(8).toString('hex');
let idCounter = 0;

/** `chatcmpl-…`, `cmpl-…`, `embd-…`: the prefix and 32 hex digits, as vLLM names its responses. */
export function responseId(prefix: 'chatcmpl' | 'cmpl' | 'embd'): string {
  idCounter = idCounter >= Number.MAX_SAFE_INTEGER ? 1 : idCounter + 1;
  return `${prefix}-${ID_PREFIX}${idCounter.toString(16).padStart(16, '0')}`;
}

/** Seconds since the epoch, as `created` carries it. */
export function unixSeconds(nowMs: number = Date.now()): number {
  return Math.floor(nowMs / 1000);
}

/** `cachedTokens` null leaves `prompt_tokens_details` null (vLLM without prompt token details). */
export function usage(promptTokens: number, completionTokens: number, cachedTokens: number | null = null): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: cachedTokens === null ? null : { cached_tokens: cachedTokens },
  };
}

/** One generated choice, whatever the endpoint. */
export interface GeneratedChoice {
  text: string;
  finishReason: FinishReason;
  /** The stop string that ended it, when one did. */
  stopReason: string | null;
  logprobs?: TokenLogprob[];
}

export interface ResponseHead {
  id: string;
  created: number;
  model: string;
}

export function chatCompletion(head: ResponseHead, choices: readonly GeneratedChoice[], usageInfo: Usage): ChatCompletion {
  return {
    id: head.id,
    object: 'chat.completion',
    created: head.created,
    model: head.model,
    choices: choices.map((choice, index) => ({
      index,
      message: { role: 'assistant', content: choice.text, refusal: null, tool_calls: [] },
      logprobs: choice.logprobs ? { content: choice.logprobs } : null,
      finish_reason: choice.finishReason,
      stop_reason: choice.stopReason,
    })),
    usage: usageInfo,
    system_fingerprint: null,
    prompt_logprobs: null,
  };
}

/** A streamed chat chunk; `usageInfo` undefined leaves `usage` out, null writes `"usage": null`. */
export function chatCompletionChunk(
  head: ResponseHead,
  choices: ChatCompletionChunkChoice[],
  usageInfo?: Usage | null,
): ChatCompletionChunk {
  const chunk: ChatCompletionChunk = { id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model, choices };
  if (usageInfo !== undefined) chunk.usage = usageInfo;
  return chunk;
}

/** The first delta of a streamed choice: the role, and empty content. */
export function chatRoleDelta(index: number): ChatCompletionChunkChoice {
  return { index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null };
}

/** A content delta; the last one of a choice carries its finish (and stop) reason. */
export function chatContentDelta(
  index: number,
  content: string,
  finish: { finishReason: FinishReason; stopReason: string | null } | null = null,
  logprobs: TokenLogprob[] | null = null,
): ChatCompletionChunkChoice {
  const choice: ChatCompletionChunkChoice = {
    index,
    delta: { content },
    logprobs: logprobs ? { content: logprobs } : null,
    finish_reason: finish ? finish.finishReason : null,
  };
  if (finish) choice.stop_reason = finish.stopReason;
  return choice;
}

/** The chunk `stream_options.include_usage` adds before `[DONE]`: no choices, the whole request's usage. */
export function chatUsageChunk(head: ResponseHead, usageInfo: Usage): ChatCompletionChunk {
  return chatCompletionChunk(head, [], usageInfo);
}

/** Text completion logprobs in the legacy layout. */
export function completionLogprobs(tokens: readonly TokenLogprob[], textOffset = 0): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = textOffset;
  for (const token of tokens) {
    out.tokens.push(token.token);
    out.token_logprobs.push(token.logprob);
    out.top_logprobs.push(Object.fromEntries(token.top_logprobs.map((top) => [top.token, top.logprob])));
    out.text_offset.push(offset);
    offset += token.token.length;
  }
  return out;
}

export function completion(head: ResponseHead, choices: readonly CompletionChoice[], usageInfo?: Usage | null): Completion {
  const body: Completion = { id: head.id, object: 'text_completion', created: head.created, model: head.model, choices: [...choices] };
  if (usageInfo !== undefined) body.usage = usageInfo;
  return body;
}

export function completionChoice(
  index: number,
  text: string,
  finish: { finishReason: FinishReason; stopReason: string | null } | null,
  logprobs: CompletionLogprobs | null = null,
): CompletionChoice {
  return { index, text, logprobs, finish_reason: finish ? finish.finishReason : null, stop_reason: finish ? finish.stopReason : null };
}

/** Little-endian float32 bytes, base64: what `encoding_format: base64` returns. */
export function embeddingToBase64(vector: ArrayLike<number>): string {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
}

export function embeddingList(
  head: ResponseHead,
  vectors: readonly ArrayLike<number>[],
  promptTokens: number,
  format: 'float' | 'base64' = 'float',
): EmbeddingList {
  const data: Embedding[] = vectors.map((vector, index) => ({
    index,
    object: 'embedding',
    embedding: format === 'base64' ? embeddingToBase64(vector) : Array.from(vector),
  }));
  return {
    id: head.id,
    object: 'list',
    created: head.created,
    model: head.model,
    data,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0, prompt_tokens_details: null },
  };
}

export function modelCard(id: string, root: string, created: number, maxModelLen: number, ownedBy = 'vllm'): ModelCard {
  return { id, object: 'model', created, owned_by: ownedBy, root, parent: null, max_model_len: maxModelLen };
}

export function modelList(cards: readonly ModelCard[]): ModelList {
  return { object: 'list', data: [...cards] };
}

/**
 * The `kv_transfer_params` a disaggregated-serving proxy sends the prefill engine (vLLM's
 * `toy_proxy_server.py`): prefill for a remote decode, nothing to pull. A fresh object each call.
 */
export function remoteDecodeRequestParams(): KvTransferParams {
  return {
    do_remote_decode: true,
    do_remote_prefill: false,
    remote_engine_id: null,
    remote_block_ids: null,
    remote_host: null,
    remote_port: null,
  };
}
