/**
 * Passes an engine's SSE stream to the client chunk by chunk while reading it for usage: the
 * router asks every stream for `stream_options.include_usage`, reads the usage chunk, and drops
 * that chunk again when the client had not asked for it.
 *
 * Works on bytes: events are found by their blank line (`\n\n` or `\r\n\r\n`) with
 * Buffer.indexOf; only an event that mentions `"usage":{` is decoded and parsed. When the
 * client asked for usage, every chunk is forwarded as it came (the scan only observes); when
 * not, complete events are forwarded and a trailing partial event waits for its end.
 */
import { usageFromObject, type TokenUsage } from '../metering/usage';

const NEWLINE = 10;
const CR = 13;
const USAGE_OBJECT = Buffer.from('"usage":{');
const EMPTY_CHOICES = Buffer.from('"choices":[]');
const DONE = Buffer.from('[DONE]');
const MAX_DONE_EVENT_BYTES = 24;
const EMPTY = Buffer.alloc(0);

/** Thrown by push() when one event grows past the cap: the stream must be cut. */
export class SseEventTooLarge extends Error {
  constructor(readonly limitBytes: number) {
    super(`an SSE event grew past ${limitBytes} bytes without ending`);
    this.name = 'SseEventTooLarge';
  }
}

export class SseRelay {
  /** The last usage the stream reported. */
  usage: TokenUsage | undefined;
  /** Events other than usage-only and `[DONE]`: about one per generated token (the estimate when usage never comes). */
  contentEvents = 0;
  private pending: Buffer | undefined;
  /** Where the unfinished line of `pending` starts: the lines before it were scanned already (none blank). */
  private pendingLineStart = 0;

  /**
   * `forwardUsage`: the client asked for the usage chunk itself. `maxEventBytes`: the largest
   * event held while it is incomplete; past it push() throws SseEventTooLarge.
   */
  constructor(
    private readonly forwardUsage: boolean,
    private readonly maxEventBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** The bytes to send on for `chunk` (possibly empty). Throws SseEventTooLarge past the cap. */
  push(chunk: Buffer): Buffer {
    const data = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
    // An event that never ends is scanned once, not again with every chunk that extends it.
    let lineStart = this.pending === undefined ? 0 : this.pendingLineStart;
    this.pending = undefined;
    this.pendingLineStart = 0;
    let eventStart = 0;
    let out: Buffer[] | undefined;
    let forwardFrom = 0;
    // Where the next `"usage":{` is, searched again only once the events pass it: one native
    // search per chunk in the usual case, however many events the chunk holds.
    let nextUsage = -2;
    let nl: number;
    while ((nl = data.indexOf(NEWLINE, lineStart)) !== -1) {
      const lineEnd = nl > lineStart && data[nl - 1] === CR ? nl - 1 : nl;
      if (lineEnd === lineStart) {
        // A blank line ends the event [eventStart, nl].
        if (nextUsage !== -1 && nextUsage < eventStart) nextUsage = data.indexOf(USAGE_OBJECT, eventStart);
        if (nl > eventStart && !this.observe(data, eventStart, nl + 1, nextUsage !== -1 && nextUsage <= nl) && !this.forwardUsage) {
          (out ??= []).push(data.subarray(forwardFrom, eventStart));
          forwardFrom = nl + 1;
        }
        eventStart = nl + 1;
      }
      lineStart = nl + 1;
    }
    if (eventStart < data.length) {
      if (data.length - eventStart > this.maxEventBytes) throw new SseEventTooLarge(this.maxEventBytes);
      this.pending = data.subarray(eventStart);
      this.pendingLineStart = lineStart - eventStart;
    }
    if (this.forwardUsage) return chunk;
    const end = eventStart;
    if (out === undefined) return forwardFrom === 0 && end === data.length ? data : data.subarray(forwardFrom, end);
    out.push(data.subarray(forwardFrom, end));
    return Buffer.concat(out);
  }

  /** What is left at the end of the stream (an unterminated last event). */
  end(): Buffer {
    const rest = this.pending;
    this.pending = undefined;
    if (rest === undefined || rest.length === 0) return EMPTY;
    const keep = this.observe(rest, 0, rest.length, rest.indexOf(USAGE_OBJECT) !== -1);
    // With forwardUsage these bytes went out already, as they came.
    return keep && !this.forwardUsage ? rest : EMPTY;
  }

  /**
   * Reads the event in `data[start, end)`, which holds `"usage":{` when `mentionsUsage`; false
   * when it is the usage-only chunk (which the client may not get). This runs for every token of
   * every stream: indices rather than a subarray, no search unless the event may matter.
   */
  private observe(data: Buffer, start: number, end: number, mentionsUsage: boolean): boolean {
    if (!mentionsUsage) {
      // `data: [DONE]` and its blank line are 14 bytes (16 with CRs): only a short event can be it.
      if (end - start > MAX_DONE_EVENT_BYTES || data.subarray(start, end).indexOf(DONE) === -1) this.contentEvents++;
      return true;
    }
    const event = data.subarray(start, end);
    const text = event.toString('utf8');
    const dataAt = text.indexOf('data:');
    if (dataAt === -1) return true;
    try {
      const chunk = JSON.parse(text.slice(dataAt + 5)) as { usage?: unknown; choices?: unknown };
      const usage = usageFromObject(chunk.usage);
      if (usage !== undefined) this.usage = usage;
      const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0;
      if (!usageOnly) this.contentEvents++;
      return !usageOnly;
    } catch {
      // Not one JSON object (multi-line data, say): pass it on untouched.
      return event.indexOf(EMPTY_CHOICES) === -1;
    }
  }
}
