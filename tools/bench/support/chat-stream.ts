// A streamed chat completion seen from the client: time to the first content chunk, the text,
// the usage chunk, and the replica that answered (engine-sim's x-gpufleet-replica header, which
// the router passes through).
import { type Agent, request } from 'node:http';
import { SseParser } from '@gpufleet/openai-protocol';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

export interface StreamedChat {
  readonly status: number;
  /** The x-gpufleet-replica header; undefined when absent. */
  readonly replica: string | undefined;
  /** From sending the request to the first chunk with non-empty content; NaN when none came. */
  readonly ttftMs: number;
  /** From sending the request to the end of the stream. */
  readonly e2eMs: number;
  readonly content: string;
  /** From the usage chunk (the request asks for it); 0 when absent. */
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** Why the request failed: a non-200 status (with its body), an error event, a broken connection. */
  readonly error: string | undefined;
}

interface Chunk {
  choices?: { delta?: { content?: string | null } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
  error?: { message?: string };
}

/**
 * POSTs a streamed chat completion (`stream: true` with `stream_options.include_usage`) to
 * `<base>/v1/chat/completions` over `agent`, and reads the stream to its end. Never rejects:
 * failures come back in `error`.
 */
export function streamChat(agent: Agent, base: URL, body: Record<string, unknown>): Promise<StreamedChat> {
  const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
  return new Promise((done) => {
    const started = performance.now();
    let ttftMs = NaN;
    let content = '';
    let promptTokens = 0;
    let cachedTokens = 0;
    let completionTokens = 0;
    let error: string | undefined;
    let status = 0;
    let replica: string | undefined;
    let finished = false;
    const finish = (why?: string): void => {
      if (finished) return;
      finished = true;
      done({ status, replica, ttftMs, e2eMs: performance.now() - started, content, promptTokens, cachedTokens, completionTokens, error: error ?? why });
    };
    const onEvent = (data: string): void => {
      if (data === '[DONE]') return;
      let chunk: Chunk;
      try {
        chunk = JSON.parse(data) as Chunk;
      } catch {
        error ??= `not JSON: ${data.slice(0, 200)}`;
        return;
      }
      if (chunk.error) error ??= `error event: ${chunk.error.message ?? data.slice(0, 200)}`;
      const delta = chunk.choices?.[0]?.delta?.content;
      if (delta) {
        if (content === '') ttftMs = performance.now() - started;
        content += delta;
      }
      if (chunk.usage) {
        promptTokens = chunk.usage.prompt_tokens ?? 0;
        completionTokens = chunk.usage.completion_tokens ?? 0;
        cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
    };
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        status = res.statusCode ?? 0;
        const header = res.headers['x-gpufleet-replica'];
        replica = Array.isArray(header) ? header[0] : header;
        res.setEncoding('utf8');
        if (status !== 200) {
          let text = '';
          res.on('data', (part: string) => (text += part));
          res.on('end', () => finish(`HTTP ${status}: ${text.slice(0, 300)}`));
        } else {
          const parser = new SseParser();
          res.on('data', (part: string) => parser.push(part).forEach(onEvent));
          res.on('end', () => {
            parser.end().forEach(onEvent);
            finish(content === '' ? 'the stream carried no content' : undefined);
          });
        }
        res.on('error', (err) => finish(`response: ${err.message}`));
        res.on('aborted', () => finish('response aborted'));
      },
    );
    req.on('error', (err) => finish(`request: ${err.message}`));
    req.end(payload);
  });
}
