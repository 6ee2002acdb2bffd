import { SseEventTooLarge, SseRelay } from './sse-relay';

const content = (text: string) => `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":null}]}\n\n`;
const usageChunk = 'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}\n\n';
const done = 'data: [DONE]\n\n';

/** Feeds `text` cut at every `step` bytes; returns what the client got. */
function relay(text: string, forwardUsage: boolean, step: number): { out: string; relay: SseRelay } {
  const r = new SseRelay(forwardUsage);
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(r.push(bytes.subarray(i, i + step)));
  out.push(r.end());
  return { out: Buffer.concat(out).toString('utf8'), relay: r };
}

describe('SseRelay', () => {
  const stream = content('Hello') + content(' world') + usageChunk + done;

  it.each([1, 7, 64, 100_000])('reads usage and drops the usage chunk the client did not ask for (chunks of %i bytes)', (step) => {
    const { out, relay: r } = relay(stream, false, step);
    expect(out).toBe(content('Hello') + content(' world') + done);
    expect(r.usage).toEqual({ promptTokens: 12, cachedTokens: 8, completionTokens: 3 });
    expect(r.contentEvents).toBe(2);
  });

  it.each([1, 13, 100_000])('passes everything through, as it came, when the client asked for usage (chunks of %i bytes)', (step) => {
    const { out, relay: r } = relay(stream, true, step);
    expect(out).toBe(stream);
    expect(r.usage?.promptTokens).toBe(12);
  });

  it('understands CRLF framing', () => {
    const crlf = stream.replace(/\n/g, '\r\n');
    const { out, relay: r } = relay(crlf, false, 5);
    expect(out).toBe((content('Hello') + content(' world') + done).replace(/\n/g, '\r\n'));
    expect(r.usage?.completionTokens).toBe(3);
  });

  it('keeps the last continuous usage and passes chunks that carry choices', () => {
    const continuous = 'data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\n';
    const { out, relay: r } = relay(continuous + usageChunk + done, false, 10);
    expect(out).toBe(continuous + done);
    expect(r.usage?.completionTokens).toBe(3);
  });

  it('forwards an unterminated last event at the end, and a stream without usage', () => {
    const { out, relay: r } = relay(content('x') + 'data: [DONE]', false, 4);
    expect(out).toBe(content('x') + 'data: [DONE]');
    expect(r.usage).toBeUndefined();
    expect(r.contentEvents).toBe(1);
  });

  it('forwards a complete chunk without copying it', () => {
    const r = new SseRelay(false);
    const chunk = Buffer.from(content('a') + content('b'));
    expect(r.push(chunk)).toBe(chunk);
  });

  it('cuts an event that grows past the cap without ending, and holds nothing more than the cap', () => {
    const r = new SseRelay(false, 1024);
    expect(r.push(Buffer.from(content('ok')))).toEqual(Buffer.from(content('ok')));
    const endless = Buffer.alloc(256, 'x');
    expect(r.push(Buffer.from('data: {"choices":[{"delta":{"content":"'))).toHaveLength(0);
    let pushed = 0;
    expect(() => {
      for (;;) {
        r.push(endless);
        pushed += endless.length;
        if (pushed > 10_000) break;
      }
    }).toThrow(SseEventTooLarge);
    expect(pushed).toBeLessThanOrEqual(1024);
  });

  it('scans a long event split over many chunks once, CRLF and LF framing alike', () => {
    for (const eol of ['\n', '\r\n']) {
      const long = `data: {"choices":[{"delta":{"content":"${'y'.repeat(5000)}"}}]}${eol}${eol}`;
      const text = long + usageChunk.replace(/\n/g, eol) + done.replace(/\n/g, eol);
      for (const step of [1, 3, 4096]) {
        const { out, relay: r } = relay(text, false, step);
        expect(out).toBe(long + done.replace(/\n/g, eol));
        expect(r.usage?.completionTokens).toBe(3);
        expect(r.contentEvents).toBe(1);
      }
    }
  });
});
