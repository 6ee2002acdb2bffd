/**
 * Wire types of the OpenAI-compatible API as vLLM serves it: field names are the JSON names
 * (snake_case). Requests are what the validators in `validate.ts` return: known fields only,
 * each checked; responses are what the builders in `builders.ts` produce.
 */

export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

export interface TextContentPart {
  type: 'text';
  text: string;
}

export interface ImageContentPart {
  type: 'image_url';
  image_url: { url: string; detail?: string };
}

export type ContentPart = TextContentPart | ImageContentPart;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  /** null only for an assistant message that carries tool calls. */
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface StreamOptions {
  /** One more chunk before `[DONE]`, with `choices: []` and the request's usage. */
  include_usage: boolean;
  /** vLLM: usage (so far) on every chunk. */
  continuous_usage_stats: boolean;
}

/** Sampling fields shared by chat and text completions. */
export interface SamplingFields {
  model: string;
  /** Output token limit; chat takes `max_completion_tokens` over `max_tokens`. Undefined: up to the context length. */
  max_tokens?: number;
  n: number;
  stream: boolean;
  stream_options?: StreamOptions;
  stop: string[];
  seed?: number;
  temperature?: number;
  top_p?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  user?: string;
  /** vLLM: keep generating past end-of-sequence, up to max_tokens. */
  ignore_eos: boolean;
  /** vLLM: no end-of-sequence before this many tokens. */
  min_tokens: number;
  /** vLLM with a KV connector: which half of a disaggregated prefill/decode request this is. */
  kv_transfer_params?: KvTransferParams;
}

/**
 * vLLM's `kv_transfer_params` as its NixlConnector reads and writes them, in requests and at the
 * top level of non-streamed responses. A proxy sends the prefill engine `do_remote_decode: true`
 * (and nulls), takes the object the prefill engine answers with (`do_remote_prefill: true`, the
 * engine, blocks and side channel to pull them from) and sends it with the request to a decode
 * engine, which loads the prompt's KV instead of computing it.
 */
export interface KvTransferParams {
  /** Prefill half: compute the prompt's KV and keep it for a remote decode engine to pull. */
  do_remote_decode: boolean;
  /** Decode half: a remote prefill engine computed the prompt's KV; load it from there. */
  do_remote_prefill: boolean;
  remote_engine_id: string | null;
  /** The prefill engine's KV blocks of the prompt, in prompt order. */
  remote_block_ids: number[] | null;
  remote_host: string | null;
  remote_port: number | null;
  /** The prefill engine's request id (NixlConnector version 2 and later). */
  remote_request_id?: string | null;
  /** The prefill engine's tensor-parallel size. */
  tp_size?: number;
}

export interface ChatCompletionRequest extends SamplingFields {
  messages: ChatMessage[];
  logprobs: boolean;
  top_logprobs?: number;
  tools?: unknown[];
  tool_choice?: unknown;
  response_format?: { type: string };
}

/** A text completion's prompt, normalised: one entry per prompt, text or token ids. */
export type CompletionPrompt = { text: string } | { tokenIds: number[] };

export interface CompletionRequest extends SamplingFields {
  prompts: CompletionPrompt[];
  echo: boolean;
  suffix?: string;
  /** Number of top log-probabilities per token, 0-5; undefined: none. */
  logprobs?: number;
}

export interface EmbeddingRequest {
  model: string;
  inputs: CompletionPrompt[];
  encoding_format: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

// ---------------------------------------------------------------- responses

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'abort';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Prompt tokens served from the prefix cache (vLLM with prompt token details). */
  prompt_tokens_details: { cached_tokens: number } | null;
}

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

export interface ChatCompletionChoice {
  index: number;
  message: { role: 'assistant'; content: string | null; refusal: null; tool_calls: ToolCall[] };
  logprobs: { content: TokenLogprob[] } | null;
  finish_reason: FinishReason;
  /** vLLM: the stop string that ended generation, or null. */
  stop_reason: string | null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatCompletionChoice[];
  usage: Usage;
  system_fingerprint: null;
  prompt_logprobs: null;
  /** A prefill engine's answer to `do_remote_decode`: where the decode engine pulls the KV from. */
  kv_transfer_params?: KvTransferParams | null;
}

export interface ChatCompletionChunkChoice {
  index: number;
  delta: { role?: 'assistant'; content?: string };
  logprobs: { content: TokenLogprob[] } | null;
  finish_reason: FinishReason | null;
  stop_reason?: string | null;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChatCompletionChunkChoice[];
  usage?: Usage | null;
}

export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: FinishReason | null;
  stop_reason: string | null;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: Usage | null;
  /** A prefill engine's answer to `do_remote_decode`: where the decode engine pulls the KV from. */
  kv_transfer_params?: KvTransferParams | null;
}

export interface Embedding {
  index: number;
  object: 'embedding';
  /** Floats, or a base64 string of little-endian float32 with `encoding_format: base64`. */
  embedding: number[] | string;
}

export interface EmbeddingList {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: Embedding[];
  usage: { prompt_tokens: number; total_tokens: number; completion_tokens: 0; prompt_tokens_details: null };
}

export interface ModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  root: string;
  parent: string | null;
  max_model_len: number;
}

export interface ModelList {
  object: 'list';
  data: ModelCard[];
}
