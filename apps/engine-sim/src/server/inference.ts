/**
 * The OpenAI-compatible inference endpoints of the simulated engine: validate (protocol
 * library), plan the answer (deterministic generation), run it through the engine scheduler
 * (queueing, prefix cache, latency) and answer — in one JSON body, or as server-sent events,
 * one chunk per token as the scheduler emits them.
 */
import type { ServerResponse } from 'node:http';
import {
  EngineScheduler,
  generateText,
  generationSeed,
  embedTokens,
  KvCapacityError,
  kvBlockIds,
  transferableTokens,
  type GeneratedText,
  type SequenceHandle,
  type SequenceResult,
} from '@gpufleet/engine-sim-core';
import {
  chatCompletion,
  chatCompletionChunk,
  chatContentDelta,
  chatPromptTokenIds,
  chatRoleDelta,
  chatUsageChunk,
  completion,
  completionChoice,
  completionLogprobs,
  contextLengthExceeded,
  embeddingList,
  encode,
  invalidField,
  invalidRequest,
  modelCard,
  modelList,
  modelNotFound,
  parseChatCompletionRequest,
  parseCompletionRequest,
  parseEmbeddingRequest,
  responseId,
  serverError,
  SSE_DONE,
  SSE_HEADERS,
  sseEvent,
  StreamChunkEncoder,
  unixSeconds,
  usage,
  type ChatCompletion,
  type Completion,
  type CompletionPrompt,
  type KvTransferParams,
  type ModelList,
  type ResponseHead,
  type StreamOptions,
  type TokenLogprob,
  type Usage,
} from '@gpufleet/openai-protocol';
import type { FinishedReason, VllmMetrics } from '../metrics/vllm-metrics';
import { baseHeaders, sendJson, type ResponseDecor } from './http-kit';

export interface InferenceSettings {
  /** Names the API accepts; the first is the one responses carry. */
  readonly servedModelNames: readonly string[];
  readonly modelRoot: string;
  readonly maxModelLen: number;
  readonly meanOutputTokens: number;
  readonly embeddingDim: number;
  readonly seed: number;
  readonly errorRate: number;
  /** `remote_engine_id` of the KV this engine prefills for remote decode engines. */
  readonly engineId: string;
  readonly tensorParallelSize: number;
}

/** Which half of a disaggregated prefill/decode request a job is (vLLM's `kv_transfer_params`). */
type KvHalf = 'prefill' | 'decode';

/** One prompt of a request, with the answers planned for it (`n` choices). */
interface PlannedPrompt {
  readonly tokenIds: number[];
  /** Text `echo` puts before the completion ('' for token-id prompts). */
  readonly echoText: string;
  readonly choices: GeneratedText[];
  /** Decode half: leading prompt tokens whose KV the prefill engine holds. */
  readonly remoteTokens?: number;
}

interface Job {
  readonly kind: 'chat' | 'completion';
  readonly head: ResponseHead;
  readonly n: number;
  readonly stream: boolean;
  readonly streamOptions?: StreamOptions;
  readonly echo: boolean;
  /** Completions: alternatives per token in `logprobs`; undefined: no logprobs. */
  readonly completionLogprobs?: number;
  readonly prompts: PlannedPrompt[];
  readonly kvHalf?: KvHalf;
}

/** What a handler needs of the HTTP exchange. */
export interface Exchange {
  readonly res: ServerResponse;
  readonly decor: ResponseDecor;
  /** Called once the client is gone before the answer was complete. */
  onAbort(cancel: () => void): void;
}

const created = unixSeconds();

export class InferenceService {
  private readonly servedNames: Set<string>;
  /** Where decode engines would pull this engine's KV from: set once the server listens. */
  kvTransferEndpoint: { readonly host: string; readonly port: number } = { host: 'localhost', port: 0 };

  constructor(
    private readonly settings: InferenceSettings,
    private readonly scheduler: EngineScheduler,
    private readonly metrics: VllmMetrics,
    private readonly injectError: () => boolean,
  ) {
    this.servedNames = new Set(settings.servedModelNames);
  }

  get responseModel(): string {
    return this.settings.servedModelNames[0];
  }

  models(): ModelList {
    return modelList(this.settings.servedModelNames.map((name) => modelCard(name, this.settings.modelRoot, created, this.settings.maxModelLen)));
  }

  chat(body: unknown, exchange: Exchange): void {
    const request = parseChatCompletionRequest(body);
    this.checkModel(request.model);
    const kv = request.kv_transfer_params;
    const kvHalf = kv === undefined ? undefined : this.kvHalf(kv, request.stream, 1);
    const tokenIds = chatPromptTokenIds(request.messages, request.tools);
    const maxTokens = this.maxTokens(request.max_tokens, tokenIds.length, 'messages');
    this.maybeInjectError();
    const topLogprobs = request.logprobs ? (request.top_logprobs ?? 0) : undefined;
    const prompt: PlannedPrompt = { tokenIds, echoText: '', choices: this.plan(tokenIds, request, maxTokens, topLogprobs), remoteTokens: this.remoteTokens(kvHalf, kv, tokenIds) };
    this.run(
      { kind: 'chat', head: this.head('chatcmpl'), n: request.n, stream: request.stream, streamOptions: request.stream_options, echo: false, prompts: [prompt], kvHalf },
      exchange,
    );
  }

  completions(body: unknown, exchange: Exchange): void {
    const request = parseCompletionRequest(body);
    this.checkModel(request.model);
    const kv = request.kv_transfer_params;
    const kvHalf = kv === undefined ? undefined : this.kvHalf(kv, request.stream, request.prompts.length);
    const prompts = request.prompts.map((p, i) => {
      const tokenIds = 'text' in p ? encode(p.text) : p.tokenIds;
      const maxTokens = this.maxTokens(request.max_tokens, tokenIds.length, request.prompts.length > 1 ? `prompt[${i}]` : 'prompt');
      return { p, tokenIds, maxTokens };
    });
    this.maybeInjectError();
    const planned = prompts.map(({ p, tokenIds, maxTokens }) => ({
      tokenIds,
      echoText: 'text' in p ? p.text : '',
      choices: this.plan(tokenIds, request, maxTokens, request.logprobs, true),
      remoteTokens: this.remoteTokens(kvHalf, kv, tokenIds),
    }));
    this.run(
      {
        kind: 'completion',
        head: this.head('cmpl'),
        n: request.n,
        stream: request.stream,
        streamOptions: request.stream_options,
        echo: request.echo,
        completionLogprobs: request.logprobs,
        prompts: planned,
        kvHalf,
      },
      exchange,
    );
  }

  embeddings(body: unknown, exchange: Exchange): void {
    const request = parseEmbeddingRequest(body);
    this.checkModel(request.model);
    const dimensions = request.dimensions ?? this.settings.embeddingDim;
    if (dimensions > this.settings.embeddingDim) {
      throw invalidField('dimensions', `this model's embeddings have at most ${this.settings.embeddingDim} dimensions, got ${dimensions}`);
    }
    const inputs = request.inputs.map((input: CompletionPrompt, i) => {
      const tokenIds = 'text' in input ? encode(input.text) : input.tokenIds;
      if (tokenIds.length > this.settings.maxModelLen) {
        throw contextLengthExceeded(this.settings.maxModelLen, tokenIds.length, 0, request.inputs.length > 1 ? `input[${i}]` : 'input');
      }
      return tokenIds;
    });
    this.maybeInjectError();
    const head = this.head('embd');
    const vectors: Float32Array[] = new Array(inputs.length);
    let remaining = inputs.length;
    let aborted = false;
    const handles = this.submitAll(
      inputs.map((tokenIds) => ({ tokenIds, outputTokens: 1, parallel: 1 })),
      false,
      (index, result) => {
        this.metrics.finished(result, 0, result.aborted ? 'abort' : 'stop');
        if (result.aborted) aborted = true;
        else vectors[index] = embedTokens(inputs[index], dimensions, this.settings.seed);
        if (--remaining > 0 || aborted) return;
        const promptTokens = inputs.reduce((sum, ids) => sum + ids.length, 0);
        sendJson(exchange.res, exchange.decor, 200, embeddingList(head, vectors, promptTokens, request.encoding_format));
      },
    );
    exchange.onAbort(() => handles.forEach((h) => h.cancel()));
  }

  // ---------------------------------------------------------------- planning

  private head(prefix: 'chatcmpl' | 'cmpl' | 'embd'): ResponseHead {
    return { id: responseId(prefix), created: unixSeconds(), model: this.responseModel };
  }

  private checkModel(model: string): void {
    if (!this.servedNames.has(model)) throw modelNotFound(model, this.settings.servedModelNames);
  }

  /** The output limit: what the request asks, or what the context leaves (vLLM's default). */
  private maxTokens(requested: number | undefined, promptTokens: number, param: string): number {
    const limit = this.settings.maxModelLen;
    if (promptTokens >= limit || (requested !== undefined && promptTokens + requested > limit)) {
      throw contextLengthExceeded(limit, promptTokens, requested ?? 0, param);
    }
    return requested ?? limit - promptTokens;
  }

  /**
   * Which half of a disaggregated request `kv` makes this one, or undefined when neither flag is
   * set (vLLM then ignores the parameters too). The prefill half answers the transfer
   * parameters in its response body, so it cannot stream; either half takes one prompt.
   */
  private kvHalf(kv: KvTransferParams, stream: boolean, prompts: number): KvHalf | undefined {
    const half: KvHalf | undefined = kv.do_remote_decode ? 'prefill' : kv.do_remote_prefill ? 'decode' : undefined;
    if (half === undefined) return undefined;
    if (half === 'prefill' && stream) {
      throw invalidField('stream', 'must be false with kv_transfer_params.do_remote_decode: the prefill engine answers the KV transfer parameters in its response body');
    }
    if (prompts > 1) throw invalidField('prompt', `kv_transfer_params take a single prompt, got ${prompts}`);
    return half;
  }

  /** Decode half: the leading prompt tokens the prefill engine's blocks cover. */
  private remoteTokens(half: KvHalf | undefined, kv: KvTransferParams | undefined, tokenIds: readonly number[]): number | undefined {
    if (half !== 'decode' || kv === undefined) return undefined;
    return transferableTokens(tokenIds, this.scheduler.settings.blockSize, kv.remote_block_ids ?? []);
  }

  /** What a prefill half answers: where a decode engine pulls the prompt's KV from (NixlConnector's fields). */
  private kvTransferParams(job: Job): KvTransferParams {
    const blockIds = kvBlockIds(job.prompts[0].tokenIds, this.scheduler.settings.blockSize);
    this.metrics.kvOffered(blockIds.length);
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: blockIds,
      remote_engine_id: this.settings.engineId,
      remote_request_id: job.head.id,
      remote_host: this.kvTransferEndpoint.host,
      remote_port: this.kvTransferEndpoint.port,
      tp_size: this.settings.tensorParallelSize,
    };
  }

  private maybeInjectError(): void {
    if (this.settings.errorRate > 0 && this.injectError()) {
      this.metrics.injectedError();
      throw serverError(`Injected fault: the simulated engine failed this request (ERROR_RATE=${this.settings.errorRate}).`);
    }
  }

  private plan(
    tokenIds: readonly number[],
    request: { seed?: number; n: number; min_tokens: number; ignore_eos: boolean; stop: string[] },
    maxTokens: number,
    topLogprobs: number | undefined,
    continuation = false,
  ): GeneratedText[] {
    const seed = generationSeed(this.settings.seed, request.seed, tokenIds);
    const choices: GeneratedText[] = [];
    for (let i = 0; i < request.n; i++) {
      choices.push(
        generateText({
          seed: seed + i,
          maxTokens,
          minTokens: Math.min(request.min_tokens, maxTokens),
          ignoreEos: request.ignore_eos,
          stop: request.stop,
          meanOutputTokens: this.settings.meanOutputTokens,
          topLogprobs,
          continuation,
        }),
      );
    }
    return choices;
  }

  // ---------------------------------------------------------------- running

  /** Submits one sequence per prompt; checks that every one can fit before submitting any. */
  private submitAll(
    sequences: { tokenIds: number[]; outputTokens: number; parallel: number; remoteTokens?: number }[],
    stream: boolean,
    onFinish: (index: number, result: SequenceResult) => void,
    onToken?: (index: number, token: number) => void,
  ): SequenceHandle[] {
    const total = this.scheduler.settings.kvCacheBlocks;
    for (const seq of sequences) {
      const { fullBlocks, privateBlocks } = this.scheduler.blocksNeeded({ promptTokenIds: seq.tokenIds, outputTokens: seq.outputTokens, parallel: seq.parallel });
      if (fullBlocks + privateBlocks > total) {
        const error = new KvCapacityError(fullBlocks + privateBlocks, total, this.scheduler.settings.blockSize);
        throw invalidRequest(error.message, null, 'kv_cache_too_small');
      }
    }
    return sequences.map((seq, index) =>
      this.scheduler.submit(
        { promptTokenIds: seq.tokenIds, outputTokens: seq.outputTokens, parallel: seq.parallel, granularity: stream ? 'token' : 'final', remoteTokens: seq.remoteTokens },
        {
          onAdmitted: (info) => {
            this.metrics.admitted(info.promptTokens, info.queriedTokens, info.cachedTokens);
            if (seq.remoteTokens !== undefined) this.metrics.kvPulled(info.promptTokens, info.externalTokens, info.transferredBlocks);
          },
          onToken: onToken ? (token) => onToken(index, token) : undefined,
          onFinish: (result) => onFinish(index, result),
        },
      ),
    );
  }

  private run(job: Job, exchange: Exchange): void {
    const { res } = exchange;
    let remaining = job.prompts.length;
    let cachedTokens = 0;
    let aborted = false;
    // Streaming: tokens so far over all choices (continuous usage), text offsets for logprobs.
    let streamedTokens = 0;
    const offsets = job.stream && job.completionLogprobs !== undefined ? new Array<number>(job.prompts.length * job.n).fill(0) : undefined;

    // Tokens emitted in one scheduler step go out in one write (one chunked-encoding chunk).
    let pending = '';
    let flushQueued = false;
    const flush = (): void => {
      flushQueued = false;
      if (pending.length === 0 || aborted || res.writableEnded) return;
      res.write(pending);
      pending = '';
    };
    const encoder = job.stream ? new StreamChunkEncoder(job.head, job.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion') : undefined;
    const onToken = (promptIndex: number, token: number): void => {
      if (aborted || res.writableEnded) return;
      if (!res.headersSent) {
        const headers = baseHeaders(exchange.decor, SSE_HEADERS['content-type']);
        Object.assign(headers, SSE_HEADERS);
        res.writeHead(200, headers);
      }
      pending += this.tokenEvents(job, encoder, promptIndex, token, offsets, (count) => (streamedTokens += count), () => this.usageSoFar(job, streamedTokens, cachedTokens));
      if (!flushQueued) {
        flushQueued = true;
        queueMicrotask(flush);
      }
    };

    const onFinish = (promptIndex: number, result: SequenceResult): void => {
      const prompt = job.prompts[promptIndex];
      // Prompt tokens pulled from a prefill engine count as cached, as vLLM reports them.
      cachedTokens += result.cachedTokens + result.externalTokens;
      const generated = prompt.choices.reduce((sum, c) => sum + (result.aborted ? Math.min(c.tokens, result.outputTokens) : c.tokens), 0);
      const reason: FinishedReason = result.aborted ? 'abort' : prompt.choices[0].finishReason;
      this.metrics.finished(result, generated, reason);
      if (result.aborted) aborted = true;
      if (--remaining > 0 || aborted) return;
      const usageInfo = this.totalUsage(job, cachedTokens);
      if (job.stream) {
        const events = pending;
        pending = '';
        this.endStream(job, exchange, usageInfo, events);
      }
      else {
        const body = this.fullBody(job, usageInfo);
        if (job.kvHalf === 'prefill') body.kv_transfer_params = this.kvTransferParams(job);
        sendJson(res, exchange.decor, 200, body);
      }
    };

    const handles = this.submitAll(
      job.prompts.map((p) => ({ tokenIds: p.tokenIds, outputTokens: Math.max(...p.choices.map((c) => c.tokens)), parallel: job.n, remoteTokens: p.remoteTokens })),
      job.stream,
      onFinish,
      job.stream ? onToken : undefined,
    );
    exchange.onAbort(() => {
      aborted = true;
      for (const handle of handles) handle.cancel();
    });
  }

  private totalUsage(job: Job, cachedTokens: number): Usage {
    let promptTokens = 0;
    let completionTokens = 0;
    for (const prompt of job.prompts) {
      promptTokens += prompt.tokenIds.length;
      for (const choice of prompt.choices) completionTokens += choice.tokens;
    }
    return usage(promptTokens, completionTokens, cachedTokens);
  }

  private usageSoFar(job: Job, streamedTokens: number, cachedTokens: number): Usage {
    const promptTokens = job.prompts.reduce((sum, p) => sum + p.tokenIds.length, 0);
    return usage(promptTokens, streamedTokens, cachedTokens);
  }

  /** The SSE events for token `token` of every choice of prompt `promptIndex`. */
  private tokenEvents(
    job: Job,
    encoder: StreamChunkEncoder | undefined,
    promptIndex: number,
    token: number,
    offsets: number[] | undefined,
    count: (tokens: number) => void,
    usageNow: () => Usage,
  ): string {
    const prompt = job.prompts[promptIndex];
    const continuous = job.streamOptions?.continuous_usage_stats === true;
    let out = '';
    for (let c = 0; c < prompt.choices.length; c++) {
      const choice = prompt.choices[c];
      if (token >= choice.tokens) continue;
      const index = promptIndex * job.n + c;
      const finish = token === choice.tokens - 1 ? { finishReason: choice.finishReason, stopReason: choice.stopReason } : null;
      const piece = choice.pieces[token];
      const fast = encoder !== undefined && !continuous && !choice.logprobs;
      if (job.kind === 'chat') {
        if (token === 0) out += fast ? encoder.chatRole(index) : sseEvent(chatCompletionChunk(job.head, [chatRoleDelta(index)], continuous ? usageNow() : undefined));
        count(1);
        if (fast) out += encoder.chatContent(index, piece, finish);
        else {
          const logprobs: TokenLogprob[] | null = choice.logprobs ? [choice.logprobs[token]] : null;
          out += sseEvent(chatCompletionChunk(job.head, [chatContentDelta(index, piece, finish, logprobs)], continuous ? usageNow() : undefined));
        }
      } else {
        const text = token === 0 && job.echo ? prompt.echoText + piece : piece;
        count(1);
        if (fast) out += encoder.completionText(index, text, finish);
        else {
          let logprobs = null;
          if (choice.logprobs && offsets) {
            logprobs = completionLogprobs([choice.logprobs[token]], offsets[index]);
            offsets[index] += text.length;
          }
          out += sseEvent(completion(job.head, [completionChoice(index, text, finish, logprobs)], continuous ? usageNow() : undefined));
        }
      }
    }
    return out;
  }

  private endStream(job: Job, exchange: Exchange, usageInfo: Usage, events: string): void {
    const { res } = exchange;
    if (res.writableEnded) return;
    if (!res.headersSent) {
      const headers = baseHeaders(exchange.decor, SSE_HEADERS['content-type']);
      Object.assign(headers, SSE_HEADERS);
      res.writeHead(200, headers);
    }
    let tail = events;
    if (job.streamOptions?.include_usage) {
      tail += sseEvent(job.kind === 'chat' ? chatUsageChunk(job.head, usageInfo) : completion(job.head, [], usageInfo));
    }
    res.end(tail + SSE_DONE);
  }

  private fullBody(job: Job, usageInfo: Usage): ChatCompletion | Completion {
    if (job.kind === 'chat') {
      const choices = job.prompts[0].choices.map((c) => ({
        text: c.text,
        finishReason: c.finishReason,
        stopReason: c.stopReason,
        logprobs: c.logprobs,
      }));
      return chatCompletion(job.head, choices, usageInfo);
    }
    const choices = job.prompts.flatMap((prompt, p) =>
      prompt.choices.map((c, i) => {
        const text = job.echo ? prompt.echoText + c.text : c.text;
        const logprobs = c.logprobs ? completionLogprobs(c.logprobs, job.echo ? prompt.echoText.length : 0) : null;
        return completionChoice(p * job.n + i, text, { finishReason: c.finishReason, stopReason: c.stopReason }, logprobs);
      }),
    );
    return completion(job.head, choices, usageInfo);
  }
}
