import type { RangeSink } from './batch-filler';

/** One HTTP response to a ranged GET, from whichever client fetched it (see range-fetch.ts). */
export interface SourceResponse {
  readonly status: number;
  /** a header's value (`name` in lower case); repeated headers joined by ", " */
  header(name: string): string | undefined;
  /**
   * Reads the next `want` body bytes into the sink, calling `onData` at every arrival (the stall
   * watchdog's clock). On a failure of the source, the bytes received are written to the sink
   * before it rejects, so a retry asks only for the rest; a failure of the sink rejects at once.
   */
  body(want: number, sink: RangeSink, onData: () => void): Promise<void>;
  /** Done with the response: a connection whose body was read to its end may serve another request; any other is closed. */
  close(): void;
  /** Fails the body being read (or the next one) with `err` and closes the connection. */
  abort(err: Error): void;
}

export interface SourceRequest {
  readonly url: URL;
  /** the caller's headers; Range and Accept-Encoding are added by the client */
  readonly headers: Readonly<Record<string, string>>;
  /** first byte, inclusive; last byte, inclusive */
  readonly range: readonly [number, number];
  /** aborting it fails the request (the caller's cancellation, or its stall watchdog) */
  readonly signal: AbortSignal;
}
