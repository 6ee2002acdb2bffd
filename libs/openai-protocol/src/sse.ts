/**
 * Server-sent events as the OpenAI streaming API uses them: one `data: <json>` event per
 * chunk, a blank line after each, and `data: [DONE]` last.
 */

/** Response headers of a stream. `x-accel-buffering: no` keeps nginx-style proxies from buffering it. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** The event that ends every stream. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** One event carrying `payload` as JSON. */
export function sseEvent(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/**
 * Incremental SSE parser for clients (the router, tests): feed it text as it arrives, get the
 * `data` of every complete event. Multi-line data is joined with `\n`; comments (`:`), `event`,
 * `id` and `retry` lines are ignored; `\r\n` and `\n` both end lines.
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];

  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      let line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (this.data.length > 0) out.push(this.data.join('\n'));
        this.data = [];
      } else if (line.startsWith('data:')) {
        this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      }
    }
    return out;
  }

  /** The data of an event left unterminated at the end of the stream, if any. */
  end(): string[] {
    const rest = this.push('\n\n');
    this.buffer = '';
    return rest;
  }
}

/** Every event's data in a complete stream body. */
export function parseSse(body: string): string[] {
  const parser = new SseParser();
  return [...parser.push(body), ...parser.end()];
}

type Finish = { finishReason: string; stopReason: string | null } | null;

/**
 * Fast SSE encoding of the common stream chunks (no logprobs, no usage): the constant head of a
 * response's chunks is serialised once, each chunk adds only its choice. The text is identical,
 * byte for byte, to `sseEvent(chatCompletionChunk(…))` / `sseEvent(completion(…))`.
 */
export class StreamChunkEncoder {
  private readonly prefix: string;

  constructor(
    head: { id: string; created: number; model: string },
    readonly object: 'chat.completion.chunk' | 'text_completion',
  ) {
    this.prefix = `data: {"id":${JSON.stringify(head.id)},"object":"${object}","created":${head.created},"model":${JSON.stringify(head.model)},"choices":[`;
  }

  /** A chat choice's first chunk: role assistant, empty content. */
  chatRole(index: number): string {
    return `${this.prefix}{"index":${index},"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`;
  }

  chatContent(index: number, content: string, finish: Finish): string {
    const tail = finish ? `${JSON.stringify(finish.finishReason)},"stop_reason":${JSON.stringify(finish.stopReason)}` : 'null';
    return `${this.prefix}{"index":${index},"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":${tail}}]}\n\n`;
  }

  completionText(index: number, text: string, finish: Finish): string {
    const reasons = finish ? `${JSON.stringify(finish.finishReason)},"stop_reason":${JSON.stringify(finish.stopReason)}` : 'null,"stop_reason":null';
    return `${this.prefix}{"index":${index},"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${reasons}}]}\n\n`;
  }
}
