/**
 * A client's inference request as the router needs it: validated (400 naming the field), the
 * body to send upstream (the client's bytes unless a stream must ask for usage), and what the
 * routing policy reads (prompt text, session key).
 */
import {
  parseChatCompletionRequest,
  parseCompletionRequest,
  parseEmbeddingRequest,
  parseJsonBody,
  type ChatCompletionRequest,
  type CompletionRequest,
  type EmbeddingRequest,
} from '@gpufleet/openai-protocol';

export type InferenceApi = 'chat.completions' | 'completions' | 'embeddings';

export type ParsedRequest = ChatCompletionRequest | CompletionRequest | EmbeddingRequest;

export interface InferenceRequest {
  readonly api: InferenceApi;
  readonly parsed: ParsedRequest;
  readonly model: string;
  readonly stream: boolean;
  /** The client asked for the usage chunk (stream_options.include_usage). */
  readonly clientWantsUsage: boolean;
  /** What goes to the engine. */
  readonly upstreamBody: Buffer;
}

/** Parses and validates a body; throws the 400 ApiError. */
export function readInferenceRequest(api: InferenceApi, body: Buffer): InferenceRequest {
  const json = parseJsonBody(body.toString('utf8'));
  const parsed = api === 'chat.completions' ? parseChatCompletionRequest(json) : api === 'completions' ? parseCompletionRequest(json) : parseEmbeddingRequest(json);
  const stream = 'stream' in parsed && parsed.stream;
  const clientWantsUsage = stream && parsed.stream_options?.include_usage === true;
  let upstreamBody = body;
  if (stream && !clientWantsUsage) {
    // Ask the engine for the usage chunk: the router meters from it and removes it again.
    const object = json as Record<string, unknown>;
    const options = object.stream_options;
    if (!('stream_options' in object)) upstreamBody = withStreamUsage(body);
    else {
      object.stream_options = typeof options === 'object' && options !== null ? { ...options, include_usage: true } : { include_usage: true };
      upstreamBody = Buffer.from(JSON.stringify(object));
    }
  }
  return { api, parsed, model: parsed.model, stream, clientWantsUsage, upstreamBody };
}

const STREAM_USAGE_MEMBER = Buffer.from('"stream_options":{"include_usage":true},');
const OPEN_BRACE = 0x7b;

/**
 * The client's bytes with `"stream_options":{"include_usage":true}` as the object's first member:
 * no re-serialisation of a prompt that may be long. Only for bodies without `stream_options`
 * (the member cannot then appear twice), which parsed as an object, so a `{` comes first.
 */
function withStreamUsage(body: Buffer): Buffer {
  const open = body.indexOf(OPEN_BRACE);
  return Buffer.concat([body.subarray(0, open + 1), STREAM_USAGE_MEMBER, body.subarray(open + 1)]);
}

/** The prompt as text, for prefix matching: chat turns in order, or the (first) prompt. */
export function promptText(request: ParsedRequest): string {
  if ('messages' in request) {
    let text = '';
    for (const message of request.messages) {
      text += `<|${message.role}|>`;
      const content = message.content;
      if (typeof content === 'string') text += content;
      else if (content) for (const part of content) text += part.type === 'text' ? part.text : `<image:${part.image_url.url.length > 64 ? part.image_url.url.slice(0, 64) : part.image_url.url}>`;
      text += '\n';
    }
    return text;
  }
  const first = 'prompts' in request ? request.prompts[0] : request.inputs[0];
  if (first === undefined) return '';
  return 'text' in first ? first.text : first.tokenIds.join(' ');
}
